//===- CudaRuntime.cpp - mgpu* runtime over the CUDA driver API ----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The functions that MLIR 22's GPU host code calls (see
// include/xent/Runtime/CUDA/XentCudaRuntime.h and docs/gpu-runtime.md):
//
// * Contexts: every call runs in the primary context of a device (the one
//   PyTorch and the CUDA runtime API use), pushed for the call and popped
//   after it. The device is that of the stream when there is one, else the
//   thread's default device (mgpuSetDefaultDevice, 0 by default).
// * Modules: the translated host code calls mgpuModuleLoad from a global
//   constructor, i.e. when the compiled library is loaded. That only records
//   the image; the CUDA module is loaded at the first mgpuModuleGetFunction,
//   in the context that launch needs, and kept until mgpuModuleUnload (the
//   library's destructor). Loading a compiled kernel library therefore
//   touches no GPU, and one library serves every device.
// * Streams: see xentSetStream.
// * Errors are printed and recorded, never fatal.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "RuntimeInternal.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#define XENT_EXPORT extern "C" __attribute__((visibility("default")))

#define XENT_CUDA_RUNTIME_VERSION "1"
#define XENT_STRINGIFY_IMPL(x) #x
#define XENT_STRINGIFY(x) XENT_STRINGIFY_IMPL(x)

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

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

thread_local ThreadState threadState;
std::atomic<uint64_t> errorCount{0};

bool initialReporting() {
  const char *quiet = std::getenv("XENT_CUDA_QUIET");
  return !(quiet && *quiet && std::strcmp(quiet, "0") != 0);
}
std::atomic<int> reportToStderr{initialReporting() ? 1 : 0};

/// Records (and prints) a failure of `where` with CUDA result `code`.
__attribute__((format(printf, 3, 4))) void
recordError(const char *where, int code, const char *format, ...) {
  ThreadState &ts = threadState;
  int n = std::snprintf(ts.lastMessage, sizeof(ts.lastMessage), "%s: ", where);
  if (n < 0)
    n = 0;
  if (static_cast<size_t>(n) < sizeof(ts.lastMessage)) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(ts.lastMessage + n, sizeof(ts.lastMessage) - n, format,
                   args);
    va_end(args);
  }
  ts.lastError = code ? code : CUDA_ERROR_UNKNOWN;
  if (ts.logLength + 1 < sizeof(ts.log)) {
    int written = std::snprintf(ts.log + ts.logLength,
                                sizeof(ts.log) - ts.logLength, "%s%s",
                                ts.logLength ? "\n" : "", ts.lastMessage);
    if (written > 0)
      ts.logLength = std::min(sizeof(ts.log) - 1,
                              ts.logLength + static_cast<size_t>(written));
  }
  errorCount.fetch_add(1, std::memory_order_relaxed);
  if (reportToStderr.load(std::memory_order_relaxed))
    std::fprintf(stderr, "xent-cuda-runtime: %s\n", ts.lastMessage);
}

/// Name and description of the results a driver may fail to describe itself
/// (the toolkit's stub library answers nothing).
bool describeFallback(CUresult result, const char **name, const char **text) {
  switch (result) {
  case CUDA_ERROR_STUB_LIBRARY:
    *name = "CUDA_ERROR_STUB_LIBRARY";
    *text = "the CUDA driver library is the toolkit's stub: no driver";
    return true;
  case CUDA_ERROR_NO_DEVICE:
    *name = "CUDA_ERROR_NO_DEVICE";
    *text = "no CUDA-capable device is detected";
    return true;
  case CUDA_ERROR_NOT_INITIALIZED:
    *name = "CUDA_ERROR_NOT_INITIALIZED";
    *text = "initialization error";
    return true;
  default:
    return false;
  }
}

/// Returns true on success; otherwise records "<where>: <call> failed: ...".
bool check(CUresult result, const char *where, const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name ||
      cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) {
    if (!describeFallback(result, &name, &text)) {
      name = "CUDA_ERROR_?";
      text = "unknown error";
    }
  }
  recordError(where, result, "%s failed: %s (%d): %s", call, name,
              static_cast<int>(result), text);
  return false;
}

#define XENT_CHECK(call, where) check((call), (where), #call)

//===----------------------------------------------------------------------===//
// Driver, devices and contexts
//===----------------------------------------------------------------------===//

CUresult initDriver() {
  static CUresult result = cuInit(/*flags=*/0);
  return result;
}

struct DeviceInfo {
  CUcontext primary = nullptr;
  CUdevice device = 0;
  int maxSharedOptin = 0;
  int memoryPools = 0;
};

std::mutex deviceMutex;
std::vector<std::unique_ptr<DeviceInfo>> devices;

