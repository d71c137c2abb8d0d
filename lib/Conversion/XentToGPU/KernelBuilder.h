//===- KernelBuilder.h - Fused cross-entropy CUDA kernels -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The device side of the xent GPU lowering as the host side sees it: what a
// kernel computes (KernelSpec), how it is launched (LaunchGeometry, decided
// in LaunchGeometry.cpp), which arguments it takes in which order
// (RowKernelArgs, PrologueKernelArgs) and the builders of the gpu.func
// kernels (KernelBuilder.cpp). The kernels take the op's buffers in their own
// rank with any strides, one block per row (a row is one index of every dim
// but the class axis), and the loss's scalars (ignore_index, ε, z, softcap)
// as arguments.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H
#define XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H

#include "xent/Conversion/XentToGPU/XentToGPU.h"
#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

namespace mlir::xent {

/// What one row kernel computes, and the types of its buffers.
struct KernelSpec {
  CrossEntropyConfig config;
  Type logitsType;     // element type of logits (and dlogits)
  /// The element type of dlogits where it is not the logits' (the linear
  /// family's chunks: f32 logits, dlogits in the hidden states' bf16 / f16,
  /// written to a buffer of their own); null: the logits' type.
  Type dlogitsType;
  Type targetType;     // i32/i64 indices or the probabilities' float
  Type weightType;     // null when unweighted
  Type gradOutputType; // null when no gradient is computed
  Type lossType;       // null when no loss is written
  /// Set (to the logits' bf16 / f16) where the loss's type is chosen at run
  /// time: the row kernel then takes the loss in f32 (`loss`, lossType is
  /// f32) and in this type (`narrowLoss`), and writes the one the flag
  /// `lossIsNarrow` names; the host passes the op's buffer as that one and
  /// an unused empty one as the other. A loss in f32 and one in the logits'
  /// type then share their row kernel (convert-xent-to-gpu's
  /// runtime-dispatch).
  Type narrowLossType;
  Type zLossType;      // null when no z-loss is written
  // The per-row outputs (return_lse, return_argmax, return_accuracy), null
  // when not requested: lse per row (f32 or the logits' type), argmax per
  // row (i32 / i64), accuracy per row or reduced.
  Type lseType;
  Type argmaxType;
  Type accuracyType;
  bool withGrad = false;
  /// The row kernel finishes the reduced results itself: the row that
  /// counts itself last in the scratch writes them, in their types, from
  /// the f64 accumulators (no conversion kernel). The linear family's chunks
  /// (several launches over one set of accumulators) leave that to a
  /// conversion kernel after the last chunk.
  bool finalizes = true;
  /// The class axis is the innermost dim (no dim after it, or only static
  /// 1s): the kernels then read rows with vector loads when, at run time,
  /// its stride is 1 and the row is aligned.
  bool contiguousRows = false;
  /// The softcap is a run-time value that may be 0 (none) when the kernel
  /// runs: without runtime-dispatch, which launches the kernel without the
  /// softcap for that value.
  bool softcapMayBeOff = false;
  /// K, the per-row statistics' values per row (the op's layout,
  /// CrossEntropyConfig::getRowStatsWidth, whatever features a run-time
  /// variant drops); 0 without them.
  int64_t rowStatsWidth = 0;
  Type getDlogitsType() const { return dlogitsType ? dlogitsType : logitsType; }
  /// The forward writes the row's statistics (return_row_stats).
  bool writesRowStats() const { return rowStatsWidth > 0 && !withGrad; }
  /// The gradient takes merged statistics (row_stats): no walk over the row
  /// for them.
  bool readsRowStats() const { return rowStatsWidth > 0 && withGrad; }
  /// The logits hold the classes [class_offset, class_offset + c) of
  /// num_classes (both i64 arguments of the kernels).
  bool classSlice() const { return static_cast<bool>(config.classOffset); }
  int64_t rank() const { return config.logitsType.getRank(); }
  /// Rank of a per-row buffer (class-index target, per-row loss).
  int64_t rowRank() const { return rank() - 1; }
  /// Mean / sum: the loss, z-loss and accuracy are accumulated.
  bool reduced() const { return config.reduction != Reduction::none; }
  /// The prologue's kept weight / count (class-index targets under mean).
  bool needsStats() const {
    return config.reduction == Reduction::mean && !config.probabilityTargets;
  }
  /// Reduced results accumulate in the f64 scratch (ScratchSlot).
  bool accumulates() const {
    return reduced() && (lossType || zLossType || accuracyType);
  }
  /// The row kernel divides the row's terms by the divisors in the scratch
  /// (kWeightSlot, kCountSlot), which the prologue writes: the mean's (the
  /// kept weight and count, or the number of rows for probabilities) or 1
  /// for a sum. A sum and a mean thus share their row kernels.
  bool needsDivisors() const {
    return reduced() && (accumulates() || withGrad);
  }
  /// The scratch buffer: the divisors and the accumulators.
  bool needsScratch() const { return needsDivisors(); }
  /// The reduced results are kernel arguments (written by the last row and,
  /// with their initial values, by the prologue) or, with the accumulators
  /// alone, left to a conversion kernel.
  bool takesReducedResults() const { return reduced() && finalizes; }
  /// The statistics track the index of the row's max (argmax, accuracy).
  bool needsArgmax() const { return argmaxType || accuracyType; }
  /// The statistics sum Σ f and Σ f (m - x) over the row: the loss with
  /// label smoothing or probability targets; the gradient alone needs Σ w
  /// (smoothing with weights) or Σ w q' (probabilities).
  bool needsClassSums() const {
    return config.probabilityTargets ||
           (config.hasLabelSmoothing() && (lossType || weightType));
  }
  /// Label smoothing without class weights: Σ f is C and Σ (m - x) comes
  /// from one sum, Σ (x - r) (RowStatistics.cpp).
  bool classSumsFromOffsets() const {
    return needsClassSums() && !config.probabilityTargets && !weightType;
  }
  /// Components of the block reduction: max, Σexp, the class sums (or
  /// Σ (x - r)), the argmax.
  int64_t reduceComponents() const {
    return 2 + (needsClassSums() ? (classSumsFromOffsets() ? 1 : 2) : 0) +
           (needsArgmax() ? 1 : 0);
  }
};

/// Threads in a warp.
inline constexpr int64_t kLanes = 32;

/// The f64 scratch of an op's kernels, memref<kScratchSlots x f64>: the
/// prologue's kept weight and count (a mean over class indices), the
/// accumulators of the reduced results (the loss includes the z-loss, as
/// the op's loss does) and the rows that have added their part (the last
/// one writes the results, KernelSpec::finalizes). f64 sums keep a reduced
/// f32 loss exact to its rounding whatever the order of the atomics.
enum ScratchSlot : int64_t {
  kWeightSlot,
  kCountSlot,
  kLossSlot,
  kZLossSlot,
  kAccuracySlot,
  kRowsDoneSlot,
  kScratchSlots
};
/// The type of the scratch buffer.
MemRefType getScratchType(MLIRContext *ctx);

/// The launch geometry of every xent kernel, decided in one place
/// (LaunchGeometry.cpp).
struct LaunchGeometry {
  int64_t threads;     // per block, a multiple of 32
  int64_t vectorBytes; // bytes per vector load (16), 0 for scalar loads
  /// Gradient kernels may keep rows on chip across a thread-block cluster
  /// (sm_90+, option resident-rows).
  bool residentRows = false;
  /// Soft-capped narrow gradient walks form one exponential in this many
  /// (2, 4, 8; 0: none) on the FMA pipe (option split-exponentials).
  int64_t splitExponentials = 0;
  int64_t warps() const { return threads / kLanes; }
  /// Elements of `type` per vector load (1: scalar).
  int64_t vectorWidth(Type type) const {
    int64_t bytes = type.getIntOrFloatBitWidth() / 8;
    return vectorBytes >= 2 * bytes ? vectorBytes / bytes : 1;
  }
};
LaunchGeometry getLaunchGeometry(const ConvertXentToGPUOptions &options,
                                 Type logitsType);

/// Row-resident gradient kernels: a row is split over the blocks of a
/// thread-block cluster (one cluster per row), each block holds its slice on
/// chip — kStagedVectors 16-byte vectors per thread in shared memory (copied
/// with cp.async), the rest of kResidentVectors in registers — so the logits
/// are read once for the statistics and the gradient; the blocks exchange
/// their partial statistics through distributed shared memory.
constexpr int64_t kResidentVectors = 16;
constexpr int64_t kStagedVectors = 12;
constexpr int64_t kMaxClusterSize = 8;
/// The dynamic shared memory of a resident block: exchange slots
/// (kMaxClusterSize x 4 f32), the block reduction's scratch (4 x 32 f32),
/// then the staged vectors. Everything the resident path keeps in shared
/// memory is there: the dynamic region is not ordered with respect to the
/// kernel's static workgroup memory (it may overlap it).
constexpr int64_t kExchangeBytes = kMaxClusterSize * 4 * 4;
constexpr int64_t kReduceBytes = 4 * 32 * 4;
constexpr int64_t kStageOffset = kExchangeBytes + kReduceBytes;
/// Whether the row kernel of `spec` has the resident path (decided at
/// compile time; each row still takes it only when emitResidentClusterSize
/// is not 0 and its buffers allow 16-byte accesses).
bool hasResidentPath(const KernelSpec &spec, const LaunchGeometry &geometry);
/// Blocks per row of the resident path for rows of `numClasses`, or 0 when
/// the row is too short to gain from it (at most half of what one block
/// holds), too long to fit in kMaxClusterSize blocks, or when the gradient
/// `dlogits` is written over the logits `x` (their aligned pointers are
/// equal: the blocks of a cluster could overwrite logits that others still
/// read; the two-pass walk reads each logit before writing its gradient).
/// The host and the kernel both use it, so one kernel serves in place too.
Value emitResidentClusterSize(OpBuilder &b, Location loc, Value numClasses,
                              const KernelSpec &spec,
                              const LaunchGeometry &geometry, Value x,
                              Value dlogits);
/// Dynamic shared memory of a resident block, in bytes.
int64_t getResidentSharedMemoryBytes(const LaunchGeometry &geometry);

/// The non-null values of `members`, in order.
template <typename T, size_t N>
SmallVector<T> listPresent(std::array<const T *, N> members) {
  SmallVector<T> present;
  for (const T *member : members)
    if (*member)
      present.push_back(*member);
  return present;
}

/// The arguments of the row kernel by name: Values (the host's launch
/// operands, the kernel's block arguments) or Types (the kernel's signature);
/// absent ones are null. members() is the one place that fixes their order.
/// Every buffer but `scratch` has the type of getBufferType (dynamic sizes,
/// any strides and offset), the logits' rank R or R - 1 for per-row values
/// (class indices, per-row loss / grad_output); a reduced result is a 0-d
/// buffer of its own type (KernelSpec::takesReducedResults). The loss's scalars come last,
/// each when the kernel computes its feature (ignore_index for class
/// indices; label smoothing, z-loss, softcap when the config has them): the
/// host passes an arith.constant of the op's attribute or the op's run-time
/// operand, so one kernel serves every value.
template <typename T> struct RowKernelArgs {
  T x;          // [R]
  T target;     // class indices or [R] probabilities
  T weight;     // [C], when weighted
  T scratch;    // getScratchType, KernelSpec::needsScratch
  T gradOutput; // [] or, for the gradient
  T loss;       // [] or
  T narrowLoss; // [] or, KernelSpec::narrowLossType
  T zLoss;      // [] or
  T lse;        // return_lse
  T argmax;     // return_argmax
  T accuracy;   // [] or, return_accuracy
  T rowStats;   // x K f32: written (return_row_stats) or read
  T dlogits;    // [R], for the gradient
  T ignoreIndex;    // i64, class-index targets
  T labelSmoothing; // f32 ε, CrossEntropyConfig::hasLabelSmoothing
  T zLossScale;     // f32 z, CrossEntropyConfig::hasZLoss
  T softcap;        // f32 s, CrossEntropyConfig::hasSoftcap
  T classOffset;    // i64, KernelSpec::classSlice
  T numClasses;     // i64 (the whole row's C), KernelSpec::classSlice
  T lossIsNarrow;   // i1, KernelSpec::narrowLossType

  /// Pointers to every member of `self`, in the kernel's argument order.
  template <typename Self> static auto members(Self &self) {
    return std::array{&self.x,           &self.target,
                      &self.weight,      &self.scratch,
                      &self.gradOutput,  &self.loss,
                      &self.narrowLoss,  &self.zLoss,
                      &self.lse,         &self.argmax,
                      &self.accuracy,    &self.rowStats,
                      &self.dlogits,     &self.ignoreIndex,
                      &self.labelSmoothing, &self.zLossScale,
                      &self.softcap,     &self.classOffset,
                      &self.numClasses,  &self.lossIsNarrow};
  }
  /// The present arguments, in order.
  SmallVector<T> list() const { return listPresent(members(*this)); }
};

/// The arguments of the prologue (KernelSpec::needsScratch), like
/// RowKernelArgs: the reduced results when the row kernel takes them (the
/// prologue writes their initial values, which stand when there is no row);
/// ignore_index (i64) when it counts the kept rows (KernelSpec::needsStats),
/// and then for a class slice the logits (their class count), the slice's
/// offset and C (whose targets it keeps), and the merged statistics (w_t)
/// of a weighted gradient that reads them.
template <typename T> struct PrologueKernelArgs {
  T x;
  T target;
  T weight;
  T rowStats;
  T scratch;
  T loss;
  T zLoss;
  T accuracy;
  T ignoreIndex;
  T classOffset;
  T numClasses;

  /// Pointers to every member of `self`, in the kernel's argument order.
  template <typename Self> static auto members(Self &self) {
    return std::array{&self.x,           &self.target,     &self.weight,
                      &self.rowStats,    &self.scratch,    &self.loss,
                      &self.zLoss,       &self.accuracy,   &self.ignoreIndex,
                      &self.classOffset, &self.numClasses};
  }
  /// The present arguments, in order.
  SmallVector<T> list() const { return listPresent(members(*this)); }
};

/// The block arguments of a kernel whose signature is `types`, by name.
template <template <typename> class Args>
Args<Value> bindKernelArgs(const Args<Type> &types, ValueRange arguments) {
  Args<Value> values;
  auto next = arguments.begin();
  for (auto [type, value] : llvm::zip_equal(Args<Type>::members(types),
                                            Args<Value>::members(values)))
    if (*type)
      *value = *next++;
  assert(next == arguments.end() && "the signature has other arguments");
  return values;
}

/// The signatures of the kernels of `spec`.
RowKernelArgs<Type> getRowKernelArgTypes(MLIRContext *ctx,
                                         const KernelSpec &spec);
PrologueKernelArgs<Type> getPrologueKernelArgTypes(MLIRContext *ctx,
                                                   const KernelSpec &spec);

/// The kernels of `spec`, taking the arguments above. The convert kernel
/// takes the scratch and dst[] of a float type: dst = scratch[slot].
gpu::GPUFuncOp buildRowKernel(OpBuilder &b, Location loc, StringRef name,
                              const KernelSpec &spec,
                              const LaunchGeometry &geometry);
gpu::GPUFuncOp buildPrologueKernel(OpBuilder &b, Location loc, StringRef name,
                                   const KernelSpec &spec,
                                   const LaunchGeometry &geometry);
gpu::GPUFuncOp buildConvertKernel(OpBuilder &b, Location loc, StringRef name,
                                  Type dstType, ScratchSlot slot);

/// log(s) of an f32 s to about an ulp without libdevice: a short series
/// around the mantissa (lg2.approx where s is not normal and finite).
Value emitAccurateLogF32(ImplicitLocOpBuilder &b, Value s);
/// exp(x) of an f32 x as ex2.approx.ftz(x · log2 e): one MUFU op, no
/// libdevice. Pass a difference formed in f32 (x - m), not a folded one.
Value emitFastExpF32(ImplicitLocOpBuilder &b, Value x);
/// exp(x) of an f32 x <= 0 (or NaN) on the FMA pipe instead of the MUFU:
/// 2^j · P(f) with x·log2 e = j + f, |f| <= 1/2, P a degree-5 polynomial
/// (relative error 2.1e-7; ex2.approx.ftz.f32: 2^-22); 0 where x·log2 e <
/// -126.5 (as ex2.approx.ftz flushes), NaN for NaN.
Value emitExpOnFmaPipeF32(ImplicitLocOpBuilder &b, Value x);
/// log(x) of an f32 x as lg2.approx.ftz(x) · ln 2 (absolute error ~2^-22).
Value emitFastLogF32(ImplicitLocOpBuilder &b, Value x);
/// tanh(x) of an f32 x = sign(x) (1 - 2 / (exp(2|x|) + 1)) (ex2.approx and
/// rcp.approx), with its Taylor series near 0 where that form cancels.
Value emitAccurateTanhF32(ImplicitLocOpBuilder &b, Value x);
/// Two partial (max, Σ exp(x - max)) pairs of one row as one (BlockReduce.cpp):
/// the max NaN-propagating, each sum scaled by exp(m_k - m), exactly 1 where
/// m_k is the max (-inf included).
std::pair<Value, Value> combineMaxSumF32(ImplicitLocOpBuilder &b, Value m1,
                                         Value s1, Value m2, Value s2);

/// memref<?x...x?xT, strided<[?, ...], offset: ?>> of `rank` dims: the type
/// of every buffer a kernel takes from the host, so that views with any
/// strides (a slice of a padded vocabulary, shifted labels) reach the
/// kernels without a copy.
MemRefType getBufferType(MLIRContext *ctx, int64_t rank, Type elementType);

} // namespace mlir::xent

#endif // XENT_LIB_CONVERSION_XENTTOGPU_KERNELBUILDER_H
