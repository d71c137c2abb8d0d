//===- KernelBuilder.cpp - Fused cross-entropy CUDA kernels ---------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The row kernel, per block (one row: an index of every dim of the logits
// but the class axis, the block id delinearized over those dims; every
// buffer is read through its strides, so views reach the kernel uncopied):
//
//   1. emitRowStatistics: each thread walks classes c = tid, tid + T, ...
//      keeping a running max m and Σ exp(x - m) (online softmax), and, for
//      label smoothing / probability targets, Σ f_c and Σ f_c (x_c - x_0)
//      with f_c = w_c or w_c q'_c (relative to the row's first logit so
//      that large logits do not cancel).
//   2. emitBlockAllReduce: warp butterflies (gpu.shuffle xor) and one round
//      through workgroup memory give every thread the row's totals.
//   3. the row's loss terms; thread 0 writes them (none) or adds them to
//      the f32 accumulators with an atomic (mean / sum).
//   4. emitGradientPass: a second walk over the row writes dlogits.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "xent/Conversion/XentToGPU/NVIDIAChip.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::xent;

static constexpr int64_t kLanes = 32;
static constexpr int64_t kMaxWarps = 32;
/// Components reduced across the block at once: max, Σexp, Σf, Σf·(x - x0).
static constexpr int64_t kMaxComponents = 4;
static_assert(kMaxComponents * kMaxWarps * 4 == kReduceBytes,
              "the resident path keeps the reduction scratch in kReduceBytes");
/// 16-byte loads each thread issues before using the first.
static constexpr int64_t kUnroll = 4;

LaunchGeometry mlir::xent::getLaunchGeometry(const ConvertXentToGPUOptions &options,
                                             Type logitsType) {
  int64_t threads = options.threads;
  threads = std::max<int64_t>(kLanes, std::min<int64_t>(1024, threads));
  threads = (threads / kLanes) * kLanes;
  // 16-byte loads by default; vector-width=N asks for N elements per load.
  int64_t bytes = logitsType.getIntOrFloatBitWidth() / 8;
  int64_t vectorBytes = 16;
  if (options.vectorWidth > 0)
    vectorBytes = options.vectorWidth * bytes;
  if (vectorBytes > 16 || vectorBytes < 2 * bytes ||
      !llvm::isPowerOf2_64(vectorBytes))
    vectorBytes = 0;
  std::optional<NVIDIAChip> chip = NVIDIAChip::parse(options.chip);
  bool clusters = chip && chip->hasClusters();
  return {threads, vectorBytes, options.residentRows && clusters};
}

bool mlir::xent::hasResidentPath(const KernelSpec &spec,
                                 const LaunchGeometry &geometry) {
  // 16-byte accesses of the whole row (cp.async copies 16 bytes). Not with
  // per-class terms (label smoothing, probability targets) or the softcap:
  // their work per element does not fit the registers of the resident
  // path (ptxas spills hundreds of bytes, even at 128 registers); those
  // keep the two-pass kernel.
  const CrossEntropyConfig &config = spec.config;
  bool light = !config.probabilityTargets && config.labelSmoothing == 0.0f &&
               !config.softcap;
  return light && spec.withGrad && spec.contiguousRows &&
         geometry.residentRows && geometry.vectorBytes == 16 &&
         geometry.vectorWidth(spec.logitsType) > 1;
}

Value mlir::xent::emitResidentClusterSize(OpBuilder &b, Location loc,
                                          Value numClasses,
                                          const KernelSpec &spec,
                                          const LaunchGeometry &geometry) {
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t width = geometry.vectorWidth(spec.logitsType);
  Value vectors = arith::CeilDivUIOp::create(b, loc, numClasses, cst(width));
  Value need = arith::CeilDivUIOp::create(
      b, loc, vectors, cst(kResidentVectors * geometry.threads));
  // More than half of what one block holds: shorter rows keep the two-pass
  // kernel, whose blocks do not reserve the staging memory (more rows in
  // flight per SM; measured on the H200: bf16 at V = 32768, half a block,
  // 72 % of copy two-pass against 67 % resident; at V = 65536, one full
  // block, 68 % against 88 %).
  Value longEnough =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, vectors,
                            cst(kResidentVectors * geometry.threads / 2));
  Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, need,
                                     cst(kMaxClusterSize));
  Value ok = arith::AndIOp::create(b, loc, longEnough, fits);
  return arith::SelectOp::create(b, loc, ok, need, cst(0));
}

int64_t mlir::xent::getResidentSharedMemoryBytes(
    const LaunchGeometry &geometry) {
  return kStageOffset + kStagedVectors * geometry.threads * 16;
}

MemRefType mlir::xent::getBufferType(MLIRContext *ctx, int64_t rank,
                                     Type elementType) {
  int64_t d = ShapedType::kDynamic;
  SmallVector<int64_t> dynamic(rank, d);
  return MemRefType::get(dynamic, elementType,
                         StridedLayoutAttr::get(ctx, d, dynamic));
}

namespace {

/// Emits the body of one kernel. Values named in the kernel's terms: `tid`
/// (thread in block), `rowIdx` (the block's row: its index in every dim but
/// the class axis), C (numClasses).
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, const KernelSpec &spec,
                const LaunchGeometry &geometry)
      : b(b), spec(spec), config(spec.config), geometry(geometry),
        f32(b.getF32Type()) {}

  void emitRowKernel(gpu::GPUFuncOp func);
  void emitPrologueKernel(gpu::GPUFuncOp func);