/// The retained primary context (and attributes) of `ordinal`, or null after
/// recording why.
DeviceInfo *deviceInfo(int ordinal, const char *where) {
  if (!check(initDriver(), where, "cuInit"))
    return nullptr;
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (ordinal >= 0 && static_cast<size_t>(ordinal) < devices.size() &&
      devices[ordinal])
    return devices[ordinal].get();
  int count = 0;
  if (!XENT_CHECK(cuDeviceGetCount(&count), where))
    return nullptr;
  if (ordinal < 0 || ordinal >= count) {
    recordError(where, CUDA_ERROR_INVALID_DEVICE,
                "device %d does not exist (%d device(s))", ordinal, count);
    return nullptr;
  }
  auto info = std::make_unique<DeviceInfo>();
  if (!XENT_CHECK(cuDeviceGet(&info->device, ordinal), where) ||
      !XENT_CHECK(cuDevicePrimaryCtxRetain(&info->primary, info->device),
                  where))
    return nullptr;
  XENT_CHECK(cuDeviceGetAttribute(
                 &info->maxSharedOptin,
                 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                 info->device),
             where);
  XENT_CHECK(cuDeviceGetAttribute(&info->memoryPools,
                                  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                  info->device),
             where);
  if (info->memoryPools) {
    // Keep what the stream-ordered allocations of kernel scratch (a few
    // bytes per call) release instead of returning it to the driver at every
    // synchronization (the default threshold is 0): otherwise each call maps
    // fresh memory again, which costs far more than the kernels on small
    // problems.
    CUmemoryPool pool = nullptr;
    if (XENT_CHECK(cuDeviceGetDefaultMemPool(&pool, info->device), where)) {
      cuuint64_t threshold = 64ull << 20;
      XENT_CHECK(cuMemPoolSetAttribute(
                     pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
                 where);
    }
  }
  if (devices.size() <= static_cast<size_t>(ordinal))
    devices.resize(ordinal + 1);
  devices[ordinal] = std::move(info);
  return devices[ordinal].get();
}

/// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the current context's
/// default streams; like the null stream they carry no context of their own.
bool isPseudoStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY ||
         stream == CU_STREAM_PER_THREAD;
}

/// The context work for `stream` runs in: the stream's own, else the primary
/// context of the thread's default device.
CUcontext contextFor(CUstream stream, const char *where) {
  if (!isPseudoStream(stream)) {
    CUcontext context = nullptr;
    if (XENT_CHECK(cuStreamGetCtx(stream, &context), where))
      return context;
    return nullptr;
  }
  DeviceInfo *info = deviceInfo(threadState.defaultDevice, where);
  return info ? info->primary : nullptr;
}

/// The context of the next launch on this thread: that of the caller's
/// stream when one is set, else the default device's primary context.
CUcontext launchContext(const char *where) {
  const ThreadState &ts = threadState;
  return contextFor(ts.streamSet ? ts.stream : nullptr, where);
}

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
DeviceInfo *currentDeviceInfo(const char *where) {
  CUdevice device = 0;
  if (!XENT_CHECK(cuCtxGetDevice(&device), where))
    return nullptr;
  // Device handles are ordinals for the CUDA driver.
  return deviceInfo(static_cast<int>(device), where);
}

/// Makes the context of `stream` current and enqueues `call(stream)`, which
/// returns the CUresult of the driver call named `callName`: the shape of
/// every mgpu* entry point that puts work on a stream.
template <typename Call>
void enqueue(void *stream, const char *where, const char *callName,
             Call call) {
  if (threadState.allocationFailed)
    return;
  auto s = static_cast<CUstream>(stream);
  ScopedContext scope(contextFor(s, where), where);
  if (scope)
    check(call(s), where, callName);
}

