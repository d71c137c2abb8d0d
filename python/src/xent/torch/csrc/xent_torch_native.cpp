//===- xent_torch_native.cpp - xent.torch's native launch path ------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The host side of one xent.torch call in C++: PyTorch operators in the
// namespace `xent_native` that call a compiled kernel library's entry point
// (`_mlir_ciface_xent_entry`, the C interface of the module's host function)
// with memref descriptors filled from the tensors, on PyTorch's current
// stream. Built by xent.torch.native with PyTorch's headers and libraries on
// the machine that runs it (no pybind: loaded with torch.ops.load_library).
//
// * `register(runtime, library, function) -> int`: opens the CUDA runtime
//   library and a compiled kernel library (both already loaded by
//   xent.runtime.gpu, so this only takes references) and returns a handle
//   for the function's C interface.
// * `forward(fn, logits, target, weight, reduced, convert_z, f32_loss) ->
//   (loss, z)`: a library without gradient.
// * `forward_with_grad(...same...) -> (loss, z, dlogits)`: the joint kernel
//   for grad_output = 1.
// * `loss(fn, scale_fn, scale_dt_fn, logits, target, weight, reduced,
//   convert_z, f32_loss, ..., forward_fn=-1) -> (loss, z)`: the eager
//   training call. For a reduced loss its autograd kernel runs the joint
//   kernel in the forward and keeps the gradient; the backward only scales
//   it in place (the library's `xent_scale_grad_dt`, grad_output in the
//   gradient's dtype, or `xent_scale_grad`, in f32; both return at once for
//   a grad_output of 1) and hands it out. Per element (`forward_fn`, the
//   library without gradient, given): the forward computes the loss alone
//   and keeps the inputs; the backward runs the joint kernel with the
//   per-row grad_output, so the gradient is written once, already scaled
//   (one read of the logits in the forward, one read and one write in the
//   backward, where scaling a kept gradient would read and write it again).
//   `in_place=True` writes the gradient into the logits' memory (in the
//   forward, or per element in the backward) and bumps their version; the
//   caller passes it only where autograd allows an in-place write and with
//   a library whose joint kernel may run in place (the two-pass walk).
// * `scale_grad_(fn, dlogits, grad_output)`: that scaling alone.
// * `call(fn, args)`: any entry point on tensors the caller allocated (the
//   per-row outputs' path, xent::cross_entropy_rows).
//
// The loss comes out of the kernels in the logits' dtype, like
// F.cross_entropy's, or in f32 with f32_loss=true (F.cross_entropy's dtype
// under autocast): the library was compiled for the one the caller names
// (xent.torch.ops.config_for), no conversion follows the call. The z-loss
// comes out in f32 and is returned in the logits' dtype (it stays f32 with
// convert_z=false, for callers that drop it). Nothing synchronizes with the host,
// and nothing is allocated outside PyTorch's caching allocator (opening a
// runtime installs it as the runtime's device allocator), so calls are
// CUDA-graph capturable and PyTorch's memory statistics see all of it.
//
//===----------------------------------------------------------------------===//

#include "memref_descriptor.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

// `Tensor?` in a schema: std::optional since PyTorch 2.4, c10's own before.
#if TORCH_VERSION_MAJOR > 2 ||                                                 \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
using OptionalTensor = std::optional<at::Tensor>;
using OptionalInt = std::optional<int64_t>;
#else
using OptionalTensor = c10::optional<at::Tensor>;
using OptionalInt = c10::optional<int64_t>;
#endif

/// The functions of libxent_cuda_runtime.so a call needs.
struct Runtime {
  void (*setStream)(void *) = nullptr;
  void (*resetStream)() = nullptr;
  int (*getStream)(void **) = nullptr;
  int (*getLastError)() = nullptr;
  const char *(*getErrorLog)() = nullptr;
  void (*clearLastError)() = nullptr;
  void (*setDefaultDevice)(int32_t) = nullptr;
};

/// One registered C interface: `void fn(Descriptor *...)`.
struct Entry {
  const Runtime *runtime;
  void *function;
  std::string name;
};

/// Why the caching allocator refused the last allocation on this thread
/// (raised as torch.OutOfMemoryError after the call), or empty.
thread_local std::string allocationFailure;

