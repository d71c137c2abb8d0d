/*===- runner.c - Runs the GPU integration tests' host functions ---------===//
 *
 * Part of the xent project.
 *
 *===----------------------------------------------------------------------===//
 *
 * usage: runner <kernels.so> vadd|rowsum|hostops
 *
 * dlopen()s a module compiled by the tests of test/Integration/GPU (which
 * pulls in libxent_cuda_runtime.so), fills inputs through the runtime's own
 * mgpuMemAlloc/mgpuMemcpy, calls the module's C interface, copies results
 * back and prints a line per check. Exit status 1 on a wrong result or a
 * recorded CUDA error. Also the program that compute-sanitizer runs on the
 * GPU machine (docs/gpu-runtime.md).
 *
 *===----------------------------------------------------------------------===*/

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} MemRef1D;
typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} MemRef2D;

static void *library;
static void *(*memAlloc)(uint64_t, void *, int8_t);
static void (*memFree)(void *, void *);
static void (*memcpyAsync)(void *, void *, size_t, void *);
static int (*synchronize)(void *);
static int (*lastError)(void);
static const char *(*errorLog)(void);

static void *symbol(const char *name) {
  void *s = dlsym(library, name);
  if (!s) {
    fprintf(stderr, "runner: %s not found: %s\n", name, dlerror());
    exit(2);
  }
  return s;
}

/* Uploads on the legacy stream and waits: the host code launches on streams
 * of its own, which are not ordered after the legacy stream. */
static void *toDevice(const void *host, size_t bytes) {
  void *d = memAlloc(bytes, NULL, 0);
  memcpyAsync(d, (void *)host, bytes, NULL);
  synchronize(NULL);
  return d;
}

static void toHost(void *host, void *device, size_t bytes) {
  memcpyAsync(host, device, bytes, NULL);
  synchronize(NULL);
}

static MemRef1D memref1(void *p, int64_t n) {
  MemRef1D m = {p, p, 0, {n}, {1}};
  return m;
}

static int checkErrors(const char *what) {
  if (!lastError())
    return 0;
  printf("%s: CUDA error %d\n%s\n", what, lastError(), errorLog());
  return 1;
}

static int runVadd(void) {
  void (*vadd)(MemRef1D *, MemRef1D *, MemRef1D *) =
      symbol("_mlir_ciface_vadd");
  int failures = 0;
  const int64_t sizes[] = {1000, 1, 0, 1 << 20};
  for (int s = 0; s < 4; ++s) {
    int64_t n = sizes[s];
    size_t bytes = n * sizeof(float);
    float *a = malloc(bytes + 4), *b = malloc(bytes + 4), *c = malloc(bytes + 4);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = (float)i * 0.5f;
      b[i] = 3.0f - (float)(i % 7);
      c[i] = -1.0f;
    }
    void *da = toDevice(a, bytes), *db = toDevice(b, bytes);
    void *dc = toDevice(c, bytes);
    /* n = 0: no buffers (mgpuMemAlloc returns null); nothing is launched. */
    MemRef1D ma = memref1(da, n), mb = memref1(db, n), mc = memref1(dc, n);
    vadd(&ma, &mb, &mc);
    toHost(c, dc, bytes);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      wrong += c[i] != a[i] + b[i];
    printf("vadd n=%ld: %ld wrong\n", (long)n, (long)wrong);
    failures += wrong != 0;
    memFree(da, NULL);
    memFree(db, NULL);
    memFree(dc, NULL);
    free(a);
    free(b);
    free(c);
  }
  return failures + checkErrors("vadd");
}

static int runRowsum(void) {
  const char *names[] = {"_mlir_ciface_rowsum", "_mlir_ciface_rowsum_big"};
  int failures = 0;
  const int64_t rows = 37, cols = 1001;
  size_t bytes = rows * cols * sizeof(float);
  float *x = malloc(bytes), out[37];
  for (int64_t i = 0; i < rows * cols; ++i)
    x[i] = (float)((i * 7919) % 13) - 6.0f;
  void *dx = toDevice(x, bytes);
  void *dout = memAlloc(sizeof(out), NULL, 0);
  for (int k = 0; k < 2; ++k) {
    void (*rowsum)(MemRef2D *, MemRef1D *) = symbol(names[k]);
    MemRef2D mx = {dx, dx, 0, {rows, cols}, {cols, 1}};
    MemRef1D mo = memref1(dout, rows);
    rowsum(&mx, &mo);
    toHost(out, dout, sizeof(out));
    int wrong = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int64_t c = 0; c < cols; ++c)
        ref += x[r * cols + c];
      wrong += fabs(out[r] - ref) > 1e-3;
    }
    printf("%s: %d of %ld rows wrong\n", names[k] + 13, wrong, (long)rows);
    failures += wrong != 0;
  }
  memFree(dx, NULL);
  memFree(dout, NULL);
  free(x);
  return failures + checkErrors("rowsum");
}

static int runHostOps(void) {
  void (*hostOps)(MemRef1D *, MemRef1D *) = symbol("_mlir_ciface_host_ops");
  enum { N = 256 };
  /* Page-aligned: each buffer is page-locked on its own. */
  float *out = aligned_alloc(4096, 4096);
  uint16_t *half = aligned_alloc(4096, 4096);
  memset(half, 0, 4096);
  for (int i = 0; i < N; ++i)
    out[i] = -1.0f;
  MemRef1D mo = memref1(out, N), mh = memref1(half, N);
  hostOps(&mo, &mh);
  int wrong = 0;
  for (int i = 0; i < N; ++i)
    wrong += out[i] != 2.0f * (float)i + 1.0f || half[i] != 0x3C00;
  printf("host_ops: %d wrong\n", wrong);
  free(out);
  free(half);
  return (wrong != 0) + checkErrors("host_ops");
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <kernels.so> vadd|rowsum|hostops\n", argv[0]);
    return 2;
  }
  library = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    fprintf(stderr, "runner: %s\n", dlerror());
    return 2;
  }
  memAlloc = symbol("mgpuMemAlloc");
  memFree = symbol("mgpuMemFree");
  memcpyAsync = symbol("mgpuMemcpy");
  synchronize = symbol("xentStreamSynchronize");
  lastError = symbol("xentGetLastError");
  errorLog = symbol("xentGetErrorLog");
  const char *(*version)(void) = symbol("xentRuntimeVersion");
  printf("%s\n", version());
  int failures;
  if (!strcmp(argv[2], "vadd"))
    failures = runVadd();
  else if (!strcmp(argv[2], "rowsum"))
    failures = runRowsum();
  else if (!strcmp(argv[2], "hostops"))
    failures = runHostOps();
  else {
    fprintf(stderr, "runner: unknown test %s\n", argv[2]);
    return 2;
  }
  printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
