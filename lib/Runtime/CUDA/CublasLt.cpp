//===- CublasLt.cpp - GEMMs through cuBLASLt for lowered host code --------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The xentGemm* entry points that convert-xent-to-gpu's lowering of the
// linear cross-entropy ops calls (include/xent/Runtime/CUDA/XentCudaRuntime.h,
// docs/gpu-runtime.md): C = alpha · op(A) · op(B) + beta · C (+ bias) on
// row-major memrefs, f32 accumulation, through cuBLASLt (column-major) on
// the caller's stream.
//
// * cuBLASLt is opened at the first call (dlopen of the soname the toolkit
//   found at build time, or $XENT_CUBLASLT), so the runtime still loads on
//   machines without it; in a PyTorch process the copy PyTorch loaded is
//   the one found. A build without cuBLASLt reports an error at each call.
// * Per context: one cuBLASLt handle and the algorithm chosen for each shape.
//   The workspace of a product comes from the caller's allocator where one
//   is installed (xentSetDeviceAllocator: PyTorch's caching allocator under
//   xent.torch), taken for the product and given back stream-ordered after
//   it; otherwise one per context and stream, allocated at the first call
//   on that stream. Calls never synchronize the host on the caller's
//   stream, so they can be captured into a CUDA graph.
// * Without a caller's stream (xentSetStream) a call runs on the legacy
//   default stream and synchronizes it, as launches do in that mode.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "GemmPlan.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#ifdef XENT_HAVE_CUBLASLT
#include <cublasLt.h>
#include <dlfcn.h>
#endif

using namespace xent::runtime;

namespace {

enum class Element { F32, BF16, F16 };

int64_t elementBytes(Element type) { return type == Element::F32 ? 4 : 2; }

const char *elementName(Element type) {
  switch (type) {
  case Element::F32:
    return "f32";
  case Element::BF16:
    return "bf16";
  case Element::F16:
    return "f16";
  }
  return "?";
}

/// A rank-1 memref.
struct Vector {
  char *data;
  int64_t size, stride;
};

/// One GEMM request, as the entry points receive it.
struct Gemm {
  const char *where;
  Element ab, c;
  Matrix a, b, out;
  bool transA, transB;
  float alpha, beta;
  const Vector *bias; // f32 [N], or null
};

void fail(const char *where, int code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void fail(const char *where, int code, const char *format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  recordFailure(where, code, message);
}

/// The bias has one contiguous f32 per column of C.
bool checkBias(const Gemm &g, int64_t n) {
  if (!g.bias || (g.bias->size == n && (n <= 1 || g.bias->stride == 1)))
    return true;
  fail(g.where, CUDA_ERROR_INVALID_VALUE,
       "the bias has %ld elements of stride %ld; it needs %ld contiguous ones",
       static_cast<long>(g.bias->size), static_cast<long>(g.bias->stride),
       static_cast<long>(n));
  return false;
}

/// C = beta · C for a product over nothing (K = 0): zeros when beta is 0.
void scaleEmpty(const Gemm &g, CUstream stream) {
  if (g.bias) {
    fail(g.where, CUDA_ERROR_NOT_SUPPORTED,
         "a product over K = 0 with a bias is not supported");
    return;
  }
  if (g.beta == 1.0f)
    return;
  if (g.beta != 0.0f || g.out.colStride != 1) {
    fail(g.where, CUDA_ERROR_NOT_SUPPORTED,
         "a product over K = 0 supports beta 0 or 1 on a row-major C, got "
         "beta %g",
         static_cast<double>(g.beta));
    return;
  }
  auto dst = reinterpret_cast<CUdeviceptr>(g.out.data);
  int64_t bytes = elementBytes(g.c);
  size_t pitch = static_cast<size_t>(
      (g.out.rows <= 1 ? g.out.cols : g.out.rowStride) * bytes);
  size_t width = static_cast<size_t>(g.out.cols), height = g.out.rows;
  if (bytes == 4)
    checkResult(cuMemsetD2D32Async(dst, pitch, 0, width, height, stream),
                g.where, "cuMemsetD2D32Async");
  else
    checkResult(cuMemsetD2D16Async(dst, pitch, 0, width, height, stream),
                g.where, "cuMemsetD2D16Async");
}

#ifdef XENT_HAVE_CUBLASLT

//===----------------------------------------------------------------------===//
// cuBLASLt, opened at the first call
//===----------------------------------------------------------------------===//

struct CublasLt {
  std::string error; // why it could not be opened; empty when it was
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetStatusString) statusString = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) prefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) prefDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) prefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

