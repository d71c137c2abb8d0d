//===- KernelEmitter.h - Emits the bodies of the xent kernels ---*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The emitter that the kernel builder's files share. The row kernel, per
// block (one row: an index of every dim of the logits but the class axis, the
// block id delinearized over those dims; every buffer is read through its
// strides, so views reach the kernel uncopied):
//
//   1. emitRowStatistics (RowStatistics.cpp): each thread walks classes
//      c = tid, tid + T, ... keeping a running max m and Σ exp(x - m) (online
//      softmax), and, for label smoothing / probability targets, Σ f_c and
//      Σ f_c (m - x_c) with f_c = w_c or w_c q'_c (relative to the running
//      max, rebased like Σexp when it grows: every term is >= 0, so nothing
//      cancels whatever the logits' magnitude).
//   2. emitBlockAllReduce (BlockReduce.cpp): warp butterflies (gpu.shuffle
//      xor) and one round through workgroup memory give every thread the
//      row's totals.
//   3. emitRowBody (KernelBuilder.cpp): the row's loss terms, differences
//      from the max first and log Σ added last ((m - x_t) + log Σ: a loss is
//      not quantized to the spacing of m); thread 0 writes them (none) or
//      adds them to the f64 accumulators of the scratch with an atomic
//      (mean / sum), counts its row done, and the row that counts last
//      writes the reduced results (emitFinalize).
//   4. emitGradientPass (GradientPass.cpp): a second walk over the row writes
//      dlogits from exp(x - m) (the difference taken in f32 before the
//      exponent is scaled by log2 e) times per-row coefficients / Σ.
//
// Steps 1 and 4 go over the row through a RowWalk, chosen once per row
// path: the two-pass walk (TwoPassRows.cpp) reads the logits from memory in
// both; on the resident path (ResidentRows.cpp) the blocks of a cluster
// share a row: step 1 reads each block's slice once into shared memory and
// registers, step 2 continues across the cluster, and step 4 writes the
// gradient from the on-chip copy.
//
// What a step computes it returns (RowStats, TargetInfo,
// GradientCoefficients) and the next step takes; the emitter's members are
// the kernel's arguments and coordinates, bound once (KernelArgs,
// KernelCoordinates).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_KERNELEMITTER_H
#define XENT_LIB_CONVERSION_XENTTOGPU_KERNELEMITTER_H

#include "KernelBuilder.h"

#include "xent/Dialect/Xent/IR/LossMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>
#include <optional>