private:
  // Scalars.
  Value cstF(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value cstIdx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value cstI32(int32_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
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
  /// exp(x) as ex2.approx(x · log2 e): one MUFU op, no libdevice.
  Value exp(Value x) { return exp2(mul(x, cstF(M_LOG2E))); }
  Value exp2(Value x) { return callIntrinsic("llvm.nvvm.ex2.approx.ftz.f", x); }
  /// log(x) as lg2.approx(x) · ln 2.
  Value log(Value x) {
    return mul(callIntrinsic("llvm.nvvm.lg2.approx.ftz.f", x), cstF(M_LN2));
  }
  /// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)), with its Taylor series
  /// near 0 where that form cancels.
  Value tanh(Value x);
  Value callIntrinsic(StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(b, f32, b.getStringAttr(name),
                                         ValueRange{x})
        .getResult(0);
  }
  Value indexToF32(Value i) {
    Value i64 = arith::IndexCastUIOp::create(b, b.getI64Type(), i);
    return arith::UIToFPOp::create(b, f32, i64);
  }

  /// A logit as the loss sees it: widened to f32 and soft-capped.
  Value emitLogit(Value raw);
  /// 1 - (x / cap)² at the capped logit x.
  Value emitSoftcapSlope(Value capped);
  /// Smoothed probability target q·(1-ε) + ε/C.
  Value emitSmoothedProbability(Value q);
  /// (m1, s1) ⊕ (m2, s2) of the online softmax.
  std::pair<Value, Value> combineMaxSum(Value m1, Value s1, Value m2,
                                        Value s2);
  /// Combines `values` across the warp with xor butterflies.
  SmallVector<Value> emitWarpAllReduce(ArrayRef<Value> values);
  /// Combines `values` across the block; every thread gets the totals.
  /// values[0], values[1] are an online-softmax pair when `withMaxSum`;
  /// the others are summed.
  SmallVector<Value> emitBlockAllReduce(ArrayRef<Value> values);
  SmallVector<Value> combine(ArrayRef<Value> a, ArrayRef<Value> b);
  /// Statistics over the row (per thread), then across the block.
  void emitRowStatistics();
  /// One step of the per-thread statistics over the logits `xs` of classes
  /// `cs` (consecutive), from the accumulators `acc`.
  SmallVector<Value> emitStatisticsStep(ArrayRef<Value> cs,
                                        ArrayRef<Value> xs, ValueRange acc);
  /// dlogits of class `c` whose capped logit is `xc` (f32).
  Value emitGradientElement(Value c, Value xc);
  /// True (uniformly in the block) when rows can be read with aligned
  /// vector loads from every buffer in `buffers`.
  Value emitCanVectorize(ArrayRef<Value> buffers, int64_t width);
  /// A 16-byte load of the row view `row` at class `c`, or zeros when
  /// `inside` is false (past the row's end).
  Value emitGuardedVectorLoad(VectorType type, Value row, Value c,
                              Value inside, int64_t width) {
    auto ifOp = scf::IfOp::create(b, TypeRange{type}, inside,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value v = vector::LoadOp::create(
        b, type, row, ValueRange{c}, /*nontemporal=*/false,
        llvm::MaybeAlign(width * type.getElementTypeBitWidth() / 8));
    scf::YieldOp::create(b, v);
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value zeros = arith::ConstantOp::create(
        b, type, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
    scf::YieldOp::create(b, zeros);
    return ifOp.getResult(0);
  }
  /// One step of the two-pass vector walks: kUnroll 16-byte vectors of the
  /// row view `row` starting at c0, c0 + chunk, ... (no loads when `row` is
  /// null), all issued before any is used; `inside` says which exist.
  struct UnrolledStep {
    SmallVector<Value> starts, inside, vecs;
  };
  UnrolledStep emitUnrolledLoads(Value row, Value c0, int64_t chunk,
                                 int64_t width) {
    auto vecType = VectorType::get({width}, spec.logitsType);
    UnrolledStep step;
    for (int64_t u = 0; u < kUnroll; ++u) {
      Value cu = arith::AddIOp::create(b, c0, cstIdx(u * chunk));
      step.starts.push_back(cu);
      step.inside.push_back(
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, cu, numClasses));
      step.vecs.push_back(row ? emitGuardedVectorLoad(vecType, row, cu,
                                                      step.inside.back(), width)
                              : Value());
    }
    return step;
  }
  /// The classes of the `width` elements of a vector starting at class
  /// `start`, and (when `vec` is given) its logits as the loss sees them.
  void unpackVector(Value start, Value vec, int64_t width,
                    SmallVectorImpl<Value> &cs, SmallVectorImpl<Value> &xs) {
    for (int64_t e = 0; e < width; ++e) {
      cs.push_back(arith::AddIOp::create(b, start, cstIdx(e)));
      xs.push_back(vec ? emitLogit(vector::ExtractOp::create(b, vec, e))
                       : Value());
    }
  }
  /// The index of class `c` of the row in a buffer of the logits' rank.
  SmallVector<Value> rowIndex(Value c) {
    SmallVector<Value> index(rowIdx);
    index.insert(index.begin() + config.axis, c);
    return index;
  }
  /// The linear offset of the row's class 0 in `buffer` (logits' rank).
  Value emitRowOffset(Value buffer,
                      memref::ExtractStridedMetadataOp meta = nullptr) {
    if (!meta)
      meta = memref::ExtractStridedMetadataOp::create(b, buffer);
    Value offset = meta.getOffset();
    for (auto [k, idx] : llvm::enumerate(rowIdx)) {
      int64_t d = static_cast<int64_t>(k) < config.axis ? k : k + 1;
      offset = arith::AddIOp::create(
          b, offset, arith::MulIOp::create(b, idx, meta.getStrides()[d]));
    }
    return offset;
  }
  /// The row of `buffer` as memref<C x T, strided<[1], offset: ?>>, for
  /// vector loads along the classes: only valid where emitCanVectorize
  /// found the class stride to be 1.
  Value rowVectorView(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    auto viewType = MemRefType::get(
        {ShapedType::kDynamic}, type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}));
    auto meta = memref::ExtractStridedMetadataOp::create(b, buffer);
    return memref::ReinterpretCastOp::create(
        b, viewType, meta.getBaseBuffer(),
        OpFoldResult(emitRowOffset(buffer, meta)),
        ArrayRef<OpFoldResult>{OpFoldResult(numClasses)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  /// Row `row` (< emitRowCount) as an index of every dim of `buffer` but
  /// `skip` (the class axis, or -1 for a per-row buffer), row-major.
  SmallVector<Value> emitDelinearize(Value row, Value buffer, int64_t skip);
  /// The number of rows: the product of the dims of `buffer` but `skip`.
  Value emitRowCount(Value buffer, int64_t skip);
  /// Per-row gradient coefficients (emitGradientPass).
  Value gradScale, gradMass;
  /// Statistics, loss and gradient of the block's row (after the target).
  void emitRowBody();
  /// Resident path: loads the block's slice of the row (cp.async into
  /// shared memory, the rest into registers) and returns the per-thread
  /// statistics over it.
  SmallVector<Value> emitResidentStatistics(ArrayRef<Value> init);
  /// Resident path: combines the blocks' totals across the cluster through
  /// distributed shared memory; every block gets the row's totals.
  SmallVector<Value> emitClusterAllReduce(ArrayRef<Value> totals);
  /// Resident path: the `k`-th vector of this thread's slice.
  Value loadResidentVector(int64_t k);
  /// The gradient pass over the row.
  void emitGradientPass();

  /// Loads the row's logit of class `c` as the loss sees it.
  Value loadLogit(Value c) {
    return emitLogit(memref::LoadOp::create(b, x, rowIndex(c)));
  }
  Value loadWeight(Value c) {
    if (!weight)
      return cstF(1.0);
    return toF32(memref::LoadOp::create(b, weight, ValueRange{c}));
  }

  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  const CrossEntropyConfig &config;
  const LaunchGeometry &geometry;
  Type f32;
  bool maxSumPair = true;

  // Kernel arguments and shared values.
  Value x, target, weight, stats, gradOutput, loss, zLoss, dlogits;
  Value shared; // workgroup memref<kMaxComponents x kMaxWarps x f32>
  Value tid, lane, warp, numClasses, numClassesF, numRows;
  SmallVector<Value> rowIdx; // the row's index in every dim but the axis
  // Row statistics (f32, identical in every thread after the reduction).
  Value rowMax, rowSumExp, rowMass, rowGap, reference, lse;
  // Class-index target of the row.
  Value kept, valid, targetIndex;
  // Resident path (hasResidentPath): block `rank` of `clusterSize` holds
  // vectors [resLo, resHi) of the row; vector k of this thread starts at
  // class resStart[k] and exists when resValid[k]; resRegs[k] holds it for
  // k >= kStagedVectors; the others are in `stage` (workgroup memory).
  bool resident = false;
  Value rank, clusterSize, resLo, resHi, stage, exchange, xRow;
  SmallVector<Value> resStart, resValid, resRegs;
};

} // namespace

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

Value KernelEmitter::emitLogit(Value raw) {
  Value v = toF32(raw);
  if (!config.softcap)
    return v;
  Value cap = cstF(*config.softcap);
  return mul(cap, tanh(div(v, cap)));
}

Value KernelEmitter::tanh(Value x) {
  // abs / copysign by compare and select: their math ops would call
  // libdevice.
  Value negative =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, cstF(0.0));
  Value ax = select(negative, arith::NegFOp::create(b, x), x);
  Value e = exp(mul(ax, cstF(2.0)));
  Value far = sub(cstF(1.0), div(cstF(2.0), add(e, cstF(1.0))));
  far = select(negative, arith::NegFOp::create(b, far), far);
  // x - x³/3 + 2x⁵/15 - 17x⁷/315 for |x| < 1/16 (error below 1e-10).
  Value x2 = mul(x, x);
  Value poly = add(cstF(2.0 / 15.0), mul(x2, cstF(-17.0 / 315.0)));
  poly = add(cstF(-1.0 / 3.0), mul(x2, poly));
  poly = add(cstF(1.0), mul(x2, poly));
  Value near = mul(x, poly);
  Value small =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, ax, cstF(0.0625));
  return select(small, near, far);
}