const CublasLt &getCublasLt() {
  static CublasLt api;
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef XENT_CUBLASLT_LINKED
    // Linked at build time (XENT_LINK_CUBLASLT): the loader resolved it.
    api.create = &cublasLtCreate;
    api.statusString = &cublasLtGetStatusString;
    api.descCreate = &cublasLtMatmulDescCreate;
    api.descDestroy = &cublasLtMatmulDescDestroy;
    api.descSet = &cublasLtMatmulDescSetAttribute;
    api.layoutCreate = &cublasLtMatrixLayoutCreate;
    api.layoutDestroy = &cublasLtMatrixLayoutDestroy;
    api.prefCreate = &cublasLtMatmulPreferenceCreate;
    api.prefDestroy = &cublasLtMatmulPreferenceDestroy;
    api.prefSet = &cublasLtMatmulPreferenceSetAttribute;
    api.heuristic = &cublasLtMatmulAlgoGetHeuristic;
    api.matmul = &cublasLtMatmul;
    return;
#endif
    const char *candidates[] = {std::getenv("XENT_CUBLASLT"),
                                XENT_CUBLASLT_SONAME, XENT_CUBLASLT_PATH};
    void *lib = nullptr;
    std::string tried;
    for (const char *name : candidates) {
      if (!name || !*name)
        continue;
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib)
        break;
      const char *why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why ? why : name);
    }
    if (!lib) {
      api.error = "cannot open cuBLASLt (" + tried +
                  "); set XENT_CUBLASLT to the path of libcublasLt.so";
      return;
    }
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, symbol));
      if (!fn && api.error.empty())
        api.error = std::string("cuBLASLt has no symbol ") + symbol;
    };
    bind(api.create, "cublasLtCreate");
    bind(api.statusString, "cublasLtGetStatusString");
    bind(api.descCreate, "cublasLtMatmulDescCreate");
    bind(api.descDestroy, "cublasLtMatmulDescDestroy");
    bind(api.descSet, "cublasLtMatmulDescSetAttribute");
    bind(api.layoutCreate, "cublasLtMatrixLayoutCreate");
    bind(api.layoutDestroy, "cublasLtMatrixLayoutDestroy");
    bind(api.prefCreate, "cublasLtMatmulPreferenceCreate");
    bind(api.prefDestroy, "cublasLtMatmulPreferenceDestroy");
    bind(api.prefSet, "cublasLtMatmulPreferenceSetAttribute");
    bind(api.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(api.matmul, "cublasLtMatmul");
  });
  return api;
}

/// Records a failed cuBLASLt call; true on success.
bool checkCublas(cublasStatus_t status, const char *where, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  const char *text = getCublasLt().statusString
                         ? getCublasLt().statusString(status)
                         : "unknown status";
  fail(where, CUDA_ERROR_UNKNOWN, "%s failed: %s (%d)", call, text,
       static_cast<int>(status));
  return false;
}