namespace mlir::xent {

inline constexpr int64_t kMaxWarps = 32;
/// Components reduced across the block at once: max, Σexp, Σf, Σf·(m - x),
/// the argmax (KernelSpec::reduceComponents).
inline constexpr int64_t kMaxComponents = 5;
/// The resident path has no class sums: at most max, Σexp, argmax, in its
/// scratch and in each block's cluster exchange slots.
inline constexpr int64_t kResidentComponents = 4;
static_assert(kResidentComponents * kMaxWarps * 4 == kReduceBytes,
              "the resident path keeps the reduction scratch in kReduceBytes");
static_assert(kExchangeBytes == kMaxClusterSize * kResidentComponents * 4,
              "one exchange slot per resident component and block");
/// 16-byte loads each thread issues before using the first.
inline constexpr int64_t kUnroll = 4;

/// NVVM approximations that MLIR's NVVM dialect has no typed op for, called
/// by intrinsic name (rcp.approx has one: NVVM::RcpApproxFtzF32Op).
inline constexpr StringLiteral kEx2ApproxFtzF32 = "llvm.nvvm.ex2.approx.ftz.f";
inline constexpr StringLiteral kLg2ApproxFtzF32 = "llvm.nvvm.lg2.approx.ftz.f";

/// How the components of a reduction combine (BlockReduce.cpp): values[0],
/// values[1] as an online-softmax pair (else every component is summed), the
/// mass Σf and Σf·(max - x) relative to values[0] and the index of
/// values[0] at their slots (-1: absent).
struct ReductionPlan {
  bool maxSumPair = true;
  int64_t massSlot = -1, gapSlot = -1, argmaxSlot = -1;
  /// Σ (x - r) over the row (a plain sum), r = `offsetReference`, the same
  /// value in every thread of the row (emitRowStatistics).
  int64_t offsetSumSlot = -1;
  Value offsetReference;
  /// Every component summed.
  static ReductionPlan sums() {
    ReductionPlan plan;
    plan.maxSumPair = false;
    return plan;
  }
};

/// The statistics of the row (f32, identical in every thread after the
/// reduction): max m, Σ exp(x - m), Σ f, Σ f (m - x), log Σ exp(x - m),
/// lse = m + that, and the index (i32) of the max. Null where the kernel
/// does not need them.
struct RowStats {
  Value max, sumExp, mass, gap, logSumExp, lse, argmax;
};

/// The class-index target of the row: the i64 value, whether it is kept and
/// in range, a safe index, and x_t where it is read before the statistics'
/// last barrier (the two-pass walk: before any thread writes dlogits, which
/// may be the logits' buffer). Empty for probability targets.
/// With per-row statistics or a class slice also `owned`, whether the
/// row's classes hold the kept, valid target (its index then local to the
/// slice); and `weight`, w_t where it comes from merged statistics instead
/// of the weight buffer (null: loadWeight(index)).
struct TargetInfo {
  Value value, kept, valid, index, logit, owned, weight;
};

/// What a reduction divides the row's loss and z-loss by (f32): for a mean
/// the kept weight and the kept count, or the number of rows for
/// probability targets; 1 for a sum.
struct Divisors {
  Value weight, count;
};

/// Per-row coefficients of the gradient (emitGradientCoefficients):
/// grad_c = scale·exp(x_c - m) - mass·f_c, and at the target
/// targetTerm (p_t - 1) + mass (smoothMass p_t - targetWeight) + zTerm p_t.
/// `scale` carries the softmax's 1 / Σ. Null where absent.
struct GradientCoefficients {
  Value scale, mass, targetTerm, targetWeight, smoothMass, zTerm;
};

/// One class of a row as a walk hands it to the per-element math: its index
/// `c`, its logit `x` as the loss sees it (f32, soft-capped; null where the
/// walk does not read the logits), the tanh `t` with x = s·t where the
/// vector walk keeps it (splitsGradientExponentials; else null), and its
/// `lane` in the 16-byte vector it came from (-1 from a scalar walk).
struct RowElement {
  Value c, x, t;
  int64_t lane = -1;
};

/// The arguments of a kernel by role, and what each thread derives from the
/// loss's scalars once (null where the kernel does not take or need them).
struct KernelArgs {
  Value x, target, weight, scratch, gradOutput, loss, zLoss, dlogits;
  /// The loss in the logits' type and the flag that picks it
  /// (KernelSpec::narrowLossType).
  Value narrowLoss, lossIsNarrow;
  Value lse, argmax, accuracy;
  /// ignore_index (i64), ε, z and the softcap s (f32).
  Value ignoreIndex, smoothing, zScale, softcap;
  /// 1 / s, 1 - ε, ε / C.
  Value invSoftcap, keepShare, smoothShare;
  /// Whether a run-time softcap is 0 (none), where the kernel may get that
  /// value (KernelSpec::softcapMayBeOff).
  Value softcapOff;
  /// The block reduction's workgroup memref<kMaxComponents x kMaxWarps x f32>.
  Value reduceScratch;
  /// The per-row statistics (written or read; KernelSpec::rowStatsWidth),
  /// and a class slice's first class (i64).
  Value rowStats, classOffset;
};

/// Where the thread and its row are: `tid` (thread in block), its lane and
/// warp, C (numClasses, and as f32), the number of rows and `rowIdx`, the
/// block's row (its index in every dim but the class axis). The classes of
/// the whole row (i64, f32): num_classes for a class slice, else C.
struct KernelCoordinates {
  Value tid, lane, warp, numClasses, numClassesF, numRows;
  Value globalClasses, globalClassesF;
  SmallVector<Value> rowIdx;
};

/// Emits the body of one kernel.
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, const KernelSpec &spec,
                const LaunchGeometry &geometry)
      : b(b), spec(spec), config(spec.config), geometry(geometry),
        f32(b.getF32Type()) {}

  // Kernels (KernelBuilder.cpp).
  void emitRowKernel(gpu::GPUFuncOp func);
  void emitPrologueKernel(gpu::GPUFuncOp func);

  /// How the row kernel goes over its row for the statistics and the
  /// gradient: one object per row path, chosen once.
  class RowWalk {
  public:
    explicit RowWalk(KernelEmitter &e) : e(e) {}
    virtual ~RowWalk() = default;
    /// Per-thread statistics over the row, from `init`.
    virtual SmallVector<Value> emitPartialStatistics(ArrayRef<Value> init,
                                                     const ReductionPlan &plan) = 0;
    /// The row's totals of per-thread `partial` values, in every thread.
    virtual SmallVector<Value> emitAllReduce(ArrayRef<Value> partial,
                                             const ReductionPlan &plan) = 0;
    /// Writes fn(element) to dlogits over the row (the element without its
    /// logit where `readLogits` is false).
    virtual void emitRowWrite(bool readLogits,
                              function_ref<Value(const RowElement &)> fn) = 0;
    /// Whether this thread, thread 0 of its block when `isThread0`, writes
    /// the row's results.
    virtual Value emitIsRowWriter(Value isThread0) = 0;
    /// Whether the thread `writer` (thread 0 of its block) rewrites the
    /// target's element `index` after the row.
    virtual Value emitWritesTarget(Value writer, Value index) = 0;
    /// Whether dlogits may be the logits' own buffer: x_t is then read
    /// before the statistics' last barrier, and a single warp waits before
    /// it writes.
    virtual bool mayWriteInPlace() const = 0;

  protected:
    KernelEmitter &e;
  };
  class TwoPassWalk;
  class ResidentWalk;
  /// The kernels' LossMath (LossMath.h).
  class KernelMath;