Value KernelEmitter::emitSoftcapSlope(Value capped) {
  Value t = div(capped, cstF(*config.softcap));
  return sub(cstF(1.0), mul(t, t));
}

Value KernelEmitter::emitSmoothedProbability(Value q) {
  q = toF32(q);
  if (config.labelSmoothing == 0.0f)
    return q;
  return add(mul(q, cstF(1.0 - config.labelSmoothing)),
             div(cstF(config.labelSmoothing), numClassesF));
}

std::pair<Value, Value> KernelEmitter::combineMaxSum(Value m1, Value s1,
                                                     Value m2, Value s2) {
  Value m = arith::MaximumFOp::create(b, m1, m2);
  // exp(m_k - m), exactly 1 when m_k is the maximum (also -inf == -inf).
  auto factor = [&](Value mk) {
    Value same =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mk, m);
    return select(same, cstF(1.0), exp(sub(mk, m)));
  };
  Value s = add(mul(s1, factor(m1)), mul(s2, factor(m2)));
  return {m, s};
}

SmallVector<Value> KernelEmitter::combine(ArrayRef<Value> a,
                                          ArrayRef<Value> c) {
  SmallVector<Value> result;
  unsigned first = 0;
  if (maxSumPair) {
    auto [m, s] = combineMaxSum(a[0], a[1], c[0], c[1]);
    result = {m, s};
    first = 2;
  }
  for (unsigned k = first; k < a.size(); ++k)
    result.push_back(add(a[k], c[k]));
  return result;
}

SmallVector<Value> KernelEmitter::emitWarpAllReduce(ArrayRef<Value> values) {
  SmallVector<Value> acc(values);
  for (int32_t offset = kLanes / 2; offset > 0; offset /= 2) {
    SmallVector<Value> other;
    for (Value v : acc)
      other.push_back(gpu::ShuffleOp::create(b, v, offset, kLanes,
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
    acc = combine(acc, other);
  }
  return acc;
}

SmallVector<Value> KernelEmitter::emitBlockAllReduce(ArrayRef<Value> values) {
  SmallVector<Value> partial = emitWarpAllReduce(values);
  if (geometry.warps() == 1)
    return partial;
  // Lane 0 of each warp publishes its warp's partial results.
  Value isLane0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                        cstIdx(0));
  auto ifOp = scf::IfOp::create(b, isLane0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (auto [k, v] : llvm::enumerate(partial))
      memref::StoreOp::create(b, v, shared,
                              ValueRange{cstIdx(k), warp});
  }
  gpu::BarrierOp::create(b);
  // Every warp combines the published partials.
  Value hasPartial = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                           cstIdx(geometry.warps()));
  SmallVector<Value> gathered;
  for (auto [k, v] : llvm::enumerate(partial)) {
    Value identity = cstF(maxSumPair && k == 0
                              ? -std::numeric_limits<double>::infinity()
                              : 0.0);
    Value slot = select(hasPartial, lane, cstIdx(0));
    Value loaded =
        memref::LoadOp::create(b, shared, ValueRange{cstIdx(k), slot});
    gathered.push_back(select(hasPartial, loaded, identity));
  }
  SmallVector<Value> total = emitWarpAllReduce(gathered);
  // The workgroup memory may be reused by the next reduction.
  gpu::BarrierOp::create(b);
  return total;
}

SmallVector<Value> KernelEmitter::emitDelinearize(Value row, Value buffer,
                                                  int64_t skip) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < cast<MemRefType>(buffer.getType()).getRank(); ++d)
    if (d != skip)
      dims.push_back(d);
  SmallVector<Value> index(dims.size());
  // Innermost dim first: index_d = rest mod size_d, rest /= size_d; the
  // outermost takes the rest (row < count, so no size is 0 here).
  Value rest = row;
  for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k > 0; --k) {
    Value size = memref::DimOp::create(b, buffer, dims[k]);
    index[k] = arith::RemUIOp::create(b, rest, size);
    rest = arith::DivUIOp::create(b, rest, size);
  }
  if (!dims.empty())
    index[0] = rest;
  return index;
}

Value KernelEmitter::emitRowCount(Value buffer, int64_t skip) {
  Value count = cstIdx(1);
  for (int64_t d = 0; d < cast<MemRefType>(buffer.getType()).getRank(); ++d)
    if (d != skip)
      count = arith::MulIOp::create(b, count,
                                    memref::DimOp::create(b, buffer, d));
  return count;
}

//===----------------------------------------------------------------------===//
// Row statistics
//===----------------------------------------------------------------------===//

SmallVector<Value> KernelEmitter::emitStatisticsStep(ArrayRef<Value> cs,
                                                     ArrayRef<Value> xs,
                                                     ValueRange acc) {
  bool probs = config.probabilityTargets;
  bool extras = acc.size() > 2;
  // Online softmax: rescale the running sum once per step, then add the
  // step's exponentials relative to the new maximum.
  Value stepMax = xs[0];
  for (Value x : xs.drop_front())
    stepMax = arith::MaximumFOp::create(b, stepMax, x);
  Value m = arith::MaximumFOp::create(b, acc[0], stepMax);
  Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, acc[0], m);
  Value s = mul(acc[1], select(same, cstF(1.0), exp(sub(acc[0], m))));
  for (Value x : xs)
    s = add(s, exp(sub(x, m)));
  SmallVector<Value> next = {m, s};
  if (extras) {
    Value mass = acc[2], gap = acc[3];
    for (auto [c, x] : llvm::zip(cs, xs)) {
      Value f = loadWeight(c);
      if (probs)
        f = mul(f, emitSmoothedProbability(memref::LoadOp::create(
                       b, target, rowIndex(c))));
      mass = add(mass, f);
      gap = add(gap, mul(f, sub(x, reference)));
    }
    next.push_back(mass);
    next.push_back(gap);
  }
  return next;
}