cudaDataType_t getDataType(Element type) {
  switch (type) {
  case Element::F32:
    return CUDA_R_32F;
  case Element::BF16:
    return CUDA_R_16BF;
  case Element::F16:
    return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

/// What the algorithm choice depends on.
struct AlgoKey {
  int ab, c;
  bool transA, transB, bias;
  uint64_t m, n, k;
  int64_t lda, ldb, ldc;
  uint32_t alignA, alignB, alignC;
  auto tie() const {
    return std::tie(ab, c, transA, transB, bias, m, n, k, lda, ldb, ldc, alignA,
                    alignB, alignC);
  }
  bool operator<(const AlgoKey &o) const { return tie() < o.tie(); }
};

constexpr size_t kWorkspaceBytes = 32u << 20; // cuBLASLt's advice for sm_90

struct ContextState {
  cublasLtHandle_t handle = nullptr;
  std::map<CUstream, CUdeviceptr> workspaces;
  /// The heuristic's choice per shape; none when it had no algorithm.
  std::map<AlgoKey, std::optional<cublasLtMatmulAlgo_t>> algos;
  /// f32 ones for the bias without the epilogue (kept: rarely regrown).
  CUdeviceptr ones = 0;
  size_t onesCount = 0;
};

std::mutex stateMutex;
std::map<CUcontext, ContextState> states;

/// The largest power of two (at most 256) that divides `p`'s address.
uint32_t getAlignment(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment)
    alignment /= 2;
  return alignment;
}

/// Owns the cuBLASLt descriptors of one call.
struct Descriptors {
  const CublasLt &api;
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref)
      api.prefDestroy(pref);
    for (cublasLtMatrixLayout_t layout : {a, b, c})
      if (layout)
        api.layoutDestroy(layout);
    if (matmul)
      api.descDestroy(matmul);
  }
};

enum class Matmul { Done, Failed, NoAlgorithm };

