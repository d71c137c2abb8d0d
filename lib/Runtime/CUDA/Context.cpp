//===- Context.cpp - Devices, contexts, streams and events ----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The device and stream functions of libxent_cuda_runtime.so
// (include/xent/Runtime/CUDA/XentCudaRuntime.h, docs/gpu-runtime.md):
//
// * Contexts: every call runs in the primary context of a device (the one
//   PyTorch and the CUDA runtime API use), pushed for the call and popped
//   after it. The device is that of the stream when there is one, else the
//   thread's default device (mgpuSetDefaultDevice, 0 by default).
// * Streams: see xentSetStream.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "RuntimeInternal.h"

#include <cuda.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#define XENT_CUDA_RUNTIME_VERSION "1"
#define XENT_STRINGIFY_IMPL(x) #x
#define XENT_STRINGIFY(x) XENT_STRINGIFY_IMPL(x)

using namespace xent::runtime::detail;

namespace {

//===----------------------------------------------------------------------===//
// Driver and devices
//===----------------------------------------------------------------------===//

CUresult initDriver() {
  static CUresult result = cuInit(/*flags=*/0);
  return result;
}

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
      XENT_CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                       &threshold),
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

bool isCallerStream(CUstream stream) {
  const ThreadState &ts = threadState();
  return ts.streamSet && ts.stream == stream;
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

} // namespace

//===----------------------------------------------------------------------===//
// For the runtime's other files (RuntimeInternal.h)
//===----------------------------------------------------------------------===//

namespace xent::runtime::detail {

CUcontext contextFor(CUstream stream, const char *where) {
  if (!isPseudoStream(stream)) {
    CUcontext context = nullptr;
    if (XENT_CHECK(cuStreamGetCtx(stream, &context), where))
      return context;
    return nullptr;
  }
  DeviceInfo *info = deviceInfo(threadState().defaultDevice, where);
  return info ? info->primary : nullptr;
}

CUcontext launchContext(const char *where) {
  const ThreadState &ts = threadState();
  return contextFor(ts.streamSet ? ts.stream : nullptr, where);
}

DeviceInfo *currentDeviceInfo(const char *where) {
  CUdevice device = 0;
  if (!XENT_CHECK(cuCtxGetDevice(&device), where))
    return nullptr;
  // Device handles are ordinals for the CUDA driver.
  return deviceInfo(static_cast<int>(device), where);
}

} // namespace xent::runtime::detail

bool xent::runtime::getCallerStream(CUstream *stream) {
  *stream = threadState().streamSet ? threadState().stream : nullptr;
  return threadState().streamSet;
}

CUcontext xent::runtime::getStreamContext(CUstream stream, const char *where) {
  return contextFor(stream, where);
}

//===----------------------------------------------------------------------===//
// The caller's stream, the default device and the driver
//===----------------------------------------------------------------------===//

XENT_EXPORT void xentSetStream(void *stream) {
  threadState().streamSet = true;
  threadState().stream = static_cast<CUstream>(stream);
}

XENT_EXPORT void xentResetStream(void) {
  threadState().streamSet = false;
  threadState().stream = nullptr;
}

XENT_EXPORT int xentGetStream(void **stream) {
  if (stream)
    *stream = threadState().streamSet ? threadState().stream : nullptr;
  return threadState().streamSet ? 1 : 0;
}

XENT_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  threadState().defaultDevice = device;
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
    return threadState().lastError;
  CUresult result = cuStreamSynchronize(s);
  check(result, where, "cuStreamSynchronize");
  return result;
}

XENT_EXPORT const char *xentRuntimeVersion(void) {
  return "xent-cuda-runtime " XENT_CUDA_RUNTIME_VERSION
         " (CUDA " XENT_STRINGIFY(CUDA_VERSION) ")";
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

XENT_EXPORT void *mgpuStreamCreate(void) {
  if (threadState().streamSet)
    return threadState().stream;
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
  enqueue(stream, "mgpuStreamWaitEvent", "cuStreamWaitEvent", [&](CUstream s) {
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
    XENT_CHECK(cuEventDestroy(static_cast<CUevent>(event)), "mgpuEventDestroy");
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