Value KernelEmitter::emitCanVectorize(ArrayRef<Value> buffers, int64_t width) {
  Value divisible = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, numClasses, cstIdx(width)), cstIdx(0));
  Value ok = divisible;
  for (Value buffer : buffers) {
    // Classes side by side (stride 1) from a 16-byte aligned row start.
    auto type = cast<MemRefType>(buffer.getType());
    int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
    auto meta = memref::ExtractStridedMetadataOp::create(b, buffer);
    ok = arith::AndIOp::create(
        b, ok,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                              meta.getStrides()[config.axis], cstIdx(1)));
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, buffer);
    Value start = arith::AddIOp::create(
        b, ptr,
        arith::MulIOp::create(b, emitRowOffset(buffer), cstIdx(bytes)));
    Value aligned = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, start, cstIdx(width * bytes)), cstIdx(0));
    ok = arith::AndIOp::create(b, ok, aligned);
  }
  return ok;
}

void KernelEmitter::emitRowStatistics() {
  bool probs = config.probabilityTargets;
  bool smoothing = config.labelSmoothing != 0.0f;
  bool extras = probs || (smoothing && spec.lossType);
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zero = cstF(0.0);
  // Sums of f_c (x_c - x_0) are taken relative to the row's first logit.
  reference = loadLogit(cstIdx(0));

  SmallVector<Value> init = {negInf, zero};
  if (extras) {
    init.push_back(zero); // Σ f
    init.push_back(zero); // Σ f (x - x0)
  }
  SmallVector<Type> types(init.size(), f32);

  // Scalar walk: classes tid, tid + T, ...
  auto scalarLoop = [&]() -> SmallVector<Value> {
    auto loop = scf::ForOp::create(
        b, tid, numClasses, cstIdx(geometry.threads), init,
        [&](OpBuilder &nb, Location loc, Value c, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(
              b, emitStatisticsStep({c}, {loadLogit(c)}, acc));
        });
    return SmallVector<Value>(loop.getResults());
  };

  SmallVector<Value> partial;
  int64_t width = geometry.vectorWidth(spec.logitsType);
  if (resident) {
    partial = emitResidentStatistics(init);
  } else if (spec.contiguousRows && width > 1) {
    // Vector walk: each thread loads `width` consecutive logits at a time
    // (16 bytes), threads side by side.
    Value canVectorize = emitCanVectorize({x}, width);
    auto ifOp = scf::IfOp::create(b, types, canVectorize,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value x2 = rowVectorView(x);
      Value first = arith::MulIOp::create(b, tid, cstIdx(width));
      int64_t chunk = geometry.threads * width;
      // kUnroll loads are issued before any is used, so each thread keeps
      // several 16-byte requests in flight.
      auto loop = scf::ForOp::create(
          b, first, numClasses, cstIdx(chunk * kUnroll), init,
          [&](OpBuilder &nb, Location loc, Value c0, ValueRange accRange) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            UnrolledStep step = emitUnrolledLoads(x2, c0, chunk, width);
            SmallVector<Value> acc(accRange);
            for (int64_t u = 0; u < kUnroll; ++u) {
              SmallVector<Value> cs, xs;
              unpackVector(step.starts[u], step.vecs[u], width, cs, xs);
              SmallVector<Value> next = emitStatisticsStep(cs, xs, acc);
              for (auto [a, n] : llvm::zip(acc, next))
                a = select(step.inside[u], n, a);
            }
            scf::YieldOp::create(b, acc);
          });
      scf::YieldOp::create(b, loop.getResults());
    }
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, scalarLoop());
    }
    partial = SmallVector<Value>(ifOp.getResults());
  } else {
    partial = scalarLoop();
  }

  SmallVector<Value> totals = emitBlockAllReduce(partial);
  if (resident)
    totals = emitClusterAllReduce(totals);
  rowMax = totals[0];
  rowSumExp = totals[1];
  if (extras) {
    rowMass = totals[2];
    rowGap = totals[3];
  }
  lse = add(rowMax, log(rowSumExp));
}

//===----------------------------------------------------------------------===//
// Resident rows (one read of the logits)
//===----------------------------------------------------------------------===//

Value KernelEmitter::loadResidentVector(int64_t k) {
  if (resRegs[k])
    return resRegs[k];
  int64_t width = geometry.vectorWidth(spec.logitsType);
  auto vecType = VectorType::get({width}, spec.logitsType);
  // Each thread reads back only the vectors it copied itself.
  Value at = arith::MulIOp::create(
      b, arith::AddIOp::create(b, tid, cstIdx(k * geometry.threads)),
      cstIdx(width));
  return vector::LoadOp::create(b, vecType, stage, ValueRange{at},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

SmallVector<Value>
KernelEmitter::emitResidentStatistics(ArrayRef<Value> init) {
  int64_t width = geometry.vectorWidth(spec.logitsType);
  int64_t threads = geometry.threads;
  MLIRContext *ctx = b.getContext();
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  // Every block of the cluster has started before any block writes into
  // another's shared memory (the matching wait is in emitClusterAllReduce).
  NVVM::ClusterArriveRelaxedOp::create(b, b.getUnitAttr());

  // This block's slice of the row, in 16-byte vectors (C % width == 0).
  Value vectors = arith::DivUIOp::create(b, numClasses, cstIdx(width));
  Value slice = arith::CeilDivUIOp::create(b, vectors, clusterSize);
  resLo = arith::MulIOp::create(b, rank, slice);
  resHi = arith::MinUIOp::create(
      b, arith::AddIOp::create(b, resLo, slice), vectors);

  // Dynamic shared memory: exchange slots, then the staged vectors.
  Value dynamic = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface(), space));
  exchange = memref::ViewOp::create(
      b,
      MemRefType::get({kMaxClusterSize * 4}, f32, MemRefLayoutAttrInterface(),
                      space),
      dynamic, cstIdx(0), ValueRange{});
  stage = memref::ViewOp::create(
      b,
      MemRefType::get({kStagedVectors * threads * width}, spec.logitsType,
                      MemRefLayoutAttrInterface(), space),
      dynamic, cstIdx(kStageOffset), ValueRange{});
  // The block reduction's scratch too (restored by emitRowKernel after the
  // resident path).
  shared = memref::ViewOp::create(
      b,
      MemRefType::get({kMaxComponents, kMaxWarps}, f32,
                      MemRefLayoutAttrInterface(), space),
      dynamic, cstIdx(kExchangeBytes), ValueRange{});
  xRow = rowVectorView(x);

  resStart.clear();
  resValid.clear();
  resRegs.assign(kStagedVectors, Value());
  // Vector k of this thread is first + k·T: one base and constant offsets
  // (few registers live across the exchange), valid while k·T < hi - first.
  Value first = arith::AddIOp::create(b, resLo, tid);
  Value base = arith::MulIOp::create(b, first, cstIdx(width));
  Value left = arith::SubIOp::create(b, resHi, first);
  for (int64_t k = 0; k < kResidentVectors; ++k) {
    resValid.push_back(arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                             cstIdx(k * threads), left));
    resStart.push_back(
        k ? arith::AddIOp::create(b, base, cstIdx(k * threads * width))
          : base);
  }
  // All loads are issued before any is used: the staged ones as cp.async
  // (16 bytes, zero-filled past the slice), then the register ones.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  SmallVector<Value> tokens;
  for (int64_t k = 0; k < kStagedVectors; ++k) {
    // Past the slice nothing is read (source size 0: zero fill).
    Value src = resStart[k];
    Value count = select(resValid[k], cstIdx(width), cstIdx(0));
    Value dst = arith::MulIOp::create(
        b, arith::AddIOp::create(b, tid, cstIdx(k * threads)), cstIdx(width));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, tokenType, stage, ValueRange{dst}, xRow, ValueRange{src},
        b.getIndexAttr(width), count, b.getUnitAttr()));
  }
  Value group = nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, tokens);
  auto vecType = VectorType::get({width}, spec.logitsType);
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    resRegs.push_back(emitGuardedVectorLoad(vecType, xRow, resStart[k],
                                            resValid[k], width));

  SmallVector<Value> acc(init);
  auto step = [&](int64_t k) {
    SmallVector<Value> cs, xs;
    unpackVector(resStart[k], loadResidentVector(k), width, cs, xs);
    SmallVector<Value> next = emitStatisticsStep(cs, xs, acc);
    for (auto [a, n] : llvm::zip(acc, next))
      a = select(resValid[k], n, a);
  };
  // Registers first, while the copies are in flight.
  for (int64_t k = kStagedVectors; k < kResidentVectors; ++k)
    step(k);
  nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(0));
  for (int64_t k = 0; k < kStagedVectors; ++k)
    step(k);
  return acc;
}

