//===- RuntimeInternal.h - What the runtime's files share ------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What the files of libxent_cuda_runtime.so share: XENT_EXPORT, which marks
// the C functions the library exports, and hidden symbols, none of which is
// exported.
//
// * xent::runtime: what CublasLt.cpp uses of the files over the CUDA driver
//   API: error recording, the caller's stream and allocator, and the context
//   work for a stream runs in.
// * xent::runtime::detail: what those files (Errors.cpp, Context.cpp,
//   ModuleLaunch.cpp, Memory.cpp, TensorMaps.cpp) share among themselves:
//   the thread's state, error recording, devices and contexts.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H
#define XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

/// Marks the library's C functions (XentCudaRuntime.h): the only symbols it
/// exports.
#define XENT_EXPORT extern "C" __attribute__((visibility("default")))

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

namespace xent::runtime::detail {

//===----------------------------------------------------------------------===//
// Errors and the thread's state (Errors.cpp)
//===----------------------------------------------------------------------===//

/// What the runtime keeps per thread: the errors since the last
/// xentClearLastError, the caller's stream (xentSetStream), the default
/// device (mgpuSetDefaultDevice) and whether an allocation failed.
struct ThreadState {
  int lastError = 0;
  char lastMessage[1024] = {0};
  // Every message since the last xentClearLastError, one a line; the first
  // failure of a call is usually its cause, the last its consequence.
  char log[4096] = {0};
  size_t logLength = 0;
  bool streamSet = false;
  CUstream stream = nullptr;
  int defaultDevice = 0;
  // An allocation failed since the last xentClearLastError: the call's
  // later launches, GEMMs, copies and fills are not enqueued (they would
  // use the buffer that does not exist).
  bool allocationFailed = false;
};

/// The calling thread's state. A function rather than an extern
/// thread_local: GCC and Clang reach another file's thread_local through a
/// wrapper referencing its initialization function, which GCC makes a
/// dynamic symbol of the library and Clang cannot link into a shared object
/// at all when it is hidden.
ThreadState &threadState() __attribute__((visibility("hidden")));
/// Whether failures are printed to stderr (XENT_CUDA_QUIET,
/// xentSetErrorReporting).
extern std::atomic<int> reportToStderr;

/// Records (and prints) a failure of `where` with CUDA result `code`.
__attribute__((format(printf, 3, 4))) void
recordError(const char *where, int code, const char *format, ...);

/// Returns true on success; otherwise records "<where>: <call> failed: ...".
bool check(CUresult result, const char *where, const char *call);

/// check() of a driver call, which the message names by its source text.
#define XENT_CHECK(call, where) check((call), (where), #call)

//===----------------------------------------------------------------------===//
// Devices and contexts (Context.cpp)
//===----------------------------------------------------------------------===//

/// A device's retained primary context and the attributes the runtime uses.
struct DeviceInfo {
  CUcontext primary = nullptr;
  CUdevice device = 0;
  int maxSharedOptin = 0;
  int memoryPools = 0;
};

/// The context work for `stream` runs in: the stream's own, else the primary
/// context of the thread's default device.
CUcontext contextFor(CUstream stream, const char *where);

/// The context of the next launch on this thread: that of the caller's
/// stream when one is set, else the default device's primary context.
CUcontext launchContext(const char *where);

/// Makes `context` current for the scope (and restores the previous one).
class ScopedContext {
public:
  ScopedContext(CUcontext context, const char *where) {
    if (context)
      pushed = XENT_CHECK(cuCtxPushCurrent(context), where);
  }
  ~ScopedContext() {
    if (pushed)
      cuCtxPopCurrent(nullptr);
  }
  explicit operator bool() const { return pushed; }

private:
  bool pushed = false;
};

/// The device attributes of the current context's device.
DeviceInfo *currentDeviceInfo(const char *where);

/// Makes the context of `stream` current and enqueues `call(stream)`, which
/// returns the CUresult of the driver call named `callName`: the shape of
/// every mgpu* entry point that puts work on a stream.
template <typename Call>
void enqueue(void *stream, const char *where, const char *callName, Call call) {
  if (threadState().allocationFailed)
    return;
  auto s = static_cast<CUstream>(stream);
  ScopedContext scope(contextFor(s, where), where);
  if (scope)
    check(call(s), where, callName);
}

//===----------------------------------------------------------------------===//
// Memrefs (Memory.cpp, TensorMaps.cpp)
//===----------------------------------------------------------------------===//

/// The fields of a ranked memref descriptor {allocated, aligned, offset,
/// sizes[rank], strides[rank]} that the runtime reads.
struct MemrefFields {
  char *aligned = nullptr;
  int64_t offset = 0;
  const int64_t *sizes = nullptr, *strides = nullptr;

  static MemrefFields read(void *descriptor, int64_t rank) {
    auto *raw = static_cast<char *>(descriptor);
    MemrefFields f;
    std::memcpy(&f.aligned, raw + sizeof(void *), sizeof(void *));
    std::memcpy(&f.offset, raw + 2 * sizeof(void *), sizeof(int64_t));
    f.sizes = reinterpret_cast<const int64_t *>(raw + 2 * sizeof(void *) + 8);
    f.strides = f.sizes + rank;
    return f;
  }
};

} // namespace xent::runtime::detail

#endif // XENT_LIB_RUNTIME_CUDA_RUNTIMEINTERNAL_H
