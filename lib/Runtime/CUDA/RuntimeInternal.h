//===- RuntimeInternal.h - What the runtime's files share ------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of CudaRuntime.cpp that the other files of
// libxent_cuda_runtime.so (CublasLt.cpp) use: error recording, the caller's
// stream and the context work for a stream runs in. Hidden symbols: nothing
// here is exported from the library.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H
#define XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H

#include <cuda.h>

namespace xent::runtime {

/// Records (and prints, unless reporting is off) a failure of `where` with
/// the CUresult-like `code`, as every mgpu* function does.
void recordFailure(const char *where, int code, const char *message);
/// True on success; otherwise records "<where>: <call> failed: ...".
bool checkResult(CUresult result, const char *where, const char *call);
/// The stream the calling thread set with xentSetStream, if any.
bool getCallerStream(CUstream *stream);
/// The context work on `stream` runs in (the stream's own, else the primary
/// context of the thread's default device); null after recording why.
CUcontext getStreamContext(CUstream stream, const char *where);

/// Device memory of the current context's device for use on `stream`: from
/// the caller's allocator (xentSetDeviceAllocator) when one is installed,
/// else null without recording anything (`fromCaller` false); with the
/// allocator, null after recording the failure.
void *allocateFromCaller(size_t bytes, CUstream stream, const char *where,
                         bool &fromCaller);
/// Whether an allocation failed on this thread since the last
/// xentClearLastError: the call's later device work is not enqueued.
bool allocationFailed();
/// Gives memory of allocateFromCaller back to the allocator that gave it,
/// stream-ordered on `stream`.
void releaseToCaller(void *ptr, CUstream stream);

/// Makes a context current for the scope (and restores the previous one).
class ContextScope {
public:
  ContextScope(CUcontext context, const char *where) {
    if (context)
      pushed =
          checkResult(cuCtxPushCurrent(context), where, "cuCtxPushCurrent");
  }
  ~ContextScope() {
    if (pushed)
      cuCtxPopCurrent(nullptr);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  explicit operator bool() const { return pushed; }

private:
  bool pushed = false;
};

} // namespace xent::runtime

#endif // XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H
