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
