//===- LaunchGeometry.cpp - Launch geometry of the xent kernels -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The launch geometry of every kernel, decided in one place from the pass
// options and the chip: threads per block, vector loads, and whether (and
// over how many blocks, with how much shared memory) a gradient kernel keeps
// its rows on chip.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "xent/Conversion/XentToGPU/NVIDIAChip.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::xent;

LaunchGeometry
mlir::xent::getLaunchGeometry(const ConvertXentToGPUOptions &options,
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
  return {threads, vectorBytes, options.residentRows && clusters,
          options.splitExponentials};
}

bool mlir::xent::hasResidentPath(const KernelSpec &spec,
                                 const LaunchGeometry &geometry) {
  // 16-byte accesses of the whole row (cp.async copies 16 bytes). Label
  // smoothing without class weights takes it (Σ (m - x) from a second walk
  // over the on-chip row, exchanged in slot 2: not beside an argmax, which
  // takes that slot). The softcap on bf16 / f16 logits takes it (one MUFU
  // tanh per element). Not per-class weights under smoothing, probability
  // targets (a second N x V stream) or the softcap of f32 logits (the
  // accurate tanh): their work per element does not fit the registers of
  // the resident path (ptxas spills); those keep the two-pass kernel.
  const CrossEntropyConfig &config = spec.config;
  bool smoothingFits = !config.hasLabelSmoothing() ||
                       (!spec.weightType && !spec.needsArgmax());
  bool softcapFits = !config.hasSoftcap() || !spec.logitsType.isF32();
  bool light = !config.probabilityTargets && softcapFits && smoothingFits;
  // A gradient from merged statistics reads its row once anyway.
  return light && spec.withGrad && !spec.readsRowStats() &&
         spec.contiguousRows &&
         geometry.residentRows && geometry.vectorBytes == 16 &&
         geometry.vectorWidth(spec.logitsType) > 1;
}

Value mlir::xent::emitResidentClusterSize(OpBuilder &b, Location loc,
                                          Value numClasses,
                                          const KernelSpec &spec,
                                          const LaunchGeometry &geometry,
                                          Value x, Value dlogits) {
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t width = geometry.vectorWidth(spec.logitsType);
  Value vectors = arith::CeilDivUIOp::create(b, loc, numClasses, cst(width));
  Value need = arith::CeilDivUIOp::create(
      b, loc, vectors, cst(kResidentVectors * geometry.threads));
  // More than half of what one block holds: shorter rows keep the two-pass
  // kernel, whose blocks do not reserve the staging memory, so that more
  // rows are in flight per SM; for such short rows that gains more than
  // reading the logits once.
  Value longEnough =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, vectors,
                            cst(kResidentVectors * geometry.threads / 2));
  Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, need,
                                     cst(kMaxClusterSize));
  Value ok = arith::AndIOp::create(b, loc, longEnough, fits);
  Type index = b.getIndexType();
  Value xAddress =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, index, x);
  Value dAddress =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, index, dlogits);
  Value apart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                      xAddress, dAddress);
  ok = arith::AndIOp::create(b, loc, ok, apart);
  return arith::SelectOp::create(b, loc, ok, need, cst(0));
}

int64_t
mlir::xent::getResidentSharedMemoryBytes(const LaunchGeometry &geometry) {
  return kStageOffset + kStagedVectors * geometry.threads * 16;
}
