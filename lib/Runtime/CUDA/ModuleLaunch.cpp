//===- ModuleLaunch.cpp - Kernel modules and launches ---------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The module and launch functions of libxent_cuda_runtime.so
// (include/xent/Runtime/CUDA/XentCudaRuntime.h, docs/gpu-runtime.md):
//
// * Modules: the translated host code calls mgpuModuleLoad from a global
//   constructor, i.e. when the compiled library is loaded. That only records
//   the image; the CUDA module is loaded at the first mgpuModuleGetFunction,
//   in the context that launch needs, and kept until mgpuModuleUnload (the
//   library's destructor). Loading a compiled kernel library therefore
//   touches no GPU, and one library serves every device.
// * Launches check their sizes, run in the context of their stream and opt
//   the kernel in to more than 48 KiB of dynamic shared memory where asked;
//   cluster launches go through cuLaunchKernelEx.
//
//===----------------------------------------------------------------------===//

#include "xent/Runtime/CUDA/XentCudaRuntime.h"

#include "RuntimeInternal.h"

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace xent::runtime::detail;

namespace {

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
    CUresult result =
        cuModuleLoadDataEx(&module, image.data, 3, options, values);
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
  if (!XENT_CHECK(
          cuFuncSetAttribute(
              function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
          where))
    return false;
  std::lock_guard<std::mutex> lock(functionMutex);
  configuredSharedBytes[function] = bytes;
  return true;
}

} // namespace

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
  if (threadState().allocationFailed)
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
                static_cast<long>(blockZ), sharedMemBytes, [&] {
                  const char *text = nullptr;
                  cuGetErrorString(result, &text);
                  return text ? text : "unknown error";
                }());
}

XENT_EXPORT void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                                         intptr_t clusterY, intptr_t clusterZ,
                                         intptr_t gridX, intptr_t gridY,
                                         intptr_t gridZ, intptr_t blockX,
                                         intptr_t blockY, intptr_t blockZ,
                                         int32_t sharedMemBytes, void *stream,
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
      !XENT_CHECK(
          cuFuncSetAttribute(
              f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
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