/// A stream or event made by `create(&handle)` (the driver call
/// `callName`) in the context launches use; null on failure.
template <typename Handle, typename Create>
Handle createInLaunchContext(const char *where, const char *callName,
                             Create create) {
  ScopedContext scope(launchContext(where), where);
  Handle handle = nullptr;
  if (scope)
    check(create(&handle), where, callName);
  return handle;
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

struct ModuleImage {
  const void *data = nullptr;
  size_t size = 0;
  bool jit = false;
  int optLevel = 0;
  std::mutex mutex;
  std::vector<std::pair<CUcontext, CUmodule>> loaded;
  std::map<std::pair<CUcontext, const char *>, CUfunction> functions;
};

ModuleImage *newImage(void *data, size_t size, bool jit, int optLevel,
                      const char *where) {
  if (!data) {
    recordError(where, CUDA_ERROR_INVALID_VALUE, "null module image");
    return nullptr;
  }
  auto *image = new ModuleImage();
  image->data = data;
  image->size = size;
  image->jit = jit;
  image->optLevel = optLevel;
  return image;
}

/// Loads `image` into `context` (current) unless already there.
CUmodule loadInto(ModuleImage &image, CUcontext context, const char *where) {
  for (auto &entry : image.loaded)
    if (entry.first == context)
      return entry.second;
  CUmodule module = nullptr;
  if (!image.jit) {
    if (!XENT_CHECK(cuModuleLoadData(&module, image.data), where))
      return nullptr;
  } else {
    // PTX: JIT-compile, and keep the JIT's log for the error message.
    char log[4096] = {0};
    CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL,
                              CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {
        reinterpret_cast<void *>(static_cast<intptr_t>(image.optLevel)), log,
        reinterpret_cast<void *>(static_cast<intptr_t>(sizeof(log) - 1))};
    CUresult result = cuModuleLoadDataEx(&module, image.data, 3, options,
                                         values);
    if (!check(result, where, "cuModuleLoadDataEx (PTX JIT)")) {
      if (log[0] && reportToStderr.load(std::memory_order_relaxed))
        std::fprintf(stderr, "xent-cuda-runtime: PTX JIT log:\n%s\n", log);
      return nullptr;
    }
  }
  image.loaded.emplace_back(context, module);
  return module;
}

//===----------------------------------------------------------------------===//
// Launch helpers
//===----------------------------------------------------------------------===//

constexpr int32_t kDefaultDynamicSharedLimit = 48 * 1024;

std::mutex functionMutex;
std::unordered_map<CUfunction, int32_t> configuredSharedBytes;

/// Name of `function` for messages.
const char *functionName(CUfunction function) {
  const char *name = nullptr;
  if (function && cuFuncGetName(&name, function) == CUDA_SUCCESS && name)
    return name;
  return "<unknown kernel>";
}

/// Checks a launch's sizes; false (after recording why) if it cannot run.
/// Sets *empty for a grid without blocks: nothing to launch.
bool checkGeometry(const char *where, CUfunction function,
                   const intptr_t (&dims)[6], int32_t sharedMemBytes,
                   bool *empty) {
  *empty = false;
  if (!function) {
    recordError(where, CUDA_ERROR_INVALID_HANDLE,
                "no kernel function (its module failed to load, or the "
                "function was not found)");
    return false;
  }
  for (int i = 0; i < 6; ++i) {
    if (dims[i] < 0 || dims[i] > static_cast<intptr_t>(UINT32_MAX)) {
      recordError(where, CUDA_ERROR_INVALID_VALUE,
                  "%s: %s size %ld out of range", functionName(function),
                  i < 3 ? "grid" : "block", static_cast<long>(dims[i]));
      return false;
    }
    if (dims[i] == 0) {
      if (i < 3) {
        *empty = true;
        continue;
      }
      recordError(where, CUDA_ERROR_INVALID_VALUE,
                  "%s: empty block (%ld x %ld x %ld threads)",
                  functionName(function), static_cast<long>(dims[3]),
                  static_cast<long>(dims[4]), static_cast<long>(dims[5]));
      return false;
    }
  }
  if (sharedMemBytes < 0) {
    recordError(where, CUDA_ERROR_INVALID_VALUE,
                "%s: negative dynamic shared memory size %d",
                functionName(function), sharedMemBytes);
    return false;
  }
  return true;
}

/// Lets `function` use `bytes` of dynamic shared memory (beyond 48 KiB a
/// kernel must opt in), in the current context.
bool configureSharedMemory(CUfunction function, int32_t bytes,
                           const char *where) {
  if (bytes <= kDefaultDynamicSharedLimit)
    return true;
  {
    std::lock_guard<std::mutex> lock(functionMutex);
    auto it = configuredSharedBytes.find(function);
    if (it != configuredSharedBytes.end() && it->second >= bytes)
      return true;
  }
  DeviceInfo *info = currentDeviceInfo(where);
  if (!info)
    return false;
  int staticBytes = 0;
  if (!XENT_CHECK(cuFuncGetAttribute(&staticBytes,
                                     CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                     function),
                  where))
    return false;
  if (static_cast<int64_t>(bytes) + staticBytes > info->maxSharedOptin) {
    recordError(where, CUDA_ERROR_INVALID_VALUE,
                "%s: %d bytes of dynamic shared memory + %d static exceed "
                "the device's limit of %d bytes per block",
                functionName(function), bytes, staticBytes,
                info->maxSharedOptin);
    return false;
  }
  if (!XENT_CHECK(cuFuncSetAttribute(
                      function,
                      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
                  where))
    return false;
  std::lock_guard<std::mutex> lock(functionMutex);
  configuredSharedBytes[function] = bytes;
  return true;
}

bool isCallerStream(CUstream stream) {
  const ThreadState &ts = threadState;
  return ts.streamSet && ts.stream == stream;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

enum class AllocationKind { Device, StreamOrdered, Managed, Caller };

/// The caller's allocator (xentSetDeviceAllocator).
struct CallerAllocator {
  XentDeviceAllocateFn allocate = nullptr;
  XentDeviceReleaseFn release = nullptr;
  void *userData = nullptr;
};

/// One live allocation: how it was made and, for the caller's, by which
/// allocator and on which device.
struct Allocation {
  AllocationKind kind;
  CallerAllocator caller;
  int32_t device = 0;
};

std::mutex allocationMutex;
std::unordered_map<void *, Allocation> allocations;
CallerAllocator callerAllocator; // guarded by allocationMutex

/// Removes the record of `ptr` and returns it (kind Device where the
/// runtime has none: memory it did not allocate is freed as cuMemAlloc's).
Allocation takeAllocation(void *ptr) {
  std::lock_guard<std::mutex> lock(allocationMutex);
  auto it = allocations.find(ptr);
  if (it == allocations.end())
    return Allocation{AllocationKind::Device, {}, 0};
  Allocation allocation = it->second;
  allocations.erase(it);
  return allocation;
}

/// Gives `ptr` back to the caller's allocator that gave it.
void releaseCallerAllocation(const Allocation &allocation, void *ptr,
                             CUstream stream) {
  allocation.caller.release(ptr, allocation.device, stream,
                            allocation.caller.userData);
}

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

/// Reads a ranked memref descriptor {allocated, aligned, offset, sizes[rank],
/// strides[rank]}: the address of its first element and the bytes it spans.
bool memrefExtent(int64_t rank, void *descriptor, int64_t elementSize,
                  char **begin, uint64_t *bytes, const char *where) {
  if (!descriptor || rank < 0 || elementSize <= 0) {
    recordError(where, CUDA_ERROR_INVALID_VALUE,
                "invalid memref (rank %ld, element size %ld)",
                static_cast<long>(rank), static_cast<long>(elementSize));
    return false;
  }
  auto [aligned, offset, sizes, strides] = MemrefFields::read(descriptor, rank);
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0) {
      *begin = aligned + offset * elementSize;
      *bytes = 0;
      return true;
    }
    int64_t span = (sizes[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  *begin = aligned + (offset + lo) * elementSize;
  *bytes = static_cast<uint64_t>(hi - lo + 1) * elementSize;
  return true;
}

//===----------------------------------------------------------------------===//
// TMA descriptors (nvgpu.tma.create.descriptor)
//===----------------------------------------------------------------------===//

/// Bytes per element of a CUtensorMapDataType, 0 if unsupported here.
int tensorMapElementBytes(int64_t type) {
  switch (type) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

/// Device copies of encoded tensor maps, one per distinct map and context,
/// kept for the process's life: kernels read them through a pointer, and a
/// map is typically re-encoded with the same contents at every call.
/// Slabs of pinned host memory and device memory make the upload an
/// asynchronous copy on the caller's stream.
struct TensorMapSlab {
  CUcontext context = nullptr;
  CUdeviceptr device = 0;
  CUtensorMap *host = nullptr;
  size_t used = 0;
};
constexpr size_t kTensorMapsPerSlab = 256;

std::mutex tensorMapMutex;
std::vector<TensorMapSlab> tensorMapSlabs;
std::map<std::pair<CUcontext, std::vector<unsigned char>>, CUdeviceptr>
    tensorMapCache;

} // namespace

//===----------------------------------------------------------------------===//
// For the runtime's other files (RuntimeInternal.h)
//===----------------------------------------------------------------------===//

void xent::runtime::recordFailure(const char *where, int code,
                                  const char *message) {
  recordError(where, code, "%s", message);
}

bool xent::runtime::checkResult(CUresult result, const char *where,
                                const char *call) {
  return check(result, where, call);
}

bool xent::runtime::allocationFailed() { return threadState.allocationFailed; }

bool xent::runtime::getCallerStream(CUstream *stream) {
  *stream = threadState.streamSet ? threadState.stream : nullptr;
  return threadState.streamSet;
}

CUcontext xent::runtime::getStreamContext(CUstream stream, const char *where) {
  return contextFor(stream, where);
}

void *xent::runtime::allocateFromCaller(size_t bytes, CUstream stream,
                                        const char *where, bool &fromCaller) {
  Allocation allocation{AllocationKind::Caller, {}, 0};
  {
    std::lock_guard<std::mutex> lock(allocationMutex);
    allocation.caller = callerAllocator;
  }
  fromCaller = allocation.caller.allocate != nullptr;
  if (!fromCaller)
    return nullptr;
  CUdevice device = 0;
  if (!XENT_CHECK(cuCtxGetDevice(&device), where))
    return nullptr;
  // Device handles are ordinals for the CUDA driver.
  allocation.device = static_cast<int32_t>(device);
  void *ptr = allocation.caller.allocate(bytes, allocation.device, stream,
                                         allocation.caller.userData);
  if (!ptr) {
    threadState.allocationFailed = true;
    recordError(where, CUDA_ERROR_OUT_OF_MEMORY,
                "the caller's allocator gave no memory for %llu bytes on "
                "device %d",
                static_cast<unsigned long long>(bytes), allocation.device);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(allocationMutex);
  allocations[ptr] = allocation;
  return ptr;
}

void xent::runtime::releaseToCaller(void *ptr, CUstream stream) {
  Allocation allocation = takeAllocation(ptr);
  if (allocation.kind == AllocationKind::Caller)
    releaseCallerAllocation(allocation, ptr, stream);
}

//===----------------------------------------------------------------------===//
// xent extensions
//===----------------------------------------------------------------------===//

XENT_EXPORT void xentSetDeviceAllocator(XentDeviceAllocateFn allocate,
                                        XentDeviceReleaseFn release,
                                        void *userData) {
  std::lock_guard<std::mutex> lock(allocationMutex);
  if (allocate && release)
    callerAllocator = {allocate, release, userData};
  else
    callerAllocator = {};
}

XENT_EXPORT int xentHasDeviceAllocator(void) {
  std::lock_guard<std::mutex> lock(allocationMutex);
  return callerAllocator.allocate ? 1 : 0;
}

XENT_EXPORT void xentSetStream(void *stream) {
  threadState.streamSet = true;
  threadState.stream = static_cast<CUstream>(stream);
}

XENT_EXPORT void xentResetStream(void) {
  threadState.streamSet = false;
  threadState.stream = nullptr;
}

XENT_EXPORT int xentGetStream(void **stream) {
  if (stream)
    *stream = threadState.streamSet ? threadState.stream : nullptr;
  return threadState.streamSet ? 1 : 0;
}

XENT_EXPORT int xentGetLastError(void) { return threadState.lastError; }

XENT_EXPORT const char *xentGetLastErrorMessage(void) {
  return threadState.lastMessage;
}

XENT_EXPORT const char *xentGetErrorLog(void) { return threadState.log; }

XENT_EXPORT void xentClearLastError(void) {
  threadState.allocationFailed = false;
  threadState.lastError = 0;
  threadState.lastMessage[0] = '\0';
  threadState.log[0] = '\0';
  threadState.logLength = 0;
}

XENT_EXPORT uint64_t xentGetErrorCount(void) {
  return errorCount.load(std::memory_order_relaxed);
}

XENT_EXPORT int xentSetErrorReporting(int enabled) {
  return reportToStderr.exchange(enabled ? 1 : 0);
}

XENT_EXPORT int xentDeviceCount(void) {
  int previous = reportToStderr.exchange(0);
  int count = 0;
  if (!check(initDriver(), "xentDeviceCount", "cuInit") ||
      !XENT_CHECK(cuDeviceGetCount(&count), "xentDeviceCount"))
    count = 0;
  reportToStderr.store(previous);
  return count;
}

XENT_EXPORT int xentStreamSynchronize(void *stream) {
  const char *where = "xentStreamSynchronize";
  auto s = static_cast<CUstream>(stream);
  ScopedContext scope(contextFor(s, where), where);
  if (!scope)
    return threadState.lastError;
  CUresult result = cuStreamSynchronize(s);
  check(result, where, "cuStreamSynchronize");
  return result;
}

XENT_EXPORT const char *xentRuntimeVersion(void) {
  return "xent-cuda-runtime " XENT_CUDA_RUNTIME_VERSION
         " (CUDA " XENT_STRINGIFY(CUDA_VERSION) ")";
}

//===----------------------------------------------------------------------===//
// Modules and launches
//===----------------------------------------------------------------------===//

XENT_EXPORT void *mgpuModuleLoad(void *data, size_t sizeBytes) {
  return newImage(data, sizeBytes, /*jit=*/false, 0, "mgpuModuleLoad");
}

XENT_EXPORT void *mgpuModuleLoadJIT(void *ptx, int optLevel) {
  return newImage(ptx, ptx ? std::strlen(static_cast<char *>(ptx)) + 1 : 0,
                  /*jit=*/true, optLevel, "mgpuModuleLoadJIT");
}

XENT_EXPORT void mgpuModuleUnload(void *module) {
  auto *image = static_cast<ModuleImage *>(module);
  if (!image)
    return;
  for (auto &entry : image->loaded) {
    // At process exit the driver may already be shut down: nothing to free.
    if (cuCtxPushCurrent(entry.first) != CUDA_SUCCESS)
      continue;
    CUresult result = cuModuleUnload(entry.second);
    cuCtxPopCurrent(nullptr);
    if (result != CUDA_ERROR_DEINITIALIZED &&
        result != CUDA_ERROR_CONTEXT_IS_DESTROYED)
      check(result, "mgpuModuleUnload", "cuModuleUnload");
  }
  {
    std::lock_guard<std::mutex> lock(functionMutex);
    for (auto &entry : image->functions)
      configuredSharedBytes.erase(entry.second);
  }
  delete image;
}

XENT_EXPORT void *mgpuModuleGetFunction(void *module, const char *name) {
  const char *where = "mgpuModuleGetFunction";
  auto *image = static_cast<ModuleImage *>(module);
  if (!image || !name) {
    recordError(where, CUDA_ERROR_INVALID_HANDLE,
                "no module (its image failed to register) for kernel '%s'",
                name ? name : "<null>");
    return nullptr;
  }
  CUcontext context = launchContext(where);
  if (!context)
    return nullptr;
  std::lock_guard<std::mutex> lock(image->mutex);
  auto key = std::make_pair(context, name);
  auto it = image->functions.find(key);
  if (it != image->functions.end())
    return it->second;
  ScopedContext scope(context, where);
  if (!scope)
    return nullptr;
  CUmodule cuModule = loadInto(*image, context, where);
  if (!cuModule)
    return nullptr;
  CUfunction function = nullptr;
  CUresult result = cuModuleGetFunction(&function, cuModule, name);
  if (result != CUDA_SUCCESS) {
    check(result, where, "cuModuleGetFunction");
    recordError(where, result, "kernel '%s' not found in its module", name);
    return nullptr;
  }
  image->functions.emplace(key, function);
  return function;
}

/// What every launch starts with: the geometry is checked (false, without
/// an error, for an empty grid), then `check()` (a template parameter, not a
/// std::function: launches are the host's hot path), then the stream's
/// context is made current (held by `scope`) and the kernel's dynamic shared
/// memory configured. False when there is nothing to launch.
template <typename Check>
static bool beginLaunch(const char *where, CUfunction f, CUstream s,
                        const intptr_t (&dims)[6], int32_t sharedMemBytes,
                        std::optional<ScopedContext> &scope, Check check) {
  if (threadState.allocationFailed)
    return false;
  bool empty = false;
  if (!checkGeometry(where, f, dims, sharedMemBytes, &empty) || empty)
    return false;
  if (!check())
    return false;
  scope.emplace(contextFor(s, where), where);
  return *scope && configureSharedMemory(f, sharedMemBytes, where);
}

XENT_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t sharedMemBytes,
                                  void *stream, void **params, void **extra,
                                  size_t /*paramsCount*/) {
  const char *where = "mgpuLaunchKernel";
  auto f = static_cast<CUfunction>(function);
  auto s = static_cast<CUstream>(stream);
  std::optional<ScopedContext> scope;
  if (!beginLaunch(where, f, s, {gridX, gridY, gridZ, blockX, blockY, blockZ},
                   sharedMemBytes, scope, [] { return true; }))
    return;
  CUresult result =
      cuLaunchKernel(f, gridX, gridY, gridZ, blockX, blockY, blockZ,
                     static_cast<unsigned>(sharedMemBytes), s, params, extra);
  if (result != CUDA_SUCCESS)
    recordError(where, result,
                "cuLaunchKernel(%s, grid %ldx%ldx%ld, block %ldx%ldx%ld, "
                "%d B shared) failed: %s",
                functionName(f), static_cast<long>(gridX),
                static_cast<long>(gridY), static_cast<long>(gridZ),
                static_cast<long>(blockX), static_cast<long>(blockY),
                static_cast<long>(blockZ), sharedMemBytes,
                [&] {
                  const char *text = nullptr;
                  cuGetErrorString(result, &text);
                  return text ? text : "unknown error";
                }());
}

XENT_EXPORT void mgpuLaunchClusterKernel(
    void *function, intptr_t clusterX, intptr_t clusterY, intptr_t clusterZ,
    intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX,
    intptr_t blockY, intptr_t blockZ, int32_t sharedMemBytes, void *stream,
    void **params, void **extra) {
  const char *where = "mgpuLaunchClusterKernel";
  auto f = static_cast<CUfunction>(function);
  auto s = static_cast<CUstream>(stream);
  auto validCluster = [&] {
    if (clusterX > 0 && clusterY > 0 && clusterZ > 0 &&
        clusterX * clusterY * clusterZ <= 1024)
      return true;
    recordError(where, CUDA_ERROR_INVALID_VALUE,
                "%s: invalid cluster %ldx%ldx%ld", functionName(f),
                static_cast<long>(clusterX), static_cast<long>(clusterY),
                static_cast<long>(clusterZ));
    return false;
  };
  std::optional<ScopedContext> scope;
  if (!beginLaunch(where, f, s, {gridX, gridY, gridZ, blockX, blockY, blockZ},
                   sharedMemBytes, scope, validCluster))
    return;
  if (clusterX * clusterY * clusterZ > 8 &&
      !XENT_CHECK(cuFuncSetAttribute(
                      f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                      1),
                  where))
    return;
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof(config));
  config.gridDimX = static_cast<unsigned>(gridX);
  config.gridDimY = static_cast<unsigned>(gridY);
  config.gridDimZ = static_cast<unsigned>(gridZ);
  config.blockDimX = static_cast<unsigned>(blockX);
  config.blockDimY = static_cast<unsigned>(blockY);
  config.blockDimZ = static_cast<unsigned>(blockZ);
  config.sharedMemBytes = static_cast<unsigned>(sharedMemBytes);
  config.hStream = s;
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof(attribute));
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = static_cast<unsigned>(clusterX);
  attribute.value.clusterDim.y = static_cast<unsigned>(clusterY);
  attribute.value.clusterDim.z = static_cast<unsigned>(clusterZ);
  config.attrs = &attribute;
  config.numAttrs = 1;
  CUresult result = cuLaunchKernelEx(&config, f, params, extra);
  if (result != CUDA_SUCCESS) {
    const char *text = nullptr;
    cuGetErrorString(result, &text);
    recordError(where, result,
                "cuLaunchKernelEx(%s, cluster %ldx%ldx%ld, grid %ldx%ldx%ld, "
                "block %ldx%ldx%ld, %d B shared) failed: %s",
                functionName(f), static_cast<long>(clusterX),
                static_cast<long>(clusterY), static_cast<long>(clusterZ),
                static_cast<long>(gridX), static_cast<long>(gridY),
                static_cast<long>(gridZ), static_cast<long>(blockX),
                static_cast<long>(blockY), static_cast<long>(blockZ),
                sharedMemBytes, text ? text : "unknown error");
  }
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

XENT_EXPORT void *mgpuStreamCreate(void) {
  if (threadState.streamSet)
    return threadState.stream;
  return createInLaunchContext<CUstream>(
      "mgpuStreamCreate", "cuStreamCreate", [](CUstream *stream) {
        return cuStreamCreate(stream, CU_STREAM_NON_BLOCKING);
      });
}

XENT_EXPORT void mgpuStreamDestroy(void *stream) {
  const char *where = "mgpuStreamDestroy";
  auto s = static_cast<CUstream>(stream);
  if (isCallerStream(s) || isPseudoStream(s))
    return;
  XENT_CHECK(cuStreamDestroy(s), where);
}

XENT_EXPORT void mgpuStreamSynchronize(void *stream) {
  const char *where = "mgpuStreamSynchronize";
  if (isCallerStream(static_cast<CUstream>(stream)))
    return;
  enqueue(stream, where, "cuStreamSynchronize",
          [](CUstream s) { return cuStreamSynchronize(s); });
}

XENT_EXPORT void mgpuStreamWaitEvent(void *stream, void *event) {
  enqueue(stream, "mgpuStreamWaitEvent", "cuStreamWaitEvent",
          [&](CUstream s) {
            return cuStreamWaitEvent(s, static_cast<CUevent>(event), 0);
          });
}

XENT_EXPORT void *mgpuEventCreate(void) {
  return createInLaunchContext<CUevent>(
      "mgpuEventCreate", "cuEventCreate", [](CUevent *event) {
        return cuEventCreate(event, CU_EVENT_DISABLE_TIMING);
      });
}

XENT_EXPORT void mgpuEventDestroy(void *event) {
  if (event)
    XENT_CHECK(cuEventDestroy(static_cast<CUevent>(event)),
               "mgpuEventDestroy");
}

XENT_EXPORT void mgpuEventSynchronize(void *event) {
  XENT_CHECK(cuEventSynchronize(static_cast<CUevent>(event)),
             "mgpuEventSynchronize");
}

XENT_EXPORT void mgpuEventRecord(void *event, void *stream) {
  enqueue(stream, "mgpuEventRecord", "cuEventRecord", [&](CUstream s) {
    return cuEventRecord(static_cast<CUevent>(event), s);
  });
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static void *allocate(uint64_t sizeBytes, void *stream, int8_t isHostShared);

XENT_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                               int8_t isHostShared) {
  void *ptr = allocate(sizeBytes, stream, isHostShared);
  if (!ptr && sizeBytes != 0)
    threadState.allocationFailed = true;
  return ptr;
}

static void *allocate(uint64_t sizeBytes, void *stream, int8_t isHostShared) {
  const char *where = "mgpuMemAlloc";
  if (sizeBytes == 0)
    return nullptr;
  auto s = static_cast<CUstream>(stream);
  ScopedContext scope(contextFor(s, where), where);
  if (!scope)
    return nullptr;
  if (!isHostShared) {
    bool fromCaller = false;
    void *ptr = xent::runtime::allocateFromCaller(sizeBytes, s, where,
                                                  fromCaller);
    if (fromCaller)
      return ptr;
  }
  CUdeviceptr ptr = 0;
  AllocationKind kind;
  if (isHostShared) {
    kind = AllocationKind::Managed;
    if (!XENT_CHECK(cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL),
                    where))
      return nullptr;
  } else {
    DeviceInfo *info = currentDeviceInfo(where);
    if (!info)
      return nullptr;
    // Stream-ordered when the device can: no device-wide synchronization
    // at the matching free, unlike cuMemFree.
    if (info->memoryPools) {
      kind = AllocationKind::StreamOrdered;
      if (!XENT_CHECK(cuMemAllocAsync(&ptr, sizeBytes, s), where))
        return nullptr;
    } else {
      kind = AllocationKind::Device;
      if (!XENT_CHECK(cuMemAlloc(&ptr, sizeBytes), where))
        return nullptr;
    }
  }
  void *result = reinterpret_cast<void *>(ptr);
  std::lock_guard<std::mutex> lock(allocationMutex);
  allocations[result] = Allocation{kind, {}, 0};
  return result;
}

XENT_EXPORT void mgpuMemFree(void *ptr, void *stream) {
  const char *where = "mgpuMemFree";
  if (!ptr)
    return;
  auto s = static_cast<CUstream>(stream);
  Allocation allocation = takeAllocation(ptr);
  AllocationKind kind = allocation.kind;
  if (kind == AllocationKind::Caller) {
    releaseCallerAllocation(allocation, ptr, s);
    return;
  }
  ScopedContext scope(contextFor(s, where), where);
  if (!scope)
    return;
  auto devicePtr = reinterpret_cast<CUdeviceptr>(ptr);
  if (kind == AllocationKind::StreamOrdered)
    XENT_CHECK(cuMemFreeAsync(devicePtr, s), where);
  else
    XENT_CHECK(cuMemFree(devicePtr), where);
}

XENT_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            void *stream) {
  if (sizeBytes == 0)
    return;
  enqueue(stream, "mgpuMemcpy", "cuMemcpyAsync", [&](CUstream s) {
    return cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                         reinterpret_cast<CUdeviceptr>(src), sizeBytes, s);
  });
}