/// The runtime's device memory (kernel scratch, the linear ops' chunk
/// buffers, the cuBLASLt workspace) through PyTorch's caching allocator
/// (xentSetDeviceAllocator), on the stream it is used on: PyTorch's memory
/// statistics and limits cover it, and the allocator reuses it.
void *torchAllocate(uint64_t bytes, int32_t device, void *stream, void *) {
  try {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(
        bytes, static_cast<cudaStream_t>(stream));
  } catch (const c10::Error &error) {
    allocationFailure = error.what_without_backtrace();
    return nullptr;
  }
}

void torchRelease(void *ptr, int32_t, void *, void *) {
  try {
    c10::cuda::CUDACachingAllocator::raw_delete(ptr);
  } catch (const c10::Error &) {
    // Not PyTorch's: nothing this side can do about it.
  }
}

// Never removed: a handle is an index into `entries`, whose elements stay
// where they are.
std::mutex registryMutex;
std::vector<std::unique_ptr<Runtime>> runtimes;
std::vector<std::pair<std::string, const Runtime *>> runtimePaths;
std::vector<std::unique_ptr<Entry>> entries;

template <typename T>
void resolve(void *handle, const char *name, T &slot, const std::string &path) {
  void *symbol = dlsym(handle, name);
  TORCH_CHECK(symbol, "xent_native: ", path, " has no ", name);
  slot = reinterpret_cast<T>(symbol);
}

const Runtime *openRuntime(const std::string &path) {
  for (auto &[known, runtime] : runtimePaths)
    if (known == path)
      return runtime;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  TORCH_CHECK(handle, "xent_native: cannot open ", path, ": ", dlerror());
  auto runtime = std::make_unique<Runtime>();
  resolve(handle, "xentSetStream", runtime->setStream, path);
  resolve(handle, "xentResetStream", runtime->resetStream, path);
  resolve(handle, "xentGetStream", runtime->getStream, path);
  resolve(handle, "xentGetLastError", runtime->getLastError, path);
  resolve(handle, "xentGetErrorLog", runtime->getErrorLog, path);
  resolve(handle, "xentClearLastError", runtime->clearLastError, path);
  resolve(handle, "mgpuSetDefaultDevice", runtime->setDefaultDevice, path);
  using SetAllocator = void (*)(void *(*)(uint64_t, int32_t, void *, void *),
                                void (*)(void *, int32_t, void *, void *),
                                void *);
  SetAllocator setAllocator = nullptr;
  resolve(handle, "xentSetDeviceAllocator", setAllocator, path);
  setAllocator(torchAllocate, torchRelease, nullptr);
  const Runtime *result = runtime.get();
  runtimes.push_back(std::move(runtime));
  runtimePaths.emplace_back(path, result);
  return result;
}

int64_t registerFunction(std::string runtimePath, std::string libraryPath,
                         std::string name) {
  std::lock_guard<std::mutex> lock(registryMutex);
  const Runtime *runtime = openRuntime(runtimePath);
  void *handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(handle, "xent_native: cannot open ", libraryPath, ": ",
              dlerror());
  std::string symbol = "_mlir_ciface_" + name;
  void *function = dlsym(handle, symbol.c_str());
  TORCH_CHECK(function, "xent_native: ", libraryPath, " has no ", symbol);
  entries.push_back(std::make_unique<Entry>(Entry{runtime, function, name}));
  return static_cast<int64_t>(entries.size() - 1);
}