/// One cublasLtMatmul of `p` (with g's bias as the epilogue when
/// `epilogue`). NoAlgorithm, recorded only without the epilogue (the caller
/// falls back otherwise), when the heuristic has none for the shape.
Matmul runMatmul(const Gemm &g, const GemmPlan &p, CUstream stream,
                 bool epilogue) {
  const CublasLt &api = getCublasLt();
  if (!api.error.empty()) {
    fail(g.where, CUDA_ERROR_NOT_FOUND, "%s", api.error.c_str());
    return Matmul::Failed;
  }
  CUcontext context = nullptr;
  if (!checkResult(cuCtxGetCurrent(&context), g.where, "cuCtxGetCurrent"))
    return Matmul::Failed;
  AlgoKey key{static_cast<int>(g.ab),
              static_cast<int>(g.c),
              p.transA,
              p.transB,
              epilogue,
              p.m(),
              p.n(),
              p.k(),
              p.a.ld,
              p.b.ld,
              p.c.ld,
              getAlignment(p.aData),
              getAlignment(p.bData),
              getAlignment(g.out.data)};

  Descriptors d{api};
  cublasOperation_t opA = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cudaDataType_t abType = getDataType(g.ab), cType = getDataType(g.c);
  if (!checkCublas(api.descCreate(&d.matmul, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                   g.where, "cublasLtMatmulDescCreate") ||
      !checkCublas(
          api.descSet(d.matmul, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
          g.where, "cublasLtMatmulDescSetAttribute(TRANSA)") ||
      !checkCublas(
          api.descSet(d.matmul, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
          g.where, "cublasLtMatmulDescSetAttribute(TRANSB)"))
    return Matmul::Failed;
  if (epilogue) {
    cublasLtEpilogue_t biasEpilogue = CUBLASLT_EPILOGUE_BIAS;
    const void *bias = g.bias->data;
    cudaDataType_t biasType = CUDA_R_32F;
    if (!checkCublas(api.descSet(d.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 &biasEpilogue, sizeof(biasEpilogue)),
                     g.where, "cublasLtMatmulDescSetAttribute(EPILOGUE)") ||
        !checkCublas(api.descSet(d.matmul, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                 &bias, sizeof(bias)),
                     g.where, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)") ||
        !checkCublas(api.descSet(d.matmul, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                 &biasType, sizeof(biasType)),
                     g.where, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)"))
      return Matmul::Failed;
  }
  if (!checkCublas(api.layoutCreate(&d.a, abType, p.a.rows, p.a.cols, p.a.ld),
                   g.where, "cublasLtMatrixLayoutCreate(A)") ||
      !checkCublas(api.layoutCreate(&d.b, abType, p.b.rows, p.b.cols, p.b.ld),
                   g.where, "cublasLtMatrixLayoutCreate(B)") ||
      !checkCublas(api.layoutCreate(&d.c, cType, p.m(), p.n(), p.c.ld), g.where,
                   "cublasLtMatrixLayoutCreate(C)"))
    return Matmul::Failed;

  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;
  std::optional<cublasLtMatmulAlgo_t> algo;
  bool haveAlgo = false;
  {
    std::lock_guard<std::mutex> lock(stateMutex);
    ContextState &state = states[context];
    if (!state.handle &&
        !checkCublas(api.create(&state.handle), g.where, "cublasLtCreate"))
      return Matmul::Failed;
    handle = state.handle;
    auto it = state.algos.find(key);
    if (it != state.algos.end()) {
      algo = it->second;
      haveAlgo = true;
    }
  }
  if (!haveAlgo) {
    size_t wsBytes = kWorkspaceBytes;
    if (!checkCublas(api.prefCreate(&d.pref), g.where,
                     "cublasLtMatmulPreferenceCreate") ||
        !checkCublas(api.prefSet(d.pref,
                                 CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                 &wsBytes, sizeof(wsBytes)),
                     g.where, "cublasLtMatmulPreferenceSetAttribute"))
      return Matmul::Failed;
    std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignA},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignB},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignC}};
    for (auto &[attribute, value] : alignments)
      if (!checkCublas(api.prefSet(d.pref, attribute, &value, sizeof(value)),
                       g.where, "cublasLtMatmulPreferenceSetAttribute"))
        return Matmul::Failed;
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    cublasStatus_t status = api.heuristic(handle, d.matmul, d.a, d.b, d.c, d.c,
                                          d.pref, 1, &result, &found);
    // Not supported (as with an epilogue it cannot apply here) is no
    // algorithm: the caller may fall back.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED)
      found = 0;
    else if (!checkCublas(status, g.where, "cublasLtMatmulAlgoGetHeuristic"))
      return Matmul::Failed;
    if (found > 0)
      algo = result.algo;
    std::lock_guard<std::mutex> lock(stateMutex);
    states[context].algos.emplace(key, algo);
  }
  if (!algo) {
    if (epilogue)
      return Matmul::NoAlgorithm;
    fail(g.where, CUDA_ERROR_NOT_SUPPORTED,
         "cuBLASLt has no algorithm for %s x %s -> %s, m %lu n %lu k %lu",
         elementName(g.ab), elementName(g.ab), elementName(g.c),
         static_cast<unsigned long>(p.m()), static_cast<unsigned long>(p.n()),
         static_cast<unsigned long>(p.k()));
    return Matmul::NoAlgorithm;
  }
  // The workspace: the caller's for this product when the caller installed
  // an allocator (given back stream-ordered after it), else one kept per
  // context and stream.
  bool fromCaller = false;
  void *callerWorkspace =
      allocateFromCaller(kWorkspaceBytes, stream, g.where, fromCaller);
  if (fromCaller) {
    if (!callerWorkspace)
      return Matmul::Failed;
    workspace = reinterpret_cast<CUdeviceptr>(callerWorkspace);
  } else {
    std::lock_guard<std::mutex> lock(stateMutex);
    CUdeviceptr &ws = states[context].workspaces[stream];
    if (!ws && !checkResult(cuMemAlloc(&ws, kWorkspaceBytes), g.where,
                            "cuMemAlloc (cuBLASLt workspace)")) {
      states[context].workspaces.erase(stream);
      return Matmul::Failed;
    }
    workspace = ws;
  }
  bool ok = checkCublas(
      api.matmul(handle, d.matmul, &g.alpha, p.aData, d.a, p.bData, d.b,
                 &g.beta, g.out.data, d.c, g.out.data, d.c, &*algo,
                 reinterpret_cast<void *>(workspace), kWorkspaceBytes, stream),
      g.where, "cublasLtMatmul");
  if (callerWorkspace)
    releaseToCaller(callerWorkspace, stream);
  return ok ? Matmul::Done : Matmul::Failed;
}