XENT_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                              void *stream) {
  if (count == 0)
    return;
  enqueue(stream, "mgpuMemset32", "cuMemsetD32Async", [&](CUstream s) {
    return cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                            s);
  });
}

XENT_EXPORT void mgpuMemset16(void *dst, uint16_t value, size_t count,
                              void *stream) {
  if (count == 0)
    return;
  enqueue(stream, "mgpuMemset16", "cuMemsetD16Async", [&](CUstream s) {
    return cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                            s);
  });
}

XENT_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  const char *where = "mgpuMemHostRegister";
  if (!ptr || sizeBytes == 0)
    return;
  ScopedContext scope(launchContext(where), where);
  if (!scope)
    return;
  XENT_CHECK(cuMemHostRegister(ptr, sizeBytes, /*Flags=*/0), where);
}

XENT_EXPORT void mgpuMemHostUnregister(void *ptr) {
  const char *where = "mgpuMemHostUnregister";
  if (!ptr)
    return;
  ScopedContext scope(launchContext(where), where);
  if (!scope)
    return;
  XENT_CHECK(cuMemHostUnregister(ptr), where);
}

XENT_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                           int64_t elementSizeBytes) {
  char *begin = nullptr;
  uint64_t bytes = 0;
  if (memrefExtent(rank, descriptor, elementSizeBytes, &begin, &bytes,
                   "mgpuMemHostRegisterMemRef"))
    mgpuMemHostRegister(begin, bytes);
}

