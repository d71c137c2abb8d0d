//===- Passes.td - Xent conversion passes ------------------*- tablegen -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_CONVERSION_PASSES_TD
#define XENT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertXentToGPU : Pass<"convert-xent-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower xent ops to fused CUDA kernels in the gpu dialect";
  let description = [{
    Replaces every `xent.cross_entropy`, `xent.cross_entropy_grad` and
    `xent.cross_entropy_and_grad` by `gpu.launch_func` of kernels generated
    into a `gpu.module @xent_kernels` written with the gpu dialect
    (thread/block ids, `gpu.shuffle` butterflies, `gpu.barrier`, workgroup
    memory), `memref`, `arith`, `math` and `scf`.

    One thread block handles one row (the C logits of one element): a first
    pass over the row keeps a running maximum and sum of exponentials (online
    softmax) and the smoothing / probability sums; the block combines them
    with warp shuffles and workgroup memory; the row's loss is added to the
    reduced loss with an atomic (or written per element for `none`); when the
    op is the gradient, a second pass writes `dlogits`. For `mean` and `sum`, a
    one-block prologue kernel leaves in a scratch buffer what the rows divide
    by (for `mean` the kept weights and counts, summed on the device: never
    a device→host copy; 1 for `sum`) and initializes the accumulators, so
    that a mean and a sum share their row kernel. A kernel identical to one
    the module already holds (another op's, or another variant's) is not
    built again: the launches name the one kernel.

    With `resident-rows` (default) on sm_90 and newer, gradient kernels
    without per-class terms (no label smoothing, probability targets or
    softcap) read the logits once: each row is split over a thread-block
    cluster of up to 8 blocks (`gpu.launch_func ... clusters in`), each block
    copies its slice on chip (`nvgpu.device_async_copy` into dynamic shared
    memory, plus registers), the blocks exchange their statistics through
    distributed shared memory (`nvvm.mapa`, cluster barriers), and the
    gradient is written from the on-chip copy. Rows at most half as long as
    one block holds, longer than 8 blocks hold, or not 16-byte accessible,
    and a gradient written over the logits (`dlogits` at the logits'
    address, which the kernel and the host compare) take the two-pass walk
    of the same kernel, which reads each logit before writing its gradient.

    `xent.linear_cross_entropy`, `xent.linear_cross_entropy_grad` and
    `xent.linear_cross_entropy_and_grad` become one `xent.launch` each whose
    body loops over chunks of rows (`linear-chunk-rows`, or the most multiples
    of 128 rows whose f32 logits fit in `linear-chunk-mib`): the chunk's
    logits `hidden · weightᵀ (+ bias)` in f32, the row kernel in place over
    them (loss into the op's accumulators or rows, with the prologue's
    statistics of all rows, and dlogits over the logits), then
    `d_hidden = dlogits · weight` and `d_weight += dlogitsᵀ · hidden`,
    `d_bias += 1ᵀ · dlogits` in f32. The products are calls of the runtime's
    `xentGemm*` functions (cuBLASLt, f32 accumulation), declared in the
    module, whose arguments say which operand is transposed and the beta;
    for bf16/f16 the chunk's dlogits are rounded to that type for them.

    Each op becomes an `xent.launch` whose body launches its kernels on the
    buffers of its tensors; one-shot bufferization (run after this pass)
    decides where each buffer comes from, through the launch's
    `BufferizableOpInterface`: results get device memory (`gpu.alloc`); a
    result whose only use is `bufferization.materialize_in_destination` into
    a writable, restrict buffer is written there directly; the gradient
    reuses the logits' buffer when the analysis finds that in place (nothing
    reads the logits afterwards, their buffer is writable and dense) and
    the kernel allows it (not a joint op on the resident path). The host code
    expects every buffer to be device memory.

    `mode` picks the lowering of each op, like a composite that is promoted
    where a kernel exists and inlined elsewhere: `auto` (the default) takes
    the kernel where it can take the op and the decomposition (the op's
    region, or the canonical one: linalg/tensor/arith/math on tensors, as
    `xent-inline-decomposition` inlines it) elsewhere; `kernel` takes the
    kernel for every op, and an op it cannot take is an error that says
    why; `inline` takes the decomposition for every op. The kernels take
    every verified configuration in host code; they cannot be launched from
    device code (an op inside `gpu.module`, `gpu.func` or `gpu.launch`) nor
    generated without an enclosing `builtin.module`. The decomposition of an
    op in host code computes on host tensors, and one in device code is
    linalg in a kernel: a pipeline that lowers only the kernels to the
    device sets `allow-decomposition=false` to make an op that would take
    the decomposition an error (as `xent-gpu-pipeline` does), instead of
    host loops over device memory.

    Each op reports the path it took and why as an optimization remark of
    category `convert-xent-to-gpu`: `passed` (name `kernel`, with the names
    of the kernels it launches) or `missed` (name `decomposition`), with the
    reason (the mode, or why the kernels cannot take the op). They are off
    unless the remark engine is on, e.g.
    `xent-opt --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark`.

    The rewrite is `populateXentToGPUConversionPatterns`
    (`xent/Conversion/XentToGPU/XentToGPU.h`), which other drivers can use
    with the same options; the pass applies it as a partial conversion in
    which every xent op is illegal, in program order.

    With `runtime-dispatch`, one op serves every call of its signature as
    fast as a kernel specialized for the call: the op's kernels are built in
    the variants a call can need and the host code picks one per call from
    what it only knows then.
    - The row length: a gradient kernel on the resident path runs with 256
      threads per block where two blocks hold the row (at most 8192 16-byte
      vectors; four blocks per SM keep more rows in flight), else with
      `threads`.
    - The run-time values of `label_smoothing` and `softcap` (SSA
      operands): where a value is 0 the kernel without that feature runs,
      which computes the op exactly (a run-time softcap of 0 is no softcap,
      see `xent.cross_entropy`); z-loss and `ignore_index` cost nothing per
      element and are always arguments.

    Example: `xent-opt --convert-xent-to-gpu="threads=256"` on

    ```mlir
    %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
    ```

    gives an `xent.launch` of two `gpu.launch_func` (prologue and row
    kernel) and the kernels.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "NVIDIA chip the kernels are tuned for (sm_80 or newer)">,
    Option<"threads", "threads", "int64_t", /*default=*/"512",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "Elements loaded per thread and iteration (0: 16 bytes' worth)">,
    Option<"residentRows", "resident-rows", "bool", /*default=*/"true",
           "Gradient kernels keep each row on chip (sm_90+: a cluster of "
           "blocks per row), reading the logits once">,
    Option<"splitExponentials", "split-exponentials", "int64_t",
           /*default=*/"0",
           "Soft-capped bf16 / f16 gradient walks form one exponential in N "
           "(2, 4 or 8) on the FMA pipe (a polynomial) instead of the MUFU "
           "and keep each logit's tanh for its slope (0: none)">,
    Option<"runtimeDispatch", "runtime-dispatch", "bool",
           /*default=*/"false",
           "The host code picks each call's kernel at run time: 256 threads "
           "per block for rows that two resident blocks hold (else "
           "`threads`), the kernels without label smoothing / softcap where "
           "their run-time value is 0">,
    Option<"mode", "mode", "::mlir::xent::LoweringMode",
           /*default=*/"::mlir::xent::LoweringMode::Auto",
           "Per op, the kernel or the decomposition: auto (the kernel where "
           "it can take the op), kernel (always; an error where it cannot) "
           "or inline (always the decomposition)",
           "::mlir::xent::getLoweringModeValues()">,
    Option<"linearChunkRows", "linear-chunk-rows", "int64_t",
           /*default=*/"0",
           "Rows per chunk of a linear cross-entropy op (0: as many as "
           "linear-chunk-mib allows)">,
    Option<"linearChunkMiB", "linear-chunk-mib", "int64_t",
           /*default=*/"1024",
           "With linear-chunk-rows=0, the most rows (a multiple of 128, at "
           "least 128) whose f32 logits fit in this many MiB">,
    Option<"linearTiles", "linear-tiles", "bool", /*default=*/"true",
           "On sm_90a, the loss of a linear op without gradients from tile "
           "kernels (warpgroup MMA, TMA) that never write the logits, where "
           "the op and its buffers allow (false: always the row chunks)">,
    Option<"linearTileCluster", "linear-tile-cluster", "int64_t",
           /*default=*/"1",
           "Blocks per cluster of the linear tile kernel: 1, or 2 (adjacent "
           "row tiles; each block loads half of the weight tile and "
           "multicasts it to both)">,
    Option<"allowDecomposition", "allow-decomposition", "bool",
           /*default=*/"true",
           "Ops may take the decomposition (false: an op that would is an "
           "error, for pipelines that lower only the kernels to the device)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def XentCompressGPUBinaries
    : Pass<"xent-compress-gpu-binaries", "::mlir::ModuleOp"> {
  let summary = "Compress the cubins of gpu.binary ops into fatbins";
  let description = [{
    Replaces every cubin object (`#gpu.object` of format `bin` for an NVVM
    target) of the module's `gpu.binary` ops by a fatbin holding it
    compressed, made by the CUDA toolkit's `fatbinary --compress-all` (the
    toolkit of `ptxas`: `$CUDA_ROOT`, `$CUDA_HOME`, `$CUDA_PATH`, `PATH`, or
    `/usr/local/cuda`). The driver's `cuModuleLoadData` takes the fatbin and
    decompresses the image when it loads it, so the host code and the
    runtime are unchanged; a library of many kernels is about a tenth of
    its size. Objects of other formats are left as they are.

    `xent-gpu-pipeline` runs it for `format=bin` unless `compress=false`.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"default\"",
           "fatbinary's --compress-mode: default, size, speed or balance">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def XentHostComputeToDevice
    : Pass<"xent-host-compute-to-device", "::mlir::ModuleOp"> {
  let summary = "Run the host code's buffer computations on the device";
  let description = [{
    In `xent-gpu-pipeline` a function's buffers are device memory: its
    arguments are the caller's device buffers, its results device memory
    that the caller owns. Whatever a program computes beside its xent ops
    (a frontend's label remapping, a mean's division, a one-hot mapping:
    what `xent-recognize` leaves around the op it raised) bufferizes to host
    code over those buffers. This pass, run on bufferized IR, moves it to
    the device, in the same stream-ordered chain as the kernels:

    * every linalg op of a host function becomes a kernel: its parallel
      loops as one loop over their whole iteration space (the last one
      fastest), in blocks of `threads` threads along x (`scf.parallel`,
      tiled, for `gpu-map-parallel-loops` and
      `convert-parallel-loops-to-gpu`), its reduction loops inside each
      thread; one without parallel loops runs in one thread, an empty one
      launches one block that does nothing;
    * `memref.alloc` becomes `gpu.alloc` (freed by `gpu.dealloc` after its
      last use when it does not leave the function), `memref.dealloc`
      `gpu.dealloc`, `memref.copy` `gpu.memcpy`; a host constant
      (`memref.get_global`) that a kernel reads is copied to the device;
    * any other read or write of a buffer on the host is an error naming
      the op (it would read device memory from the CPU).
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Threads per block of the kernels made from host loops">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect",
  ];
}

#endif // XENT_CONVERSION_PASSES_TD