SmallVector<Value>
KernelEmitter::emitClusterAllReduce(ArrayRef<Value> totals) {
  MLIRContext *ctx = b.getContext();
  NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  // Thread j < clusterSize writes this block's totals into slot `rank` of
  // block j's exchange memory.
  Value writes =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tid, clusterSize);
  auto ifOp = scf::IfOp::create(b, writes, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto sharedPtr = LLVM::LLVMPointerType::get(ctx, 3);
    auto clusterPtr = LLVM::LLVMPointerType::get(ctx, 7);
    Value address = arith::IndexCastOp::create(
        b, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, exchange));
    Value base = LLVM::IntToPtrOp::create(b, sharedPtr, address);
    Value block = arith::IndexCastOp::create(b, b.getI32Type(), tid);
    for (auto [k, v] : llvm::enumerate(totals)) {
      Value slot = arith::IndexCastOp::create(
          b, b.getI32Type(),
          arith::AddIOp::create(b, arith::MulIOp::create(b, rank, cstIdx(4)),
                                cstIdx(k)));
      Value mine = LLVM::GEPOp::create(b, sharedPtr, f32, base,
                                       ArrayRef<LLVM::GEPArg>{slot});
      Value remote = NVVM::MapaOp::create(b, clusterPtr, mine, block);
      LLVM::StoreOp::create(b, v, remote);
    }
  }
  // Release the stores, acquire the others' (no remote access follows, so
  // blocks may exit at any time after this).
  NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  // Every block combines the slots in the same order: bitwise the same
  // totals (and lse) in the whole cluster.
  SmallVector<Value> acc;
  for (int64_t j = 0; j < kMaxClusterSize; ++j) {
    Value present = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                          cstIdx(j), clusterSize);
    SmallVector<Value> values;
    for (size_t k = 0; k < totals.size(); ++k) {
      Value identity = cstF(k == 0 ? -std::numeric_limits<double>::infinity()
                                   : 0.0);
      Value loaded = memref::LoadOp::create(b, exchange,
                                            ValueRange{cstIdx(j * 4 + k)});
      values.push_back(select(present, loaded, identity));
    }
    acc = j == 0 ? values : combine(acc, values);
  }
  return acc;
}

//===----------------------------------------------------------------------===//
// Gradient
//===----------------------------------------------------------------------===//

Value KernelEmitter::emitGradientElement(Value c, Value xc) {
  // grad_c = (A p_c - B w_c [q'_c]) · softcap'(x_c); the target's own
  // -(1-ε) w_t term is added by emitTargetFixup.
  Value p = exp(sub(xc, lse));
  Value grad = mul(gradScale, p);
  if (gradMass) {
    Value term = gradMass;
    if (weight)
      term = mul(term, loadWeight(c));
    if (config.probabilityTargets)
      term = mul(term, emitSmoothedProbability(memref::LoadOp::create(
                           b, target, rowIndex(c))));
    grad = sub(grad, term);
  }
  if (config.softcap)
    grad = mul(grad, emitSoftcapSlope(xc));
  return grad;
}