XENT_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                             int64_t elementSizeBytes) {
  char *begin = nullptr;
  uint64_t bytes = 0;
  if (memrefExtent(rank, descriptor, elementSizeBytes, &begin, &bytes,
                   "mgpuMemHostUnregisterMemRef") &&
      bytes)
    mgpuMemHostUnregister(begin);
}

XENT_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  threadState.defaultDevice = device;
}

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

XENT_EXPORT void *mgpuTensorMapEncodeTiledMemref(
    int64_t rank, void *descriptor, int64_t dataType, int64_t interleave,
    int64_t swizzle, int64_t l2Promotion, int64_t oobFill, int64_t *boxDims) {
  const char *where = "mgpuTensorMapEncodeTiledMemref";
  int elementBytes = tensorMapElementBytes(dataType);
  if (rank < 1 || rank > 5 || !descriptor || !boxDims || !elementBytes) {
    recordError(where, CUDA_ERROR_INVALID_VALUE,
                "unsupported tensor map (rank %ld, data type %ld)",
                static_cast<long>(rank), static_cast<long>(dataType));
    return nullptr;
  }
  auto [aligned, offset, sizes, strides] = MemrefFields::read(descriptor, rank);

  // CUDA orders dimensions innermost first; memrefs outermost first.
  cuuint64_t globalDim[5], globalStrides[4];
  cuuint32_t boxDim[5], elementStrides[5];
  for (int64_t i = 0; i < rank; ++i) {
    globalDim[i] = static_cast<cuuint64_t>(sizes[rank - 1 - i]);
    boxDim[i] = static_cast<cuuint32_t>(boxDims[rank - 1 - i]);
    elementStrides[i] = 1;
  }
  for (int64_t i = 0; i + 1 < rank; ++i)
    globalStrides[i] =
        static_cast<cuuint64_t>(strides[rank - 2 - i]) * elementBytes;

  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  if (!XENT_CHECK(
          cuTensorMapEncodeTiled(
              &map, static_cast<CUtensorMapDataType>(dataType),
              static_cast<cuuint32_t>(rank), aligned + offset * elementBytes,
              globalDim, globalStrides, boxDim, elementStrides,
              static_cast<CUtensorMapInterleave>(interleave),
              static_cast<CUtensorMapSwizzle>(swizzle),
              static_cast<CUtensorMapL2promotion>(l2Promotion),
              static_cast<CUtensorMapFloatOOBfill>(oobFill)),
          where))
    return nullptr;

  CUstream stream = threadState.streamSet ? threadState.stream : nullptr;
  CUcontext context = contextFor(stream, where);
  ScopedContext scope(context, where);
  if (!scope)
    return nullptr;
  const auto *bytes = reinterpret_cast<const unsigned char *>(&map);
  auto key = std::make_pair(
      context, std::vector<unsigned char>(bytes, bytes + sizeof(map)));
  std::lock_guard<std::mutex> lock(tensorMapMutex);
  auto it = tensorMapCache.find(key);
  if (it != tensorMapCache.end())
    return reinterpret_cast<void *>(it->second);

  TensorMapSlab *slab = nullptr;
  for (auto &candidate : tensorMapSlabs)
    if (candidate.context == context && candidate.used < kTensorMapsPerSlab)
      slab = &candidate;
  if (!slab) {
    TensorMapSlab fresh;
    fresh.context = context;
    void *host = nullptr;
    if (!XENT_CHECK(cuMemAlloc(&fresh.device,
                               kTensorMapsPerSlab * sizeof(CUtensorMap)),
                    where))
      return nullptr;
    if (!XENT_CHECK(cuMemHostAlloc(&host,
                                   kTensorMapsPerSlab * sizeof(CUtensorMap),
                                   /*Flags=*/0),
                    where)) {
      cuMemFree(fresh.device);
      return nullptr;
    }
    fresh.host = static_cast<CUtensorMap *>(host);
    tensorMapSlabs.push_back(fresh);
    slab = &tensorMapSlabs.back();
  }
  size_t index = slab->used;
  slab->host[index] = map;
  CUdeviceptr device = slab->device + index * sizeof(CUtensorMap);
  // Pinned source: the copy is asynchronous, ordered before the launch that
  // reads it on the same stream.
  if (!XENT_CHECK(cuMemcpyHtoDAsync(device, &slab->host[index], sizeof(map),
                                    stream),
                  where))
    return nullptr;
  ++slab->used;
  tensorMapCache.emplace(std::move(key), device);
  return reinterpret_cast<void *>(device);
}