/// At least `count` f32 ones in the current context (allocated and filled
/// synchronously when it grows: once in practice).
CUdeviceptr getOnes(size_t count, const char *where) {
  CUcontext context = nullptr;
  if (!checkResult(cuCtxGetCurrent(&context), where, "cuCtxGetCurrent"))
    return 0;
  std::lock_guard<std::mutex> lock(stateMutex);
  ContextState &state = states[context];
  if (state.onesCount >= count)
    return state.ones;
  size_t grown = std::max<size_t>(count, 4096);
  CUdeviceptr ones = 0;
  if (!checkResult(cuMemAlloc(&ones, grown * 4), where, "cuMemAlloc (ones)"))
    return 0;
  if (!checkResult(cuMemsetD32(ones, 0x3F800000u, grown), where,
                   "cuMemsetD32 (ones)"))
    return 0;
  // The previous buffer may still be read by queued work: it is kept.
  state.ones = ones;
  state.onesCount = grown;
  return ones;
}

/// The product, with g's bias: cuBLASLt's bias epilogue, or, where it has
/// no algorithm with it, the product and then C += ones(M x 1) · bias(1 x N).
void runCublas(const Gemm &g, const GemmPlan &p, CUstream stream) {
  if (!g.bias) {
    runMatmul(g, p, stream, /*epilogue=*/false);
    return;
  }
  Matmul done = runMatmul(g, p, stream, /*epilogue=*/true);
  if (done != Matmul::NoAlgorithm)
    return;
  if (runMatmul(g, p, stream, /*epilogue=*/false) != Matmul::Done)
    return;
  CUdeviceptr ones = getOnes(static_cast<size_t>(g.out.rows), g.where);
  if (!ones)
    return;
  Matrix onesColumn{reinterpret_cast<char *>(ones), g.out.rows, 1, 1, 1};
  Matrix biasRow{g.bias->data, 1, g.out.cols, g.out.cols, 1};
  Gemm update{g.where, Element::F32, Element::F32,     onesColumn,
              biasRow, g.out,        /*transA=*/false, /*transB=*/false,
              1.0f,    1.0f,         nullptr};
  GemmPlan plan;
  if (planGemm(update.a, false, update.b, false, update.out, plan) !=
      GemmPlanError::None) {
    fail(g.where, CUDA_ERROR_INVALID_VALUE, "cannot add the bias to C");
    return;
  }
  runMatmul(update, plan, stream, /*epilogue=*/false);
}

#endif // XENT_HAVE_CUBLASLT

/// The row-major product through cuBLASLt's column-major one (GemmPlan.h).
void gemm(const Gemm &g) {
  if (allocationFailed())
    return; // its operands may be the buffer that does not exist
  GemmPlan plan;
  GemmPlanError error = planGemm(g.a, g.transA, g.b, g.transB, g.out, plan);
  if (error == GemmPlanError::Shapes) {
    int64_t depthB = g.transB ? g.b.cols : g.b.rows;
    fail(g.where, CUDA_ERROR_INVALID_VALUE,
         "op(A) is %ldx%ld, op(B) %ldx%ld and C %ldx%ld: not a product",
         static_cast<long>(plan.rows), static_cast<long>(plan.depth),
         static_cast<long>(depthB), static_cast<long>(plan.cols),
         static_cast<long>(g.out.rows), static_cast<long>(g.out.cols));
    return;
  }
  if (error != GemmPlanError::None) {
    bool isC = error == GemmPlanError::C;
    const Matrix &mat = error == GemmPlanError::A   ? g.a
                        : error == GemmPlanError::B ? g.b
                                                    : g.out;
    fail(g.where, CUDA_ERROR_INVALID_VALUE,
         "%s (%ldx%ld, strides [%ld, %ld]) is not a matrix cuBLASLt can %s",
         error == GemmPlanError::A ? "A"
         : isC                     ? "C"
                                   : "B",
         static_cast<long>(mat.rows), static_cast<long>(mat.cols),
         static_cast<long>(mat.rowStride), static_cast<long>(mat.colStride),
         isC ? "write (it needs unit column stride)"
             : "read (it needs a unit stride)");
    return;
  }
  if (!checkBias(g, plan.cols))
    return;
  CUstream stream = nullptr;
  bool callerStream = getCallerStream(&stream);
  ContextScope scope(getStreamContext(stream, g.where), g.where);
  if (!scope || plan.rows == 0 || plan.cols == 0)
    return;
  if (plan.depth == 0) {
    scaleEmpty(g, stream);
  } else {
#ifdef XENT_HAVE_CUBLASLT
    runCublas(g, plan, stream);
#else
    fail(g.where, CUDA_ERROR_NOT_SUPPORTED,
         "xent's CUDA runtime was built without cuBLASLt (CMake found no "
         "CUDA::cublasLt), which the linear cross-entropy GEMMs need");
    return;
#endif
  }
  if (!callerStream)
    checkResult(cuStreamSynchronize(stream), g.where, "cuStreamSynchronize");
}

