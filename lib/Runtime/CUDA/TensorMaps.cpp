//===- TensorMaps.cpp - TMA descriptors of the CUDA runtime ---------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// mgpuTensorMapEncodeTiledMemref, which the host code of
// nvgpu.tma.create.descriptor calls (see
// include/xent/Runtime/CUDA/XentCudaRuntime.h and docs/gpu-runtime.md): the
// tensor map of a memref, encoded by the driver and copied to the device once
// per distinct map and context.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "RuntimeInternal.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

using namespace xent::runtime::detail;

namespace {

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
// TMA descriptors (nvgpu.tma.create.descriptor)
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
  if (!XENT_CHECK(cuTensorMapEncodeTiled(
                      &map, static_cast<CUtensorMapDataType>(dataType),
                      static_cast<cuuint32_t>(rank),
                      aligned + offset * elementBytes, globalDim, globalStrides,
                      boxDim, elementStrides,
                      static_cast<CUtensorMapInterleave>(interleave),
                      static_cast<CUtensorMapSwizzle>(swizzle),
                      static_cast<CUtensorMapL2promotion>(l2Promotion),
                      static_cast<CUtensorMapFloatOOBfill>(oobFill)),
                  where))
    return nullptr;

  CUstream stream = threadState().streamSet ? threadState().stream : nullptr;
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
    if (!XENT_CHECK(
            cuMemAlloc(&fresh.device, kTensorMapsPerSlab * sizeof(CUtensorMap)),
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
  if (!XENT_CHECK(
          cuMemcpyHtoDAsync(device, &slab->host[index], sizeof(map), stream),
          where))
    return nullptr;
  ++slab->used;
  tensorMapCache.emplace(std::move(key), device);
  return reinterpret_cast<void *>(device);
}
