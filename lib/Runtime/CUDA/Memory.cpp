//===- Memory.cpp - Device memory of the CUDA runtime ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The memory functions of libxent_cuda_runtime.so
// (include/xent/Runtime/CUDA/XentCudaRuntime.h, docs/gpu-runtime.md):
// allocations from the caller's allocator where one is installed
// (xentSetDeviceAllocator), else from the driver (stream-ordered where the
// device has memory pools, managed memory for host-shared buffers); copies
// and fills on a stream; host memory registration. After a failed allocation
// the thread enqueues no device work until xentClearLastError.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "RuntimeInternal.h"

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

using namespace xent::runtime::detail;

namespace {

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

} // namespace

//===----------------------------------------------------------------------===//
// The caller's allocator (RuntimeInternal.h)
//===----------------------------------------------------------------------===//

bool xent::runtime::allocationFailed() { return threadState().allocationFailed; }

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
    threadState().allocationFailed = true;
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

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static void *allocate(uint64_t sizeBytes, void *stream, int8_t isHostShared);

XENT_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                               int8_t isHostShared) {
  void *ptr = allocate(sizeBytes, stream, isHostShared);
  if (!ptr && sizeBytes != 0)
    threadState().allocationFailed = true;
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
    void *ptr =
        xent::runtime::allocateFromCaller(sizeBytes, s, where, fromCaller);
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