const Entry &entry(int64_t handle) {
  std::lock_guard<std::mutex> lock(registryMutex);
  TORCH_CHECK(handle >= 0 && handle < static_cast<int64_t>(entries.size()),
              "xent_native: no registered function ", std::to_string(handle));
  return *entries[handle];
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

// Numbers go into messages through std::to_string: a TORCH_CHECK that
// streams an integer can crash inside libstdc++'s num_put when the
// extension's libstdc++ is not the one PyTorch's wheel was built with.
constexpr int kMaxArgs = 12;

using xent_native::Descriptor;
using xent_native::kMaxRank;

/// `d` filled from the tensor `t`.
void fillDescriptor(Descriptor &d, const at::Tensor &t) {
  TORCH_CHECK(t.dim() <= kMaxRank, "xent_native: rank ",
              std::to_string(t.dim()), " above ", std::to_string(kMaxRank));
  d.fill(t.data_ptr(), t.dim(), t.sizes().data(), t.strides().data());
}

/// The run-time values of a library compiled with runtime scalars
/// (xent.runtime.kernels, runtime_scalars=True): the entry function's last
/// arguments, ignore_index as i64 when the targets are class indices, then
/// the present ones of label smoothing, z-loss scale and softcap as f32.
struct Scalars {
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
  size_t numFloats = 0;
  std::array<float, 3> floats = {0, 0, 0};

  static Scalars get(const OptionalInt &ignoreIndex,
                     c10::ArrayRef<double> values) {
    TORCH_CHECK(values.size() <= 3, "xent_native: at most 3 f32 scalars");
    Scalars s;
    s.hasIgnoreIndex = ignoreIndex.has_value();
    s.ignoreIndex = ignoreIndex.value_or(0);
    s.numFloats = values.size();
    for (size_t i = 0; i < values.size(); ++i)
      s.floats[i] = static_cast<float>(values[i]);
    return s;
  }
};

template <size_t> using Pointer = void *;
template <size_t> using Float = float;

template <size_t... I, size_t... J>
void invoke(void *function, Descriptor *d, const Scalars &s,
            std::index_sequence<I...>, std::index_sequence<J...>,
            std::true_type /*ignore_index*/) {
  using Fn = void (*)(Pointer<I>..., int64_t, Float<J>...);
  reinterpret_cast<Fn>(function)(static_cast<void *>(&d[I])..., s.ignoreIndex,
                                 s.floats[J]...);
}

template <size_t... I, size_t... J>
void invoke(void *function, Descriptor *d, const Scalars &s,
            std::index_sequence<I...>, std::index_sequence<J...>,
            std::false_type /*ignore_index*/) {
  using Fn = void (*)(Pointer<I>..., Float<J>...);
  reinterpret_cast<Fn>(function)(static_cast<void *>(&d[I])..., s.floats[J]...);
}

/// `function(descriptors[0..N), scalars)` with the C types of its signature.
template <size_t N>
void invokeN(void *function, Descriptor *d, const Scalars &s) {
  auto p = std::make_index_sequence<N>{};
  switch (s.numFloats * 2 + (s.hasIgnoreIndex ? 1 : 0)) {
#define XENT_SCALARS(f, i, tag)                                                \
  case f * 2 + i:                                                              \
    invoke(function, d, s, p, std::make_index_sequence<f>{}, tag{});           \
    break;
    XENT_SCALARS(0, 0, std::false_type)
    XENT_SCALARS(0, 1, std::true_type)
    XENT_SCALARS(1, 0, std::false_type)
    XENT_SCALARS(1, 1, std::true_type)
    XENT_SCALARS(2, 0, std::false_type)
    XENT_SCALARS(2, 1, std::true_type)
    XENT_SCALARS(3, 0, std::false_type)
    XENT_SCALARS(3, 1, std::true_type)
#undef XENT_SCALARS
  default:
    TORCH_CHECK(false, "xent_native: bad scalar arguments");
  }
}

/// Calls `e` with the tensors' descriptors on PyTorch's current stream of
/// `device`, restoring the runtime's previous stream; raises the runtime's
/// error log when a call failed.
void call(const Entry &e, c10::DeviceIndex device,
          c10::ArrayRef<at::Tensor> tensors, const Scalars &scalars = {}) {
  TORCH_CHECK(tensors.size() <= kMaxArgs, "xent_native: too many arguments");
  std::array<Descriptor, kMaxArgs> descriptors;
  size_t n = 0;
  for (const at::Tensor &t : tensors)
    fillDescriptor(descriptors[n++], t);
  const Runtime &rt = *e.runtime;
  void *stream = c10::cuda::getCurrentCUDAStream(device).stream();
  void *previous = nullptr;
  int hadStream = rt.getStream(&previous);
  rt.clearLastError();
  allocationFailure.clear();
  rt.setDefaultDevice(device);
  rt.setStream(stream);
  switch (n) {
#define XENT_CASE(k)                                                           \
  case k:                                                                      \
    invokeN<k>(e.function, descriptors.data(), scalars);                       \
    break;
    XENT_CASE(1)
    XENT_CASE(2)
    XENT_CASE(3)
    XENT_CASE(4)
    XENT_CASE(5)
    XENT_CASE(6)
    XENT_CASE(7)
    XENT_CASE(8)
    XENT_CASE(9)
    XENT_CASE(10)
    XENT_CASE(11)
    XENT_CASE(12)
#undef XENT_CASE
  default:
    TORCH_CHECK(false, "xent_native: no arguments");
  }
  if (hadStream)
    rt.setStream(previous);
  else
    rt.resetStream();
  if (!allocationFailure.empty()) {
    std::string why = std::move(allocationFailure);
    allocationFailure.clear();
    rt.clearLastError();
    TORCH_CHECK_WITH(OutOfMemoryError, false, "xent: @", e.name, ": ", why);
  }
  if (rt.getLastError()) {
    const char *log = rt.getErrorLog();
    TORCH_CHECK(false, "xent: @", e.name, " failed: ", log ? log : "");
  }
}

/// The shape of the loss: a scalar when reduced, else the logits' without
/// the class axis.
std::vector<int64_t> lossShape(const at::Tensor &logits, bool reduced) {
  if (reduced || logits.dim() <= 1)
    return {};
  std::vector<int64_t> shape(logits.sizes().begin(), logits.sizes().end());
  shape.erase(shape.begin() + 1);
  return shape;
}

/// grad_output = 1 of the joint kernel, as a 0-d f32 tensor: cached per
/// device, except while a stream is being captured (not from a graph's pool).
at::Tensor scalarOne(const at::Tensor &like) {
  static std::mutex mutex;
  static std::array<at::Tensor, 64> ones;
  c10::DeviceIndex device = like.get_device();
  auto make = [&] { return at::ones({}, like.options().dtype(at::kFloat)); };
  if (device < 0 || device >= static_cast<c10::DeviceIndex>(ones.size()))
    return make();
  std::lock_guard<std::mutex> lock(mutex);
  if (ones[device].defined())
    return ones[device];
  at::Tensor one = make();
  if (c10::cuda::currentStreamCaptureStatusMayInitCtx() ==
      c10::cuda::CaptureStatus::None)
    ones[device] = one;
  return one;
}

void checkInputs(const at::Tensor &logits, const at::Tensor &target) {
  TORCH_CHECK(logits.is_cuda() && target.is_cuda(),
              "xent: logits and target must be CUDA tensors");
  TORCH_CHECK(logits.get_device() == target.get_device(),
              "xent: logits and target are on different devices");
}

/// Runs a library: (loss, z), the loss in the dtype the library writes (the
/// logits', f32 with `f32Loss`), and, when `dlogits` is defined, the
/// gradient for grad_output (default 1) written into it.
std::tuple<at::Tensor, at::Tensor>
run(int64_t fn, const at::Tensor &logits, const at::Tensor &target,
    const OptionalTensor &weight, bool reduced, bool convertZ, bool f32Loss,
    const at::Tensor &dlogits, const Scalars &sc,
    const at::Tensor &gradOutput = at::Tensor()) {
  checkInputs(logits, target);
  const Entry &e = entry(fn);
  auto options = logits.options().dtype(at::kFloat);
  std::vector<int64_t> shape = lossShape(logits, reduced);
  at::Tensor loss = at::empty(shape, f32Loss ? options : logits.options());
  at::Tensor z = at::empty(shape, options);
  at::Tensor w;
  if (weight && weight->defined())
    w = weight->to(at::kFloat);
  c10::DeviceIndex device = logits.get_device();
  if (dlogits.defined()) {
    // grad_output: the caller's (f32, the loss's shape), else 1.
    at::Tensor g = gradOutput.defined() ? gradOutput
                   : reduced            ? scalarOne(logits)
                                        : at::ones(shape, options);
    if (w.defined())
      call(e, device, {logits, target, w, g, loss, z, dlogits}, sc);
    else
      call(e, device, {logits, target, g, loss, z, dlogits}, sc);
  } else if (w.defined()) {
    call(e, device, {logits, target, w, loss, z}, sc);
  } else {
    call(e, device, {logits, target, loss, z}, sc);
  }
  // The z-loss in f32 when the caller drops it (one conversion less).
  return {loss, convertZ ? z.to(logits.scalar_type()) : z};
}

std::tuple<at::Tensor, at::Tensor>
forwardOp(int64_t fn, const at::Tensor &logits, const at::Tensor &target,
          const OptionalTensor &weight, bool reduced, bool convertZ,
          bool f32Loss, const OptionalInt &ignoreIndex,
          c10::ArrayRef<double> scalars) {
  return run(fn, logits, target, weight, reduced, convertZ, f32Loss,
             at::Tensor(), Scalars::get(ignoreIndex, scalars));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> forwardWithGradOp(
    int64_t fn, const at::Tensor &logits, const at::Tensor &target,
    const OptionalTensor &weight, bool reduced, bool convertZ, bool f32Loss,
    const OptionalInt &ignoreIndex, c10::ArrayRef<double> scalars) {
  // Dense, whatever the logits' strides.
  at::Tensor dlogits =
      at::empty(logits.sizes(), logits.options(), at::MemoryFormat::Contiguous);
  auto [loss, z] = run(fn, logits, target, weight, reduced, convertZ, f32Loss,
                       dlogits, Scalars::get(ignoreIndex, scalars));
  return {loss, z, dlogits};
}

void scaleGrad(int64_t fn, const at::Tensor &dlogits,
               const at::Tensor &gradOutput) {
  TORCH_CHECK(dlogits.is_contiguous(),
              "xent_native::scale_grad_ takes a contiguous dlogits");
  TORCH_CHECK(gradOutput.dim() == 0 && gradOutput.scalar_type() == at::kFloat,
              "xent_native::scale_grad_ takes a 0-d float32 grad_output");
  call(entry(fn), dlogits.get_device(), {dlogits.view(-1), gradOutput});
}

void scaleGradOp(int64_t fn, const at::Tensor &dlogits,
                 const at::Tensor &gradOutput) {
  scaleGrad(fn, dlogits, gradOutput.to(at::kFloat).contiguous());
}

/// The eager training call: the joint kernel in the forward, a scaling of
/// its gradient in the backward; per element (forwardFn >= 0) the loss in
/// the forward, the joint kernel with grad_output in the backward.
struct Loss : public torch::autograd::Function<Loss> {
  static torch::autograd::variable_list
  forward(torch::autograd::AutogradContext *ctx, at::Tensor logits,
          at::Tensor target, OptionalTensor weight, int64_t fn, int64_t scaleFn,
          int64_t scaleDtFn, bool reduced, bool convertZ, bool f32Loss,
          OptionalInt ignoreIndex, std::vector<double> scalars,
          int64_t forwardFn, bool inPlace) {
    at::AutoDispatchBelowADInplaceOrView guard;
    // In place (the caller checked that autograd allows it: dense logits
    // whose memory is an operation's result, not a leaf's), the gradient
    // goes into the logits' memory and their version is bumped, so any
    // other node that saved the logits for its backward refuses to run
    // instead of reading gradients.
    ctx->saved_data["in_place"] = inPlace;
    // An unused z-loss needs no zero gradient (no fill kernel).
    ctx->set_materialize_grads(false);
    if (forwardFn >= 0 && !reduced) {
      auto [loss, z] =
          run(forwardFn, logits, target, weight, reduced, convertZ, f32Loss,
              at::Tensor(), Scalars::get(ignoreIndex, scalars));
      ctx->save_for_backward(
          {logits, target, weight ? *weight : at::Tensor()});
      ctx->saved_data["fn"] = fn;
      ctx->saved_data["ignore_index"] = ignoreIndex;
      ctx->saved_data["scalars"] = scalars;
      // The joint library writes the loss in the forward's dtype too.
      ctx->saved_data["f32_loss"] = f32Loss;
      ctx->saved_data["deferred"] = true;
      ctx->mark_non_differentiable({z});
      return {loss, z};
    }
    ctx->saved_data["deferred"] = false;
    at::Tensor loss, z;
    if (inPlace) {
      std::tie(loss, z) =
          run(fn, logits, target, weight, reduced, convertZ, f32Loss, logits,
              Scalars::get(ignoreIndex, scalars));
      torch::autograd::impl::bump_version(logits);
      // Not a saved variable: its version has just changed on purpose.
      ctx->saved_data["dlogits"] = logits.detach();
    } else {
      at::Tensor dlogits;
      std::tie(loss, z, dlogits) =
          forwardWithGradOp(fn, logits, target, weight, reduced, convertZ,
                            f32Loss, ignoreIndex, scalars);
      ctx->save_for_backward({dlogits});
    }
    ctx->saved_data["scale_fn"] = scaleFn;
    ctx->saved_data["scale_dt_fn"] = scaleDtFn;
    ctx->saved_data["reduced"] = reduced;
    ctx->mark_non_differentiable({z});
    return {loss, z};
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list grads) {
    // One gradient per forward argument: the logits', then none.
    torch::autograd::variable_list result(13);
    at::Tensor g = grads[0];
    if (ctx->saved_data["deferred"].toBool()) {
      if (!g.defined())
        return result;
      auto saved = ctx->get_saved_variables();
      const at::Tensor &logits = saved[0];
      OptionalTensor weight;
      if (saved[2].defined())
        weight = saved[2];
      c10::IValue ii = ctx->saved_data["ignore_index"];
      OptionalInt ignoreIndex;
      if (!ii.isNone())
        ignoreIndex = ii.toInt();
      std::vector<double> scalars = ctx->saved_data["scalars"].toDoubleVector();
      bool inPlace = ctx->saved_data["in_place"].toBool();
      at::Tensor dlogits =
          inPlace ? logits
                  : at::empty(logits.sizes(), logits.options(),
                              at::MemoryFormat::Contiguous);
      run(ctx->saved_data["fn"].toInt(), logits, saved[1], weight,
          /*reduced=*/false, /*convertZ=*/false,
          ctx->saved_data["f32_loss"].toBool(), dlogits,
          Scalars::get(ignoreIndex, scalars),
          g.to(at::kFloat).contiguous());
      if (inPlace) {
        // Nodes that run later and saved the logits see the new version.
        torch::autograd::impl::bump_version(logits);
        dlogits = logits.detach();
      }
      result[0] = dlogits;
      return result;
    }
    at::Tensor dx = ctx->saved_data["in_place"].toBool()
                        ? ctx->saved_data["dlogits"].toTensor()
                        : ctx->get_saved_variables()[0];
    // The gradient is scaled in place and handed out: a second backward
    // through this node (retain_graph=True) would scale it again, and with
    // it the gradient the first one returned. Refused, not silently wrong.
    TORCH_CHECK(!ctx->saved_data.count("consumed"),
                "xent: a second backward through the same xent cross-entropy "
                "loss (retain_graph=True) is not supported: the first one "
                "scaled the gradient it kept in place. Call the loss again "
                "for another backward.");
    ctx->saved_data["consumed"] = true;
    if (g.defined()) {
      // The gradient is this node's own (never handed out before), so it
      // is scaled in place; a grad_output of 1 costs no pass over it.
      if (ctx->saved_data["reduced"].toBool()) {
        // grad_output in the gradient's dtype (that of the loss) goes to
        // the kernel as it is; another dtype through f32.
        int64_t scaleDt = ctx->saved_data["scale_dt_fn"].toInt();
        if (g.scalar_type() == dx.scalar_type() && scaleDt >= 0)
          call(entry(scaleDt), dx.get_device(), {dx.view(-1), g.contiguous()});
        else
          scaleGrad(ctx->saved_data["scale_fn"].toInt(), dx,
                    g.to(at::kFloat).contiguous());
      } else {
        at::Tensor factor = g.to(at::kFloat);
        if (dx.dim() > 1)
          factor = factor.unsqueeze(1);
        if (dx.scalar_type() != at::kFloat)
          factor = factor.to(dx.scalar_type());
        dx.mul_(factor);
      }
    } else {
      dx = at::Tensor();
    }
    result[0] = dx;
    return result;
  }
};

std::tuple<at::Tensor, at::Tensor>
lossAutograd(int64_t fn, int64_t scaleFn, int64_t scaleDtFn,
             const at::Tensor &logits, const at::Tensor &target,
             const OptionalTensor &weight, bool reduced, bool convertZ,
             bool f32Loss, const OptionalInt &ignoreIndex,
             c10::ArrayRef<double> scalars, int64_t forwardFn, bool inPlace) {
  auto outputs = Loss::apply(logits, target, weight, fn, scaleFn, scaleDtFn,
                             reduced, convertZ, f32Loss, ignoreIndex,
                             scalars.vec(), forwardFn, inPlace);
  return {outputs[0], outputs[1]};
}

/// `loss` below autograd (inference mode): the library without gradient
/// when given, else the joint kernel with the gradient dropped.
std::tuple<at::Tensor, at::Tensor>
lossOp(int64_t fn, int64_t /*scaleFn*/, int64_t /*scaleDtFn*/,
       const at::Tensor &logits, const at::Tensor &target,
       const OptionalTensor &weight, bool reduced, bool convertZ, bool f32Loss,
       const OptionalInt &ignoreIndex, c10::ArrayRef<double> scalars,
       int64_t forwardFn, bool /*inPlace: no gradient here*/) {
  if (forwardFn >= 0)
    return run(forwardFn, logits, target, weight, reduced, convertZ, f32Loss,
               at::Tensor(), Scalars::get(ignoreIndex, scalars));
  auto [loss, z, dlogits] =
      forwardWithGradOp(fn, logits, target, weight, reduced, convertZ, f32Loss,
                        ignoreIndex, scalars);
  return {loss, z};
}

} // namespace

/// Any entry point on the tensors as they are (the caller allocated the
/// outputs): the per-row outputs' path.
void callOp(int64_t fn, at::TensorList args, const OptionalInt &ignoreIndex,
            c10::ArrayRef<double> scalars) {
  TORCH_CHECK(!args.empty(), "xent_native::call takes at least one tensor");
  for (const at::Tensor &t : args)
    TORCH_CHECK(t.is_cuda() && t.get_device() == args[0].get_device(),
                "xent_native::call takes CUDA tensors on one device");
  call(entry(fn), args[0].get_device(), args,
       Scalars::get(ignoreIndex, scalars));
}

// The run-time values (libraries compiled with runtime scalars) are the
// last arguments of every call: ignore_index, and the f32 ones in the order
// label smoothing, z-loss scale, softcap (those present).
TORCH_LIBRARY(xent_native, m) {
  m.def("register(str runtime, str library, str function) -> int",
        &registerFunction);
  m.def("forward(int fn, Tensor logits, Tensor target, Tensor? weight, "
        "bool reduced, bool convert_z=True, bool f32_loss=False, int? "
        "ignore_index=None, float[] scalars=[]) "
        "-> (Tensor, Tensor)");
  m.def("forward_with_grad(int fn, Tensor logits, Tensor target, "
        "Tensor? weight, bool reduced, bool convert_z=True, "
        "bool f32_loss=False, int? ignore_index=None, float[] scalars=[]) -> "
        "(Tensor, Tensor, Tensor)");
  m.def("loss(int fn, int scale_fn, int scale_dt_fn, Tensor logits, "
        "Tensor target, Tensor? weight, bool reduced, bool convert_z=True, "
        "bool f32_loss=False, int? ignore_index=None, float[] scalars=[], "
        "int forward_fn=-1, bool in_place=False) -> (Tensor, Tensor)");
  m.def("scale_grad_(int fn, Tensor(a!) dlogits, Tensor grad_output) -> ()");
  m.def("call(int fn, Tensor(a!)[] args, int? ignore_index=None, float[] "
        "scalars=[]) -> ()");
}

TORCH_LIBRARY_IMPL(xent_native, CUDA, m) {
  m.impl("forward", &forwardOp);
  m.impl("forward_with_grad", &forwardWithGradOp);
  m.impl("loss", &lossOp);
  m.impl("scale_grad_", &scaleGradOp);
  m.impl("call", &callOp);
}

TORCH_LIBRARY_IMPL(xent_native, Autograd, m) { m.impl("loss", &lossAutograd); }
