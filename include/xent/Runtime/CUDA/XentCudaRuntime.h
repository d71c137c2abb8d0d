/*===- XentCudaRuntime.h - xent's mgpu* CUDA runtime: host C API --*- C -*-===//
 *
 * Part of the xent project.
 *
 *===----------------------------------------------------------------------===//
 *
 * libxent_cuda_runtime.so implements the mgpu* functions that MLIR 22's
 * `gpu-to-llvm` host code and the `gpu.binary` LLVM IR translation call
 * (module load, kernel launch, streams, events, memory), over the CUDA
 * driver API, in the primary context of the device, so that it shares
 * PyTorch's context. This header declares them, and the xent* extensions a
 * host program (or python/src/xent/runtime/gpu.py through ctypes) uses to launch on its
 * own stream and to read errors. docs/gpu-runtime.md describes the whole.
 *
 * Handles are opaque here: a `void *` stream is a CUstream, an event a
 * CUevent, a function a CUfunction; the module handle returned by
 * mgpuModuleLoad is the runtime's own (the CUDA module is loaded lazily, per
 * context, at the first mgpuModuleGetFunction).
 *
 * Nothing here aborts the process: a failing CUDA call prints
 * "xent-cuda-runtime: <function>: <CUDA call> failed: <name>: <string>" to
 * stderr (unless XENT_CUDA_QUIET=1 or xentSetErrorReporting(0)) and is kept
 * as the calling thread's last error.
 *
 *===----------------------------------------------------------------------===*/

#ifndef XENT_RUNTIME_CUDA_XENTCUDARUNTIME_H
#define XENT_RUNTIME_CUDA_XENTCUDARUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * xent extensions
 *===----------------------------------------------------------------------===*/

/* Launch on the caller's stream (per thread). While a stream is set,
 * mgpuStreamCreate returns it instead of creating one, and mgpuStreamDestroy
 * and mgpuStreamSynchronize on it do nothing: the host code generated for a
 * synchronous gpu.launch_func then enqueues its kernel on `stream` and
 * returns without waiting, so PyTorch can call it on
 * torch.cuda.current_stream() with no device-to-host synchronization.
 * `stream` may be 0 (the legacy default stream of the current device, see
 * mgpuSetDefaultDevice). Host code that reads device results on the host
 * (gpu.memcpy to host followed by gpu.wait) must not run with a stream set. */
void xentSetStream(void *stream);
/* Back to the standalone behaviour: a fresh stream per launch, synchronized
 * and destroyed after it. */
void xentResetStream(void);
/* 1 and *stream set when the calling thread has a stream set, else 0. */
int xentGetStream(void **stream);

/* After a failed device allocation (mgpuMemAlloc, a GEMM's workspace) the
 * calling thread enqueues no launch, GEMM, copy or fill until
 * xentClearLastError: the host code goes on to free what it allocated, but
 * never hands a kernel the buffer that does not exist. */
/* CUresult of the calling thread's last failure (0: none since the last
 * xentClearLastError), and its message. The message stays valid until the
 * next failure on the thread. */
int xentGetLastError(void);
const char *xentGetLastErrorMessage(void);
/* Every failure message since the last xentClearLastError, one a line
 * (truncated at 4 KiB): the first is usually the cause. */
const char *xentGetErrorLog(void);
void xentClearLastError(void);
/* Failures on all threads since the library was loaded. */
uint64_t xentGetErrorCount(void);
/* 1 (default, unless XENT_CUDA_QUIET=1): print failures to stderr; 0: only
 * record them. Returns the previous setting. */
int xentSetErrorReporting(int enabled);

/* Number of CUDA devices; 0 when there is no driver or no device (the
 * failure is recorded, not printed). */
int xentDeviceCount(void);
/* cuStreamSynchronize(stream) in the stream's context (0: the legacy stream
 * of the default device); returns the CUresult. Meant for tests and error
 * checks: the launch path never synchronizes a caller's stream. */
int xentStreamSynchronize(void *stream);
/* "xent-cuda-runtime <version> (CUDA <toolkit version>)". */
const char *xentRuntimeVersion(void);

/* The caller's device allocator. While one is installed, the device memory
 * a call needs comes from it: mgpuMemAlloc without host sharing (what the
 * generated host code allocates: the kernels' scratch, the linear ops'
 * chunk logits and accumulators) and the cuBLASLt workspace of each GEMM.
 * `allocate(bytes, device, stream, userData)` returns `bytes` of device
 * memory of CUDA device `device` for use on `stream`, or null when it cannot
 * (the failure is recorded as CUDA_ERROR_OUT_OF_MEMORY); `release(ptr,
 * device, stream, userData)` takes it back, stream-ordered: work already
 * queued on `stream` may still use it, as with PyTorch's caching allocator
 * (raw_alloc_with_stream / raw_delete). Memory goes back through the
 * allocator that gave it, also after another is installed. Null functions
 * return to the driver's stream-ordered pool (cuMemAllocAsync). Neither
 * function may call back into this runtime. */