void KernelEmitter::emitGradientPass() {
  bool probs = config.probabilityTargets;
  float eps = config.labelSmoothing;
  float zScale = config.zLossScale;

  // Scale of this row's cross-entropy and z-loss terms.
  Value g, gz;
  if (config.reduction == Reduction::none) {
    g = gz = toF32(memref::LoadOp::create(b, gradOutput, rowIdx));
  } else {
    g = gz = toF32(memref::LoadOp::create(b, gradOutput, ValueRange{}));
    if (config.reduction == Reduction::mean) {
      Value weightTotal, count;
      if (probs) {
        weightTotal = count = indexToF32(numRows);
      } else {
        weightTotal = memref::LoadOp::create(b, stats, ValueRange{cstIdx(0)});
        count = memref::LoadOp::create(b, stats, ValueRange{cstIdx(1)});
      }
      g = div(g, weightTotal);
      gz = div(gz, count);
    }
  }
  // Per-row coefficients, so that each element costs one exp and a few
  // multiplies: grad_c = A p_c - B f_c - [c = t] T with
  //   class indices: A = g ((1-ε) w_t + ε/C Σw) + 2 z gz lse,
  //                  B = g ε/C (f_c = w_c), T = g (1-ε) w_t;
  //   probabilities: A = g Σ w q' + 2 z gz lse, B = g (f_c = w_c q'_c).
  Value targetTerm;
  if (probs) {
    gradScale = mul(g, rowMass);
    gradMass = g;
  } else {
    // An out-of-range target makes the whole row NaN (never a wild read).
    g = select(valid, g, cstF(std::numeric_limits<double>::quiet_NaN()));
    Value wt = loadWeight(targetIndex);
    targetTerm = mul(g, mul(cstF(1.0 - eps), wt));
    gradScale = targetTerm;
    if (eps != 0.0f) {
      Value share = div(cstF(eps), numClassesF);
      Value mass = rowMass ? rowMass : numClassesF;
      gradScale = add(gradScale, mul(g, mul(share, mass)));
      gradMass = mul(g, share);
    }
  }
  if (zScale != 0.0f)
    gradScale = add(gradScale, mul(gz, mul(cstF(2.0 * zScale), lse)));
  Type outType = spec.logitsType;

  // Writes fn(c, x_c) (or fn(c) without reading x) over the row, with
  // 16-byte vectors when the row allows it.
  auto emitRowWrite = [&](bool readLogits,
                          function_ref<Value(Value, Value)> fn) {
    auto scalarLoop = [&]() {
      scf::ForOp::create(
          b, tid, numClasses, cstIdx(geometry.threads), ValueRange{},
          [&](OpBuilder &nb, Location loc, Value c, ValueRange) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nb.getInsertionBlock(),
                                nb.getInsertionPoint());
            Value xc = readLogits ? loadLogit(c) : Value();
            memref::StoreOp::create(b, fromF32(fn(c, xc), outType), dlogits,
                                    rowIndex(c));
            scf::YieldOp::create(b);
          });
    };
    int64_t width = geometry.vectorWidth(spec.logitsType);
    if (resident) {
      // The slice from registers / shared memory: no second read.
      Value dRow = rowVectorView(dlogits);
      auto vecType = VectorType::get({width}, spec.logitsType);
      for (int64_t k = 0; k < kResidentVectors; ++k) {
        auto ifOp =
            scf::IfOp::create(b, resValid[k], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        Value vec = readLogits ? loadResidentVector(k) : Value();
        SmallVector<Value> cs, xs, out;
        unpackVector(resStart[k], vec, width, cs, xs);
        for (auto [c, xc] : llvm::zip(cs, xs))
          out.push_back(fromF32(fn(c, xc), outType));
        Value packed = vector::FromElementsOp::create(b, vecType, out);
        vector::StoreOp::create(b, packed, dRow, ValueRange{resStart[k]},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      }
      return;
    }
    if (!(spec.contiguousRows && width > 1)) {
      scalarLoop();
      return;
    }
    SmallVector<Value> buffers = {dlogits};
    if (readLogits)
      buffers.push_back(x);
    Value canVectorize = emitCanVectorize(buffers, width);
    auto ifOp = scf::IfOp::create(b, canVectorize, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scalarLoop();
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value x2 = readLogits ? rowVectorView(x) : Value();
    Value d2 = rowVectorView(dlogits);
    auto vecType = VectorType::get({width}, spec.logitsType);
    llvm::MaybeAlign align(width * vecType.getElementTypeBitWidth() / 8);
    Value first = arith::MulIOp::create(b, tid, cstIdx(width));
    int64_t chunk = geometry.threads * width;
    scf::ForOp::create(
        b, first, numClasses, cstIdx(chunk * kUnroll), ValueRange{},
        [&](OpBuilder &nb, Location loc, Value c0, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          UnrolledStep step = emitUnrolledLoads(x2, c0, chunk, width);
          for (int64_t u = 0; u < kUnroll; ++u) {
            SmallVector<Value> cs, xs, out;
            unpackVector(step.starts[u], step.vecs[u], width, cs, xs);
            for (auto [c, xc] : llvm::zip(cs, xs))
              out.push_back(fromF32(fn(c, xc), outType));
            Value packed = vector::FromElementsOp::create(b, vecType, out);
            auto store = scf::IfOp::create(b, step.inside[u],
                                           /*withElseRegion=*/false);
            OpBuilder::InsertionGuard storeGuard(b);
            b.setInsertionPointToStart(store.thenBlock());
            vector::StoreOp::create(b, packed, d2, ValueRange{step.starts[u]},
                                    /*nontemporal=*/false, align);
          }
          scf::YieldOp::create(b);
        });
  };

  auto emitKeptRow = [&]() {
    // The target's logit is read before the row is written: dlogits may be
    // the logits' own buffer.
    Value xt = probs ? Value() : loadLogit(targetIndex);
    emitRowWrite(/*readLogits=*/true,
                 [&](Value c, Value xc) { return emitGradientElement(c, xc); });
    if (probs)
      return;
    // The target's element, rewritten whole (rounded once) after every
    // thread has stored its part of the row (by the block whose slice
    // holds it, on the resident path).
    gpu::BarrierOp::create(b);
    Value writer =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cstIdx(0));
    if (resident) {
      int64_t width = geometry.vectorWidth(spec.logitsType);
      Value vector = arith::DivUIOp::create(b, targetIndex, cstIdx(width));
      Value owns = arith::AndIOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, vector, resLo),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, vector, resHi));
      writer = arith::AndIOp::create(b, writer, owns);
    }
    auto fix = scf::IfOp::create(b, writer, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fix.thenBlock());
    Value p = exp(sub(xt, lse));
    Value grad = sub(mul(gradScale, p), targetTerm);
    if (gradMass)
      grad = sub(grad, mul(gradMass, loadWeight(targetIndex)));
    if (config.softcap)
      grad = mul(grad, emitSoftcapSlope(xt));
    memref::StoreOp::create(b, fromF32(grad, outType), dlogits,
                            rowIndex(targetIndex));
  };

  if (probs) {
    emitKeptRow();
    return;
  }
  // Ignored rows get exact zeros, whatever their logits: a uniform branch.
  auto ifKept = scf::IfOp::create(b, kept, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifKept.thenBlock());
    emitKeptRow();
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifKept.elseBlock());
  emitRowWrite(/*readLogits=*/false,
               [&](Value, Value) { return cstF(0.0); });
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

