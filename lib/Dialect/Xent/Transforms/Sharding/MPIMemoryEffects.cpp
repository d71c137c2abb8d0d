//===- MPIMemoryEffects.cpp - Memory effects of mpi.allreduce -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// `convert-shard-to-mpi` turns each shard.all_reduce of a partitioned loss
// into an `mpi.allreduce` on memrefs, which MLIR 22 declares without memory
// effects; the buffer deallocation of the CPU pipeline rejects ops with
// unknown effects. This model states them: the send buffer is read and the
// receive buffer written.
//
//===----------------------------------------------------------------------===//

#include "xent/Dialect/Xent/Transforms/ShardingInterfaceImpl.h"

#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {

struct AllReduceMemoryEffects
    : public MemoryEffectOpInterface::ExternalModel<AllReduceMemoryEffects,
                                                    mpi::AllReduceOp> {
  void getEffects(
      Operation *op,
      SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
          &effects) const {
    auto allReduce = cast<mpi::AllReduceOp>(op);
    effects.emplace_back(MemoryEffects::Read::get(),
                         &allReduce.getSendbufMutable(),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         &allReduce.getRecvbufMutable(),
                         SideEffects::DefaultResource::get());
  }
};

} // namespace

void mlir::xent::registerMPIMemoryEffectModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, mpi::MPIDialect *) {
    mpi::AllReduceOp::attachInterface<AllReduceMemoryEffects>(*ctx);
  });
}