typedef void *(*XentDeviceAllocateFn)(uint64_t bytes, int32_t device,
                                      void *stream, void *userData);
typedef void (*XentDeviceReleaseFn)(void *ptr, int32_t device, void *stream,
                                    void *userData);
void xentSetDeviceAllocator(XentDeviceAllocateFn allocate,
                            XentDeviceReleaseFn release, void *userData);
/* 1 while a caller's allocator is installed, else 0. */
int xentHasDeviceAllocator(void);

/*===----------------------------------------------------------------------===
 * GEMMs of the lowered linear cross-entropy ops (cuBLASLt)
 *===----------------------------------------------------------------------===*/

/* C = alpha * op(A) * op(B) + beta * C, with op(X) = X, or its transpose when
 * transX != 0, on rank-2 memrefs indexed row-major (sizes [rows, cols], any
 * strides of which one is 1 for A and B, the column stride 1 for C). A and B
 * have the first type of the name, C the second; products accumulate in
 * f32. xentGemmBias_* adds bias[j] (f32, contiguous, one per column of C) to
 * every row. Each memref comes expanded as MLIR passes it to an external
 * function: allocated pointer, aligned pointer, offset, sizes, strides.
 * The call runs on the caller's stream (xentSetStream) and returns at once,
 * else on the legacy default stream, synchronized. K = 0 makes C zero
 * (beta = 0) or leaves it (beta = 1). Failures are recorded like the mgpu*
 * ones; a runtime built without cuBLASLt records one at each call. */
#define XENT_GEMM_MATRIX(x)                                                    \
  void *x##Allocated, void *x##Aligned, int64_t x##Offset, int64_t x##Rows,    \
      int64_t x##Cols, int64_t x##RowStride, int64_t x##ColStride
#define XENT_GEMM_DECLARE(name)                                                \
  void name(XENT_GEMM_MATRIX(a), XENT_GEMM_MATRIX(b), XENT_GEMM_MATRIX(c),     \
            int32_t transA, int32_t transB, float alpha, float beta)
#define XENT_GEMM_BIAS_DECLARE(name)                                           \
  void name(XENT_GEMM_MATRIX(a), XENT_GEMM_MATRIX(b), void *biasAllocated,     \
            void *biasAligned, int64_t biasOffset, int64_t biasSize,           \
            int64_t biasStride, XENT_GEMM_MATRIX(c), int32_t transA,           \
            int32_t transB, float alpha, float beta)
XENT_GEMM_DECLARE(xentGemm_f32_f32);
XENT_GEMM_DECLARE(xentGemm_bf16_f32);
XENT_GEMM_DECLARE(xentGemm_bf16_bf16);
XENT_GEMM_DECLARE(xentGemm_f16_f32);
XENT_GEMM_DECLARE(xentGemm_f16_f16);
XENT_GEMM_BIAS_DECLARE(xentGemmBias_f32_f32);
XENT_GEMM_BIAS_DECLARE(xentGemmBias_bf16_f32);
XENT_GEMM_BIAS_DECLARE(xentGemmBias_f16_f32);
#undef XENT_GEMM_DECLARE
#undef XENT_GEMM_BIAS_DECLARE
#undef XENT_GEMM_MATRIX
/* 1 when cuBLASLt is compiled in and opens (the GEMMs can run), else 0. */
int xentHasCublasLt(void);

/*===----------------------------------------------------------------------===
 * mgpu* ABI of MLIR 22 (gpu-to-llvm, gpu.binary translation, nvgpu TMA)
 *===----------------------------------------------------------------------===*/

void *mgpuModuleLoad(void *data, size_t sizeBytes);
void *mgpuModuleLoadJIT(void *ptx, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemBytes, void *stream,
                      void **params, void **extra, size_t paramsCount);
void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t sharedMemBytes, void *stream,
                             void **params, void **extra);

void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);

void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, int8_t isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream);
void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream);

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes);

void mgpuSetDefaultDevice(int32_t device);

void *mgpuTensorMapEncodeTiledMemref(int64_t rank, void *descriptor,
                                     int64_t dataType, int64_t interleave,
                                     int64_t swizzle, int64_t l2Promotion,
                                     int64_t oobFill, int64_t *boxDims);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* XENT_RUNTIME_CUDA_XENTCUDARUNTIME_H */