Matrix matrix(void *aligned, int64_t offset, int64_t rows, int64_t cols,
              int64_t rowStride, int64_t colStride, Element type) {
  return {static_cast<char *>(aligned) + offset * elementBytes(type), rows,
          cols, rowStride, colStride};
}

} // namespace

// The entry points: each memref argument expanded as MLIR passes it
// (allocated, aligned, offset, sizes, strides).
#define XENT_MATRIX_PARAMS(x)                                                  \
  void * /*allocated*/, void *x##Aligned, int64_t x##Offset, int64_t x##Rows,  \
      int64_t x##Cols, int64_t x##RowStride, int64_t x##ColStride
#define XENT_MATRIX(x, type)                                                   \
  matrix(x##Aligned, x##Offset, x##Rows, x##Cols, x##RowStride, x##ColStride,  \
         type)

#define XENT_DEFINE_GEMM(AB, C, abType, cType)                                 \
  XENT_EXPORT void xentGemm_##AB##_##C(                                        \
      XENT_MATRIX_PARAMS(a), XENT_MATRIX_PARAMS(b), XENT_MATRIX_PARAMS(c),     \
      int32_t transA, int32_t transB, float alpha, float beta) {               \
    gemm({"xentGemm_" #AB "_" #C, abType, cType, XENT_MATRIX(a, abType),       \
          XENT_MATRIX(b, abType), XENT_MATRIX(c, cType), transA != 0,          \
          transB != 0, alpha, beta, nullptr});                                 \
  }

#define XENT_DEFINE_GEMM_BIAS(AB, abType)                                      \
  XENT_EXPORT void xentGemmBias_##AB##_f32(                                    \
      XENT_MATRIX_PARAMS(a), XENT_MATRIX_PARAMS(b), void * /*allocated*/,      \
      void *biasAligned, int64_t biasOffset, int64_t biasSize,                 \
      int64_t biasStride, XENT_MATRIX_PARAMS(c), int32_t transA,               \
      int32_t transB, float alpha, float beta) {                               \
    Vector bias{static_cast<char *>(biasAligned) + biasOffset * 4, biasSize,   \
                biasStride};                                                   \
    gemm({"xentGemmBias_" #AB "_f32", abType, Element::F32,                    \
          XENT_MATRIX(a, abType), XENT_MATRIX(b, abType),                      \
          XENT_MATRIX(c, Element::F32), transA != 0, transB != 0, alpha, beta, \
          &bias});                                                             \
  }

XENT_DEFINE_GEMM(f32, f32, Element::F32, Element::F32)
XENT_DEFINE_GEMM(bf16, f32, Element::BF16, Element::F32)
XENT_DEFINE_GEMM(bf16, bf16, Element::BF16, Element::BF16)
XENT_DEFINE_GEMM(f16, f32, Element::F16, Element::F32)
XENT_DEFINE_GEMM(f16, f16, Element::F16, Element::F16)
XENT_DEFINE_GEMM_BIAS(f32, Element::F32)
XENT_DEFINE_GEMM_BIAS(bf16, Element::BF16)
XENT_DEFINE_GEMM_BIAS(f16, Element::F16)

XENT_EXPORT int xentHasCublasLt(void) {
#ifdef XENT_HAVE_CUBLASLT
  return getCublasLt().error.empty() ? 1 : 0;
#else
  return 0;
#endif
}
