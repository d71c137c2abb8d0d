//===- Errors.cpp - Errors of the CUDA runtime ----------------------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// How the functions of libxent_cuda_runtime.so report failures
// (include/xent/Runtime/CUDA/XentCudaRuntime.h, docs/gpu-runtime.md): errors
// are printed and recorded per thread, never fatal, and read back with
// xentGetLastError, xentGetLastErrorMessage and xentGetErrorLog. Also the
// thread's state the other files keep their settings in (RuntimeInternal.h).
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

using namespace xent::runtime::detail;

namespace {

std::atomic<uint64_t> errorCount{0};

bool initialReporting() {
  const char *quiet = std::getenv("XENT_CUDA_QUIET");
  return !(quiet && *quiet && std::strcmp(quiet, "0") != 0);
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

} // namespace

//===----------------------------------------------------------------------===//
// For the runtime's other files (RuntimeInternal.h)
//===----------------------------------------------------------------------===//

namespace xent::runtime::detail {

ThreadState &threadState() {
  static thread_local ThreadState state;
  return state;
}
std::atomic<int> reportToStderr{initialReporting() ? 1 : 0};

__attribute__((format(printf, 3, 4))) void
recordError(const char *where, int code, const char *format, ...) {
  ThreadState &ts = threadState();
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
    int written =
        std::snprintf(ts.log + ts.logLength, sizeof(ts.log) - ts.logLength,
                      "%s%s", ts.logLength ? "\n" : "", ts.lastMessage);
    if (written > 0)
      ts.logLength = std::min(sizeof(ts.log) - 1,
                              ts.logLength + static_cast<size_t>(written));
  }
  errorCount.fetch_add(1, std::memory_order_relaxed);
  if (reportToStderr.load(std::memory_order_relaxed))
    std::fprintf(stderr, "xent-cuda-runtime: %s\n", ts.lastMessage);
}

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

} // namespace xent::runtime::detail

void xent::runtime::recordFailure(const char *where, int code,
                                  const char *message) {
  recordError(where, code, "%s", message);
}

bool xent::runtime::checkResult(CUresult result, const char *where,
                                const char *call) {
  return check(result, where, call);
}

//===----------------------------------------------------------------------===//
// The thread's errors
//===----------------------------------------------------------------------===//

XENT_EXPORT int xentGetLastError(void) { return threadState().lastError; }

XENT_EXPORT const char *xentGetLastErrorMessage(void) {
  return threadState().lastMessage;
}

XENT_EXPORT const char *xentGetErrorLog(void) { return threadState().log; }

XENT_EXPORT void xentClearLastError(void) {
  threadState().allocationFailed = false;
  threadState().lastError = 0;
  threadState().lastMessage[0] = '\0';
  threadState().log[0] = '\0';
  threadState().logLength = 0;
}

XENT_EXPORT uint64_t xentGetErrorCount(void) {
  return errorCount.load(std::memory_order_relaxed);
}

XENT_EXPORT int xentSetErrorReporting(int enabled) {
  return reportToStderr.exchange(enabled ? 1 : 0);
}