void KernelEmitter::emitRowKernel(gpu::GPUFuncOp func) {
  bool probs = config.probabilityTargets;
  RowKernelArgs<Value> args = bindKernelArgs(
      getRowKernelArgTypes(b.getContext(), spec), func.getArguments());
  x = args.x;
  target = args.target;
  weight = args.weight;
  stats = args.stats;
  gradOutput = args.gradOutput;
  loss = args.loss;
  zLoss = args.zLoss;
  dlogits = args.dlogits;
  shared = func.getWorkgroupAttributions()[0];

  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cstIdx(kLanes));
  warp = arith::DivUIOp::create(b, tid, cstIdx(kLanes));
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  bool residentPath = hasResidentPath(spec, geometry);
  if (residentPath) {
    // One cluster of blocks per row (of 1 block when the row does not take
    // the resident path).
    rank = gpu::ClusterBlockIdOp::create(b, gpu::Dimension::x);
    clusterSize = gpu::ClusterDimBlocksOp::create(b, gpu::Dimension::x);
    row = arith::DivUIOp::create(b, row, clusterSize);
  }
  numClasses = memref::DimOp::create(b, x, config.axis);
  numClassesF = indexToF32(numClasses);
  numRows = emitRowCount(x, config.axis);
  // The host launches max(rows, 1) blocks (a grid cannot be empty).
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, numRows);
  auto guard = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  rowIdx = emitDelinearize(row, x, config.axis);

  if (!probs) {
    Value t = memref::LoadOp::create(b, target, rowIdx);
    Type i64 = b.getI64Type();
    if (t.getType() != i64)
      t = arith::ExtSIOp::create(b, i64, t);
    auto cstI64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
    };
    kept = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, t,
                                 cstI64(config.ignoreIndex));
    Value cI64 = arith::IndexCastUIOp::create(b, i64, numClasses);
    valid = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, t, cstI64(0)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, t, cI64));
    targetIndex = arith::IndexCastOp::create(b, b.getIndexType(),
                                             select(valid, t, cstI64(0)));
  }

  if (!residentPath) {
    emitRowBody();
  } else {
    // The resident path when the row has the length for it and 16-byte
    // accesses (uniform in the cluster); otherwise block 0 of the cluster
    // does the row with the two-pass code (the others have nothing to do).
    Value size =
        emitResidentClusterSize(b, b.getLoc(), numClasses, spec, geometry);
    Value fits =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, size, cstIdx(0));
    Value ok = arith::AndIOp::create(
        b, fits,
        emitCanVectorize({x, dlogits}, geometry.vectorWidth(spec.logitsType)));
    auto ifOp = scf::IfOp::create(b, ok, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value staticShared = shared;
      resident = true;
      emitRowBody();
      resident = false;
      shared = staticShared;
      b.setInsertionPointToStart(ifOp.elseBlock());
      Value first =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rank, cstIdx(0));
      auto only = scf::IfOp::create(b, first, /*withElseRegion=*/false);
      b.setInsertionPointToStart(only.thenBlock());
      emitRowBody();
    }
  }
  b.setInsertionPointAfter(guard);
  gpu::ReturnOp::create(b);
}

void KernelEmitter::emitRowBody() {
  bool probs = config.probabilityTargets;
  emitRowStatistics();

  if (spec.lossType) {
    Value zero = cstF(0.0);
    Value rowLoss;
    if (probs) {
      // -Σ f_c (x_c - lse) = Σf (lse - x0) - Σ f (x_c - x0)
      rowLoss = sub(mul(rowMass, sub(lse, reference)), rowGap);
    } else {
      Value xt = loadLogit(targetIndex);
      Value wt = loadWeight(targetIndex);
      Value nll = sub(lse, xt);
      rowLoss = mul(mul(cstF(1.0 - config.labelSmoothing), wt), nll);
      if (config.labelSmoothing != 0.0f) {
        Value mass = rowMass;
        Value smooth = sub(mul(mass, sub(lse, reference)), rowGap);
        rowLoss = add(rowLoss, mul(div(cstF(config.labelSmoothing),
                                       numClassesF),
                                   smooth));
      }
      rowLoss = select(valid, rowLoss,
                       cstF(std::numeric_limits<double>::quiet_NaN()));
    }
    Value rowZ = config.zLossScale != 0.0f
                     ? mul(cstF(config.zLossScale), mul(lse, lse))
                     : zero;

    Value isThread0 =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cstIdx(0));
    if (resident)
      isThread0 = arith::AndIOp::create(
          b, isThread0,
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rank, cstIdx(0)));
    Value writes = isThread0;
    if (kept && spec.reduced())
      writes = arith::AndIOp::create(b, isThread0, kept);
    auto ifOp = scf::IfOp::create(b, writes, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    if (!spec.reduced()) {
      Value total = add(rowLoss, rowZ);
      if (kept) {
        total = select(kept, total, zero);
        rowZ = select(kept, rowZ, zero);
      }
      memref::StoreOp::create(b, fromF32(total, spec.lossType), loss,
                              rowIdx);
      if (zLoss)
        memref::StoreOp::create(b, fromF32(rowZ, spec.zLossType), zLoss,
                                rowIdx);
    } else {
      Value lossPart = rowLoss, zPart = rowZ;
      if (config.reduction == Reduction::mean) {
        Value weightTotal, count;
        if (probs) {
          weightTotal = count = indexToF32(numRows);
        } else {
          weightTotal =
              memref::LoadOp::create(b, stats, ValueRange{cstIdx(0)});
          count = memref::LoadOp::create(b, stats, ValueRange{cstIdx(1)});
        }
        lossPart = div(lossPart, weightTotal);
        zPart = div(zPart, count);
      }
      auto addKind = arith::AtomicRMWKindAttr::get(b.getContext(),
                                                   arith::AtomicRMWKind::addf);
      memref::AtomicRMWOp::create(b, f32, addKind, add(lossPart, zPart), loss,
                                  ValueRange{});
      if (zLoss)
        memref::AtomicRMWOp::create(b, f32, addKind, zPart, zLoss,
                                    ValueRange{});
    }
  }

  if (spec.withGrad)
    emitGradientPass();
}

void KernelEmitter::emitPrologueKernel(gpu::GPUFuncOp func) {
  // One block: Σ kept weights and the kept count (class indices, mean), then
  // the accumulators' initial values: NaN for a mean over nothing, else 0.
  bool probs = config.probabilityTargets;
  PrologueKernelArgs<Value> args = bindKernelArgs(
      getPrologueKernelArgTypes(b.getContext(), spec), func.getArguments());
  target = args.target;
  weight = args.weight;
  stats = args.stats;
  loss = args.loss;
  zLoss = args.zLoss;
  shared = func.getWorkgroupAttributions()[0];
  maxSumPair = false;

  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cstIdx(kLanes));
  warp = arith::DivUIOp::create(b, tid, cstIdx(kLanes));
  numRows = emitRowCount(target, probs ? config.axis : -1);
  Value zero = cstF(0.0);

  Value weightTotal, count;
  if (spec.needsStats()) {
    auto loop = scf::ForOp::create(
        b, tid, numRows, cstIdx(geometry.threads), ValueRange{zero, zero},
        [&](OpBuilder &nb, Location loc, Value r, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value t = memref::LoadOp::create(
              b, target, emitDelinearize(r, target, /*skip=*/-1));
          Type i64 = b.getI64Type();
          if (t.getType() != i64)
            t = arith::ExtSIOp::create(b, i64, t);
          Value isKept = arith::CmpIOp::create(
              b, arith::CmpIPredicate::ne, t,
              arith::ConstantOp::create(
                  b, b.getI64IntegerAttr(config.ignoreIndex)));
          Value w = cstF(1.0);
          if (weight) {
            // Out-of-range classes read weight[0]; their loss is NaN anyway.
            Value numClasses = memref::DimOp::create(b, weight, 0);
            Value cI64 =
                arith::IndexCastUIOp::create(b, i64, numClasses);
            Value inRange = arith::AndIOp::create(
                b,
                arith::CmpIOp::create(
                    b, arith::CmpIPredicate::sge, t,
                    arith::ConstantOp::create(b, b.getI64IntegerAttr(0))),
                arith::CmpIOp::create(b, arith::CmpIPredicate::slt, t, cI64));
            Value safe = select(
                inRange, t,
                arith::ConstantOp::create(b, b.getI64IntegerAttr(0)));
            w = loadWeight(
                arith::IndexCastOp::create(b, b.getIndexType(), safe));
          }
          Value wKept = select(isKept, w, zero);
          Value one = select(isKept, cstF(1.0), zero);
          scf::YieldOp::create(b,
                               ValueRange{add(acc[0], wKept), add(acc[1], one)});
        });
    SmallVector<Value> totals = emitBlockAllReduce(
        SmallVector<Value>(loop.getResults().begin(), loop.getResults().end()));
    weightTotal = totals[0];
    count = totals[1];
  } else {
    weightTotal = count = indexToF32(numRows);
  }

  Value isThread0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cstIdx(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    if (stats) {
      memref::StoreOp::create(b, weightTotal, stats, ValueRange{cstIdx(0)});
      memref::StoreOp::create(b, count, stats, ValueRange{cstIdx(1)});
    }
    Value nan = cstF(std::numeric_limits<double>::quiet_NaN());
    auto initial = [&](Value divisor) -> Value {
      if (config.reduction != Reduction::mean)
        return zero;
      Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                         divisor, zero);
      return select(none, nan, zero);
    };
    if (loss)
      memref::StoreOp::create(b, initial(weightTotal), loss, ValueRange{});
    if (zLoss)
      memref::StoreOp::create(b, initial(count), zLoss, ValueRange{});
  }
  gpu::ReturnOp::create(b);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                                   TypeRange argTypes,
                                   const LaunchGeometry &geometry,
                                   bool withSharedMemory) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> workgroup;
  if (withSharedMemory) {
    auto space =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    workgroup.push_back(MemRefType::get({kMaxComponents, kMaxWarps},
                                        b.getF32Type(), MemRefLayoutAttrInterface(),
                                        space));
  }
  auto func = gpu::GPUFuncOp::create(b, loc, name,
                                     b.getFunctionType(argTypes, {}),
                                     workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(geometry.threads), 1, 1}));
  return func;
}