private:
  //===--------------------------------------------------------------------===//
  // Scalars
  //===--------------------------------------------------------------------===//

  Value cstF(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value cstIdx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value toF32(Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(b, f32, v);
  }
  Value fromF32(Value v, Type type) {
    if (type.isF32())
      return v;
    return arith::TruncFOp::create(b, type, v);
  }
  Value select(Value c, Value t, Value f) {
    return arith::SelectOp::create(b, c, t, f);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  /// 1 / x as rcp.approx (at most 1 ulp off): one MUFU op where a division
  /// rounded to nearest takes a Newton iteration and a slow path.
  Value rcp(Value x) { return NVVM::RcpApproxFtzF32Op::create(b, f32, x); }
  /// exp(x) as ex2.approx(x · log2 e): one MUFU op, no libdevice. Callers
  /// pass a difference already formed in f32 (x - m), never fold the
  /// subtraction into the scaling: x·log2e - m·log2e rounds at the spacing
  /// of m·log2e and costs the gradient its accuracy at large logits.
  Value exp(Value x) { return emitFastExpF32(b, x); }
  Value exp2(Value x) { return callIntrinsic(kEx2ApproxFtzF32, x); }
  /// log(x) as lg2.approx(x) · ln 2 (absolute error ~2^-22: too coarse for
  /// log Σ near 1, see emitAccurateLog).
  Value log(Value x) { return emitFastLogF32(b, x); }
  Value callIntrinsic(StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(b, f32, b.getStringAttr(name),
                                         ValueRange{x})
        .getResult(0);
  }
  Value indexToF32(Value i) {
    Value i64 = arith::IndexCastUIOp::create(b, b.getI64Type(), i);
    return arith::UIToFPOp::create(b, f32, i64);
  }
  Value toF64(Value v) { return arith::ExtFOp::create(b, b.getF64Type(), v); }
  Value cstF64(double v) {
    return arith::ConstantOp::create(b, b.getF64FloatAttr(v));
  }

  //===--------------------------------------------------------------------===//
  // Per-element math (ElementMath.cpp)
  //===--------------------------------------------------------------------===//

  /// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)), with its Taylor series
  /// near 0 where that form cancels.
  Value tanh(Value x);
  /// tanh(x) as the hardware's tanh.approx.f32 (relative error < 2^-10.9):
  /// for narrow logits only.
  Value fastTanh(Value x);
  /// A logit as the loss sees it: widened to f32 and soft-capped
  /// (loss::softcapLogit; `tanh` receives tanh(x / s) where it is given and
  /// the softcap cannot be a run-time 0).
  Value emitLogit(Value raw, Value *tanh = nullptr);
  /// Whether the gradient walk keeps each logit's tanh and forms one
  /// exponential in geometry.splitExponentials on the FMA pipe (option
  /// split-exponentials): a narrow (bf16 / f16) soft-capped row, whose tanh
  /// and exp per element in each walk keep the MUFU as busy as the copy
  /// takes.
  bool splitsGradientExponentials() const {
    return geometry.splitExponentials > 0 && args.softcap &&
           !args.softcapOff && !spec.logitsType.isF32();
  }
  /// 1 - (x / cap)² at the capped logit x (loss::softcapSlope).
  Value emitSoftcapSlope(Value capped);
  /// Smoothed probability target q·(1-ε) + ε/C
  /// (loss::smoothedProbability).
  Value emitSmoothedProbability(Value q);
  /// log(s) to about an ulp for a positive normal finite s (frexp-style
  /// split, log1p of the mantissa by a short series; once per row, so its
  /// cost does not matter), lg2.approx for anything else (inf, NaN, 0).
  /// The loss needs it: log Σ with Σ = 1 + r is the whole loss of a
  /// confident row, and lg2.approx's absolute error there is ~100 times the
  /// f32 spacing of r.
  Value emitAccurateLog(Value s);

  //===--------------------------------------------------------------------===//
  // Rows of the buffers (RowAccess.cpp)
  //===--------------------------------------------------------------------===//

  /// Row `row` (< emitRowCount) as an index of every dim of `buffer` but
  /// `skip` (the class axis, or -1 for a per-row buffer), row-major.
  SmallVector<Value> emitDelinearize(Value row, Value buffer, int64_t skip);
  /// The number of rows: the product of the dims of `buffer` but `skip`.
  Value emitRowCount(Value buffer, int64_t skip);
  /// The index of class `c` of the row in a buffer of the logits' rank.
  SmallVector<Value> rowIndex(Value c) {
    SmallVector<Value> index(at.rowIdx);
    index.insert(index.begin() + config.axis, c);
    return index;
  }
  /// The linear offset of the row's class 0 in `buffer` (logits' rank).
  Value emitRowOffset(Value buffer,
                      memref::ExtractStridedMetadataOp meta = nullptr);
  /// The row of `buffer` as memref<C x T, strided<[1], offset: ?>>, for
  /// vector loads along the classes: only valid where emitCanVectorize
  /// found the class stride to be 1.
  Value rowVectorView(Value buffer);
  /// A 1-D unit-stride view of `buffer` (described by `meta`) from element
  /// `offset`, `size` elements long: rowVectorView's row, the weights.
  Value unitStrideView(Value buffer, memref::ExtractStridedMetadataOp meta,
                       Value offset, Value size);
  /// `ok` and whether elements of `buffer` `stride` apart from element
  /// `offset` are side by side (stride 1) from a start aligned to `width`
  /// elements (emitCanVectorize's check of one buffer).
  Value emitIsAlignedUnitStride(Value ok, Value buffer, Value stride,
                                Value offset, int64_t width);
  /// True (uniformly in the block) when rows can be read with aligned
  /// vector loads from every buffer in `buffers`.
  Value emitCanVectorize(ArrayRef<Value> buffers, int64_t width);
  /// A 16-byte load of the row view `row` at class `c`, or zeros when
  /// `inside` is false (past the row's end).
  Value emitGuardedVectorLoad(VectorType type, Value row, Value c, Value inside,
                              int64_t width);
  /// One step of the two-pass vector walks: kUnroll 16-byte vectors of the
  /// row view `row` starting at c0, c0 + chunk, ... (no loads when `row` is
  /// null), all issued before any is used; `inside` says which exist.
  struct UnrolledStep {
    SmallVector<Value> starts, inside, vecs;
  };
  UnrolledStep emitUnrolledLoads(Value row, Value c0, int64_t chunk,
                                 int64_t width);
  /// The start of an unrolled step's vector `u` as its lanes' per-class
  /// reads (probability targets, class weights) take it: class 0 for a
  /// vector past the row's end (a whole one: rows take vectors when C is a
  /// multiple of their width), whose results are discarded, so that those
  /// reads stay within the row.
  Value inRowStart(const UnrolledStep &step, int64_t u) {
    return select(step.inside[u], step.starts[u], cstIdx(0));
  }
  /// The classes of the `width` elements of a vector starting at class
  /// `start`, and (when `vec` is given) its logits as the loss sees them.
  void unpackVector(Value start, Value vec, int64_t width,
                    SmallVectorImpl<Value> &cs, SmallVectorImpl<Value> &xs);
  /// The same as RowElements (with each logit's tanh where it has one).
  SmallVector<RowElement> unpackElements(Value start, Value vec,
                                         int64_t width);
  /// Loads the row's logit of class `c` as the loss sees it.
  Value loadLogit(Value c) {
    return emitLogit(memref::LoadOp::create(b, args.x, rowIndex(c)));
  }
  /// The target's probability q_c of class `c` (raw, in the target's
  /// type): from the vector read beside the logits' (bindClassVectors), else
  /// one scalar load.
  Value loadTargetProbability(Value c) {
    if (Value q = stepTargets.lookup(c))
      return q;
    return memref::LoadOp::create(b, args.target, rowIndex(c));
  }
  /// The per-class operands a walk reads beside each logit: the probability
  /// targets (rows of the logits' shape) and, where every class's weight
  /// enters (label smoothing or probabilities, with class weights), the
  /// weights. The vector walks read them as vectors beside the logits' (one
  /// 16-byte load per vector of the logits, not a scalar load per class).
  bool readsTargetPerClass() const { return config.probabilityTargets; }
  bool readsWeightPerClass() const {
    return args.weight &&
           (config.probabilityTargets || config.hasLabelSmoothing());
  }
  /// Unit-stride views of the per-class operands read (null where not).
  struct ClassViews {
    Value target, weight;
  };
  ClassViews emitClassViews();
  /// emitCanVectorize of `buffers` and of the per-class operands read: the
  /// target's row as the logits', the weights with stride 1 from a start
  /// aligned to one vector.
  Value emitCanVectorizeRow(SmallVector<Value> buffers, int64_t width);
  /// One vector of each per-class operand read, classes start ... start +
  /// width - 1 (zeros where !inside).
  struct ClassVectors {
    Value target, weight;
  };
  ClassVectors emitClassVectors(const ClassViews &views, Value start,
                                Value inside, int64_t width);
  /// emitClassVectors at each start of an unrolled step.
  SmallVector<ClassVectors> emitClassVectors(const ClassViews &views,
                                             const UnrolledStep &step,
                                             int64_t width);
  /// Maps the classes `cs` of one unpacked vector to the elements of
  /// `vectors` for loadTargetProbability / loadWeight, until the next bind
  /// or clearClassVectors.
  void bindClassVectors(ArrayRef<Value> cs, const ClassVectors &vectors);
  void clearClassVectors() {
    stepTargets.clear();
    stepWeights.clear();
  }
  /// x_t of a class-index row: the one read first, else read here.
  Value getTargetLogit(const TargetInfo &t) {
    return t.logit ? t.logit : loadLogit(t.index);
  }
  Value loadWeight(Value c) {
    if (!args.weight)
      return cstF(1.0);
    if (Value w = stepWeights.lookup(c))
      return toF32(w);
    return toF32(memref::LoadOp::create(b, args.weight, ValueRange{c}));
  }

  //===--------------------------------------------------------------------===//
  // Reductions (BlockReduce.cpp)
  //===--------------------------------------------------------------------===//

  /// (m1, s1) ⊕ (m2, s2) of the online softmax.
  std::pair<Value, Value> combineMaxSum(Value m1, Value s1, Value m2, Value s2);
  /// A sum Σ f (mk - x) of mass Σ f rebased to the larger max m:
  /// gap + mass (m - mk), exactly gap when mk is m or the mass is 0 (also
  /// when mk is -inf).
  Value rebaseGap(Value gap, Value mass, Value mk, Value m);
  /// Whether (x2, i2) is the better argmax candidate than (x1, i1): the
  /// larger value, NaN above every number, the smaller index on ties (as
  /// torch.argmax: the first largest, the first NaN). Indices are i32.
  Value emitArgmaxBeats(Value x2, Value i2, Value x1, Value i1);
  /// Combines two sets of partial totals as `plan` says.
  SmallVector<Value> combine(ArrayRef<Value> a, ArrayRef<Value> c,
                             const ReductionPlan &plan);
  /// What component `k` of a reduction is when a side has nothing.
  Value reductionIdentity(int64_t k, const ReductionPlan &plan);
  /// Component values through f32 scratch memory (the i32 argmax by
  /// bitcast) and back.
  Value toScratch(Value v);
  Value fromScratch(Value v, int64_t k, const ReductionPlan &plan);
  /// Combines `values` across the warp with xor butterflies.
  SmallVector<Value> emitWarpAllReduce(ArrayRef<Value> values,
                                       const ReductionPlan &plan);
  /// Combines `values` across the block through the workgroup memref
  /// `scratch` (at least values.size() x kMaxWarps f32); every thread gets
  /// the totals.
  SmallVector<Value> emitBlockAllReduce(ArrayRef<Value> values,
                                        const ReductionPlan &plan,
                                        Value scratch);

  //===--------------------------------------------------------------------===//
  // Row statistics (RowStatistics.cpp)
  //===--------------------------------------------------------------------===//

  /// Statistics over the row (per thread through `walk`), then across the
  /// block (and the cluster on the resident path).
  RowStats emitRowStatistics(RowWalk &walk);
  /// One step of the per-thread statistics over the logits `xs` of classes
  /// `cs` (consecutive), from the accumulators `acc`.
  SmallVector<Value> emitStatisticsStep(ArrayRef<Value> cs, ArrayRef<Value> xs,
                                        ValueRange acc,
                                        const ReductionPlan &plan);

  //===--------------------------------------------------------------------===//
  // Gradient (GradientPass.cpp)
  //===--------------------------------------------------------------------===//

  /// The gradient pass over the row.
  void emitGradientPass(RowWalk &walk, const RowStats &stats,
                        const TargetInfo &target,
                        std::optional<Divisors> preloaded);
  /// The row's gradient coefficients from the scales `g` (loss) and `gz`
  /// (z-loss) of its terms.
  GradientCoefficients emitGradientCoefficients(const RowStats &stats,
                                                const TargetInfo &target,
                                                Value g, Value gz);
  /// dlogits of the row's element `el` (its capped logit in f32).
  Value emitGradientElement(const RowElement &el, const RowStats &stats,
                            const GradientCoefficients &coef);
  /// dlogits of the target's own element.
  Value emitTargetGradient(Value xt, const RowStats &stats,
                           const GradientCoefficients &coef);
  /// The divisors (f32, from the scratch; KernelSpec::needsDivisors), or
  /// `preloaded` where the kernel read them before the row.
  Divisors emitDivisors(std::optional<Divisors> preloaded = std::nullopt);

  //===--------------------------------------------------------------------===//
  // Kernels (KernelBuilder.cpp)
  //===--------------------------------------------------------------------===//

  /// Binds the arguments both kernels take (RowKernelArgs,
  /// PrologueKernelArgs) and the block reduction's scratch of `func`.
  template <typename Args>
  void bindSharedArgs(gpu::GPUFuncOp func, const Args &kernelArgs) {
    args.target = kernelArgs.target;
    args.weight = kernelArgs.weight;
    args.scratch = kernelArgs.scratch;
    args.loss = kernelArgs.loss;
    args.zLoss = kernelArgs.zLoss;
    args.accuracy = kernelArgs.accuracy;
    args.ignoreIndex = kernelArgs.ignoreIndex;
    args.reduceScratch = func.getWorkgroupAttributions()[0];
  }
  /// Binds the thread's coordinates shared by both kernels (tid, lane,
  /// warp).
  void bindThread();
  /// The row kernel's loss scalars (its arguments), and what each thread
  /// derives from them once: 1 / s, 1 - ε and ε / C (after numClassesF).
  void bindScalars(const RowKernelArgs<Value> &kernelArgs);
  /// The class-index target of the row.
  TargetInfo emitTarget();
  /// The class-index target `t` (as loaded) of a row, as the kernel's
  /// class slice and statistics see it (emitTarget; the prologue's count).
  TargetInfo emitTargetOf(Value t);
  /// Binds at.globalClasses(F) (after at.numClasses, when the kernel reads
  /// the logits) from the kernel's `numClasses` argument of a class slice.
  void bindGlobalClasses(Value numClassesArg);
  /// The index of value `j` of the statistics of the row at `rowIdx`.
  SmallVector<Value> rowStatIndex(ArrayRef<Value> rowIdx, int64_t j) {
    SmallVector<Value> index(rowIdx);
    index.push_back(cstIdx(j));
    return index;
  }
  /// Value `j` of the statistics of the row at `rowIdx`.
  Value loadRowStat(ArrayRef<Value> rowIdx, int64_t j);
  /// The row's statistics from the merged ones (KernelSpec::readsRowStats):
  /// m, Σ and, with weighted label smoothing, Σ w.
  RowStats emitMergedRowStats();
  /// Writes the row's statistics (KernelSpec::writesRowStats): m, Σ, x_t
  /// (-inf where the row's classes do not hold the target), [w_t], [Σ w
  /// (m - x), Σ w].
  void emitRowStatsOutput(Value isWriter, const RowStats &stats,
                          const TargetInfo &target);
  /// Statistics, loss and gradient of the block's row (after the target).
  void emitRowBody(RowWalk &walk, TargetInfo target,
                   std::optional<Divisors> preloaded);
  /// The row's loss (and its z-loss term), written or accumulated by
  /// `isWriter`.
  void emitRowLoss(Value isWriter, const RowStats &stats,
                   const TargetInfo &target,
                   std::optional<Divisors> preloaded);
  /// The per-row outputs of the row: lse, argmax, accuracy (written by
  /// `isWriter`; accuracy added to its accumulator for mean / sum).
  void emitRowOutputs(Value isWriter, const RowStats &stats,
                      const TargetInfo &target,
                      std::optional<Divisors> preloaded);
  /// The f32 `part` divided by `divisor` (f32: a mean's kept weight or
  /// count, N for probabilities, 1 for a sum; emitDivisors), in f64.
  Value emitShare(Value part, Value divisor);
  /// Adds the f64 `v` to the accumulator `slot` of the scratch (an atomic);
  /// returns the value before.
  Value emitAccumulate(Value v, ScratchSlot slot);
  /// Stores the f64 `v` into the 0-d reduced result `result` (none when
  /// null), rounded to its type (f32, bf16, f16).
  void emitStoreReduced(Value result, Value v);
  /// `store` of the loss into its buffer: `loss`, or where its type is
  /// chosen at run time (KernelSpec::narrowLossType) the one `lossIsNarrow`
  /// names.
  void emitStoreLoss(function_ref<void(Value)> store);
  /// The writer of each row, after its parts are added: counts the row done
  /// and, where it is the last one, writes the reduced results from the
  /// accumulators (KernelSpec::finalizes).
  void emitFinalize(Value isWriter);

  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  const CrossEntropyConfig &config;
  const LaunchGeometry &geometry;
  Type f32;
  /// Bound once, before the kernel's body (emitRowKernel,
  /// emitPrologueKernel).
  KernelArgs args;
  KernelCoordinates at;
  /// Class index → the target's probability and the class's weight, for
  /// the vector being walked (bindClassVectors).
  DenseMap<Value, Value> stepTargets, stepWeights;
};

/// The loss formulas (LossMath.h) in the kernels: the NVVM approximations,
/// and the loss's scalars as the kernel's arguments and what each thread
/// derives from them once (1 / s, 1 - ε, ε / C).
class KernelEmitter::KernelMath final : public loss::LossMath {
public:
  explicit KernelMath(KernelEmitter &e) : LossMath(e.b, e.b.getLoc()), e(e) {}
  /// f32 logits: the accurate form (KernelEmitter::tanh). bf16 / f16
  /// logits: the hardware tanh (tanh.approx.f32, one MUFU op, relative
  /// error below 2^-10.9), finer than the input's own spacing (2^-8 for
  /// bf16, 2^-11 for f16, where PyTorch rounds tanh's result to the input
  /// dtype).
  Value tanh(Value x) override {
    return e.spec.logitsType.isF32() ? e.tanh(x) : e.fastTanh(x);
  }
  Value overSoftcap(Value x) override { return e.mul(x, e.args.invSoftcap); }
  Value softcap() override { return e.args.softcap; }
  /// A run-time softcap of 0 is none (without runtime-dispatch the kernel
  /// gets that value).
  Value softcapOff() override { return e.args.softcapOff; }
  Value keepShare() override { return e.args.keepShare; }
  Value smoothShare() override { return e.args.smoothShare; }
  Value zLossScale() override { return e.args.zScale; }

private:
  KernelEmitter &e;
};

/// The two-pass walk (TwoPassRows.cpp): the statistics read the row from
/// memory, the gradient reads it again; scalar or 16-byte vector accesses
/// as the row's strides and alignment allow (checked at run time).
class KernelEmitter::TwoPassWalk final : public KernelEmitter::RowWalk {
public:
  using RowWalk::RowWalk;
  SmallVector<Value> emitPartialStatistics(ArrayRef<Value> init,
                                           const ReductionPlan &plan) override;
  SmallVector<Value> emitAllReduce(ArrayRef<Value> partial,
                                   const ReductionPlan &plan) override;
  void emitRowWrite(bool readLogits,
                    function_ref<Value(const RowElement &)> fn) override;
  Value emitIsRowWriter(Value isThread0) override { return isThread0; }
  Value emitWritesTarget(Value writer, Value index) override { return writer; }
  bool mayWriteInPlace() const override { return true; }
};

/// The resident walk (ResidentRows.cpp, hasResidentPath): block
/// `clusterRank` of `clusterSize` holds vectors [sliceBegin, sliceEnd) of
/// the row, read once through the row view `logitsRow`; vector k of this
/// thread starts at class `starts[k]` and exists when `valid[k]`; `regs[k]`
/// holds it for k >= kStagedVectors, the others are in `stagedVectors`
/// (dynamic shared memory, next to the cluster's `exchangeSlots` and the
/// block reduction's `reduceScratch`).
class KernelEmitter::ResidentWalk final : public KernelEmitter::RowWalk {
public:
  ResidentWalk(KernelEmitter &e, Value clusterRank, Value clusterSize)
      : RowWalk(e), clusterRank(clusterRank), clusterSize(clusterSize) {}
  /// Loads the block's slice of the row (cp.async into shared memory, the
  /// rest into registers) and returns the per-thread statistics over it.
  SmallVector<Value> emitPartialStatistics(ArrayRef<Value> init,
                                           const ReductionPlan &plan) override;
  /// The block's totals, then the cluster's.
  SmallVector<Value> emitAllReduce(ArrayRef<Value> partial,
                                   const ReductionPlan &plan) override;
  /// From registers / shared memory: no second read of the logits.
  void emitRowWrite(bool readLogits,
                    function_ref<Value(const RowElement &)> fn) override;
  /// Thread 0 of block 0 of the cluster.
  Value emitIsRowWriter(Value isThread0) override;
  /// The block whose slice holds the target.
  Value emitWritesTarget(Value writer, Value index) override;
  bool mayWriteInPlace() const override { return false; }

private:
  /// Combines the blocks' totals across the cluster through distributed
  /// shared memory; every block gets the row's totals.
  SmallVector<Value> emitClusterAllReduce(ArrayRef<Value> totals,
                                          const ReductionPlan &plan);
  /// The `k`-th vector of this thread's slice.
  Value loadVector(int64_t k);

  Value clusterRank, clusterSize;
  Value sliceBegin, sliceEnd, logitsRow;
  Value stagedVectors, exchangeSlots, reduceScratch;
  SmallVector<Value> starts, valid, regs;
};

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_KERNELEMITTER_H