/// Class indices have one dim less than the logits; probabilities as many.
static MemRefType getTargetType(MLIRContext *ctx, const KernelSpec &spec) {
  return getBufferType(ctx,
                       spec.config.probabilityTargets ? spec.rank()
                                                      : spec.rowRank(),
                       spec.targetType);
}

RowKernelArgs<Type> mlir::xent::getRowKernelArgTypes(MLIRContext *ctx,
                                                     const KernelSpec &spec) {
  auto reducedOrElements = [&](Type t) -> Type {
    return getBufferType(ctx, spec.reduced() ? 0 : spec.rowRank(), t);
  };
  RowKernelArgs<Type> args;
  args.x = getBufferType(ctx, spec.rank(), spec.logitsType);
  args.target = getTargetType(ctx, spec);
  if (spec.weightType)
    args.weight = getBufferType(ctx, 1, spec.weightType);
  if (spec.needsStats())
    args.stats = MemRefType::get({2}, Float32Type::get(ctx));
  if (spec.gradOutputType)
    args.gradOutput = reducedOrElements(spec.gradOutputType);
  if (spec.lossType)
    args.loss = reducedOrElements(spec.lossType);
  if (spec.zLossType)
    args.zLoss = reducedOrElements(spec.zLossType);
  if (spec.withGrad)
    args.dlogits = getBufferType(ctx, spec.rank(), spec.logitsType);
  return args;
}

PrologueKernelArgs<Type>
mlir::xent::getPrologueKernelArgTypes(MLIRContext *ctx,
                                      const KernelSpec &spec) {
  Type f32 = Float32Type::get(ctx);
  PrologueKernelArgs<Type> args;
  args.target = getTargetType(ctx, spec);
  if (spec.weightType)
    args.weight = getBufferType(ctx, 1, spec.weightType);
  if (spec.needsStats())
    args.stats = MemRefType::get({2}, f32);
  if (spec.lossType)
    args.loss = getBufferType(ctx, 0, f32);
  if (spec.zLossType)
    args.zLoss = getBufferType(ctx, 0, f32);
  return args;
}

gpu::GPUFuncOp mlir::xent::buildRowKernel(OpBuilder &b, Location loc,
                                          StringRef name,
                                          const KernelSpec &spec,
                                          const LaunchGeometry &geometry) {
  SmallVector<Type> args = getRowKernelArgTypes(b.getContext(), spec).list();
  gpu::GPUFuncOp func =
      createKernel(b, loc, name, args, geometry, /*withSharedMemory=*/true);
  // At most 64 registers per thread at 1024 threads per SM, so that two
  // blocks of 512 (each with its staging memory) share an SM.
  if (hasResidentPath(spec, geometry)) {
    func->setAttr("nvvm.minctasm",
                  b.getI32IntegerAttr(std::max<int64_t>(
                      1, 1024 / geometry.threads)));
    func->setAttr("nvvm.maxntid",
                  b.getDenseI32ArrayAttr(
                      {static_cast<int32_t>(geometry.threads), 1, 1}));
  }
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  KernelEmitter(ib, spec, geometry).emitRowKernel(func);
  return func;
}

gpu::GPUFuncOp mlir::xent::buildPrologueKernel(OpBuilder &b, Location loc,
                                               StringRef name,
                                               const KernelSpec &spec,
                                               const LaunchGeometry &geometry) {
  SmallVector<Type> args =
      getPrologueKernelArgTypes(b.getContext(), spec).list();
  gpu::GPUFuncOp func =
      createKernel(b, loc, name, args, geometry, /*withSharedMemory=*/true);
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  KernelEmitter(ib, spec, geometry).emitPrologueKernel(func);
  return func;
}

gpu::GPUFuncOp mlir::xent::buildConvertKernel(OpBuilder &b, Location loc,
                                              StringRef name, Type dstType) {
  MLIRContext *ctx = b.getContext();
  LaunchGeometry single{kLanes};
  gpu::GPUFuncOp func = createKernel(
      b, loc, name,
      {getBufferType(ctx, 0, b.getF32Type()), getBufferType(ctx, 0, dstType)},
      single, /*withSharedMemory=*/false);
  ImplicitLocOpBuilder ib(loc, b);
  OpBuilder::InsertionGuard guard(ib);
  ib.setInsertionPointToStart(&func.getBody().front());
  Value tid = gpu::ThreadIdOp::create(ib, gpu::Dimension::x);
  Value isThread0 = arith::CmpIOp::create(
      ib, arith::CmpIPredicate::eq, tid, arith::ConstantIndexOp::create(ib, 0));
  auto ifOp = scf::IfOp::create(ib, isThread0, /*withElseRegion=*/false);
  ib.setInsertionPointToStart(ifOp.thenBlock());
  Value v = memref::LoadOp::create(ib, func.getArgument(0), ValueRange{});
  if (!dstType.isF32())
    v = arith::TruncFOp::create(ib, dstType, v);
  memref::StoreOp::create(ib, v, func.getArgument(1), ValueRange{});
  ib.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(ib);
  return func;
}
