//===- Contraction.cpp - Tensors as matrices, matrix products -------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The matrix view of Projection.h: row reshapes and matrix transposes,
// matrix products in linalg and TOSA, a bias broadcast along the rows and
// its addition, and the sum over the rows (the bias gradient).
//
//===----------------------------------------------------------------------===//

#include "Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::xent;
using namespace mlir::xent::recognize::projection;

/// How many reshapes and transposes a chain may have.
static constexpr unsigned kMaxChain = 16;

static RankedTensorType getTensorType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

Value recognize::projection::getRowReshapeSource(Operation *op) {
  if (!op || op->getNumResults() != 1 || op->getNumOperands() < 1)
    return {};
  Value source = op->getOperand(0);
  auto from = getTensorType(source);
  auto to = getTensorType(op->getResult(0));
  if (!from || !to || from.getRank() == 0 || to.getRank() == 0)
    return {};
  // The group of the last dimension may merge it with unit dimensions only.
  auto keepsLast = [](ReassociationIndices last, RankedTensorType expanded) {
    return llvm::all_of(ArrayRef<int64_t>(last).drop_back(),
                        [&](int64_t d) { return expanded.getDimSize(d) == 1; });
  };
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return keepsLast(collapse.getReassociationIndices().back(), from) ? source
                                                                      : Value();
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return keepsLast(expand.getReassociationIndices().back(), to) ? source
                                                                  : Value();
  if (!isa<tensor::ReshapeOp, tosa::ReshapeOp>(op))
    return {};
  int64_t a = from.getShape().back(), b = to.getShape().back();
  return !ShapedType::isDynamic(a) && a == b ? source : Value();
}

/// True when `perm` swaps the last two of its dimensions and keeps the
/// others, and every other dimension of `type` has size 1.
template <typename T>
static bool isMatrixPermutation(ArrayRef<T> perm, RankedTensorType type) {
  int64_t rank = type.getRank();
  if (rank < 2 || static_cast<int64_t>(perm.size()) != rank)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i || type.getDimSize(i) != 1)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// `op` when it is a `linalg.generic` of one input whose loops are all
/// parallel and whose body only yields that input (a copy, read through its
/// indexing map), else null.
static linalg::GenericOp getCopyGeneric(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return {};
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 1 ||
      cast<linalg::YieldOp>(body.getTerminator()).getValues()[0] !=
          body.getArgument(0))
    return {};
  return generic;
}

Value recognize::projection::getMatrixTransposeSource(Operation *op) {
  if (auto transpose = dyn_cast_or_null<linalg::TransposeOp>(op)) {
    Value in = transpose.getInput();
    return isMatrixPermutation(transpose.getPermutation(), getTensorType(in))
               ? in
               : Value();
  }
  if (auto transpose = dyn_cast_or_null<tosa::TransposeOp>(op)) {
    Value in = transpose.getInput1();
    auto type = getTensorType(in);
    return type && isMatrixPermutation(transpose.getPerms(), type) ? in
                                                                   : Value();
  }
  // A generic that yields its input read through a transposed map.
  auto generic = getCopyGeneric(op);
  if (!generic || generic.getNumDpsInits() != 1)
    return {};
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  Value in = generic.getDpsInputOperand(0)->get();
  auto type = getTensorType(in);
  if (!type || !maps[1].isIdentity() || !maps[0].isPermutation())
    return {};
  SmallVector<int64_t> perm;
  for (AffineExpr e : maps[0].getResults())
    perm.push_back(cast<AffineDimExpr>(e).getPosition());
  return isMatrixPermutation(ArrayRef<int64_t>(perm), type) ? in : Value();
}

SmallVector<MatrixRef> recognize::projection::peelMatrix(MatrixRef m) {
  SmallVector<MatrixRef> chain = {m};
  while (chain.size() < kMaxChain) {
    Operation *def = chain.back().value.getDefiningOp();
    bool transposed = chain.back().transposed;
    if (Value source = getRowReshapeSource(def))
      chain.push_back({source, transposed});
    else if (Value source = getMatrixTransposeSource(def))
      chain.push_back({source, !transposed});
    else
      break;
  }
  return chain;
}

Value recognize::projection::peelRowReshapes(Value v) {
  for (unsigned i = 0; i < kMaxChain; ++i) {
    Value source = getRowReshapeSource(v.getDefiningOp());
    if (!source)
      break;
    v = source;
  }
  return v;
}

bool recognize::projection::isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// The map over `loops` dimensions that reads `dims`.
static AffineMap getMap(MLIRContext *ctx, unsigned loops,
                        ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(loops, 0, exprs, ctx);
}

/// How a product's loops (m, n, k) or (b, m, n, k) read one operand: which
/// of the two matrix dimensions comes first, and whether it reads b.
struct OperandMap {
  bool transposed;
  bool batched;
};

/// Matches `map` as reading `(b?, first, second)`, or transposed.
static std::optional<OperandMap> matchOperandMap(AffineMap map, unsigned loops,
                                                 unsigned first,
                                                 unsigned second) {
  MLIRContext *ctx = map.getContext();
  for (bool batched : {false, true}) {
    if (batched && loops != 4)
      continue;
    SmallVector<unsigned> plain, swapped;
    if (batched) {
      plain.push_back(0);
      swapped.push_back(0);
    }
    plain.append({first, second});
    swapped.append({second, first});
    if (map == getMap(ctx, loops, plain))
      return OperandMap{false, batched};
    if (map == getMap(ctx, loops, swapped))
      return OperandMap{true, batched};
  }
  return std::nullopt;
}

/// The 2-D value that `v`, of shape `[B, r, c]`, repeats along its first
/// dimension (`linalg.broadcast`, or a generic that yields its input read
/// along the last two loops), or null.
static Value matchBatchBroadcast(Value v) {
  if (auto broadcast = v.getDefiningOp<linalg::BroadcastOp>())
    return broadcast.getDimensions() == ArrayRef<int64_t>{0}
               ? broadcast.getInput()
               : Value();
  auto generic = getCopyGeneric(v.getDefiningOp());
  if (!generic || generic.getNumLoops() != 3)
    return {};
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != getMap(v.getContext(), 3, {1, 2}) || !maps[1].isIdentity())
    return {};
  return generic.getDpsInputOperand(0)->get();
}

/// The product of a batched contraction: one matrix product when the batch
/// has size 1 (every operand is then its own matrix) or when `rhs` is the
/// same matrix for every batch.
static FailureOr<Product> batchedProduct(Operation *op, Value lhs,
                                         OperandMap lm, Value rhs,
                                         OperandMap rm, Value init,
                                         std::string &reason) {
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  Product p{op, {lhs, lm.transposed}, {rhs, rm.transposed}, init};
  Value single = rm.batched ? matchBatchBroadcast(rhs) : Value();
  if (single)
    p.rhs.value = single;
  if (result.getDimSize(0) == 1)
    return p;
  if (!lm.batched || lm.transposed) {
    reason = "the batched product does not read its rows from the left "
             "operand of each batch";
    return failure();
  }
  if (rm.batched && !single) {
    reason = "the batched product's right operand differs per batch (not "
             "broadcast)";
    return failure();
  }
  return p;
}

FailureOr<Product> recognize::projection::matchProduct(Value v,
                                                       std::string &reason) {
  Operation *def = v.getDefiningOp();
  if (auto matmul = dyn_cast_or_null<tosa::MatMulOp>(def)) {
    if (!matchPattern(matmul.getAZp(), m_AnyZeroFloat()) ||
        !matchPattern(matmul.getBZp(), m_AnyZeroFloat())) {
      reason = "the tosa.matmul has non-zero zero points";
      return failure();
    }
    return batchedProduct(matmul, matmul.getA(), {false, true}, matmul.getB(),
                          {false, true}, Value(), reason);
  }
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(def);
  if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp) ||
      linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1) {
    reason = kNotAProduct;
    return failure();
  }
  unsigned loops = linalgOp.getNumLoops();
  if ((loops != 3 && loops != 4) ||
      linalgOp.getNumParallelLoops() != loops - 1) {
    reason = kNotAProduct;
    return failure();
  }
  // Loops (b?, m, n, k), the result read by (b?, m, n).
  unsigned m = loops - 3, n = m + 1, k = m + 2;
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  SmallVector<unsigned> out;
  if (loops == 4)
    out.push_back(0);
  out.append({m, n});
  std::optional<OperandMap> lm = matchOperandMap(maps[0], loops, m, k);
  std::optional<OperandMap> rm = matchOperandMap(maps[1], loops, k, n);
  if (maps[2] != getMap(v.getContext(), loops, out) || !lm || !rm) {
    reason = "the product does not contract the left operand's columns with "
             "the right operand's rows";
    return failure();
  }
  Value lhs = linalgOp.getDpsInputOperand(0)->get();
  Value rhs = linalgOp.getDpsInputOperand(1)->get();
  Value init = linalgOp.getDpsInitOperand(0)->get();
  if (loops == 3)
    return Product{def, {lhs, lm->transposed}, {rhs, rm->transposed}, init};
  return batchedProduct(def, lhs, *lm, rhs, *rm, init, reason);
}

/// True when `generic`'s body yields `f(arg0)`, `f` a widening cast or
/// nothing.
static bool yieldsInput(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  Value yielded = cast<linalg::YieldOp>(body.getTerminator()).getValues()[0];
  if (auto ext = yielded.getDefiningOp<arith::ExtFOp>()) {
    if (body.getOperations().size() != 2)
      return false;
    yielded = ext.getIn();
  } else if (body.getOperations().size() != 1) {
    return false;
  }
  return yielded == body.getArgument(0);
}

/// The map over `rank` loops that reads the last one only.
static AffineMap getLastDimMap(MLIRContext *ctx, unsigned rank) {
  return getMap(ctx, rank, {rank - 1});
}

/// The `[V]` value that `v`, of shape `[1, .., 1, V]`, reshapes, or null.
static Value matchUnitRowsReshape(Value v) {
  auto type = getTensorType(v);
  if (!type || !llvm::all_of(type.getShape().drop_back(),
                             [](int64_t d) { return d == 1; }))
    return {};
  for (unsigned i = 0; i < kMaxChain && type.getRank() > 1; ++i) {
    v = getRowReshapeSource(v.getDefiningOp());
    if (!v)
      return {};
    type = getTensorType(v);
  }
  return type.getRank() == 1 ? v : Value();
}

Value recognize::projection::matchRowBroadcast(Value v) {
  auto type = getTensorType(v);
  if (!type || type.getRank() < 2)
    return {};
  unsigned rank = type.getRank();
  if (auto broadcast = v.getDefiningOp<linalg::BroadcastOp>()) {
    SmallVector<int64_t> leading;
    for (unsigned i = 0; i + 1 < rank; ++i)
      leading.push_back(i);
    return broadcast.getDimensions() == ArrayRef<int64_t>(leading)
               ? broadcast.getInput()
               : Value();
  }
  if (auto generic = v.getDefiningOp<linalg::GenericOp>()) {
    if (generic.getNumDpsInputs() != 1 || generic.getNumLoops() != rank ||
        generic.getNumParallelLoops() != rank || !yieldsInput(generic) ||
        generic.getIndexingMapsArray()[0] !=
            getLastDimMap(v.getContext(), rank))
      return {};
    return generic.getDpsInputOperand(0)->get();
  }
  return {};
}

/// The bias that `operand` of an elementwise addition of `[.., V]` tensors
/// adds along the rows: a row broadcast, or with TOSA's implicit
/// broadcasting a `[1, .., 1, V]` reshape of it.
static Value matchAddedBias(Value operand, bool implicitBroadcast) {
  if (Value bias = matchRowBroadcast(operand))
    return bias;
  return implicitBroadcast ? matchUnitRowsReshape(operand) : Value();
}

std::optional<BiasAdd> recognize::projection::matchBiasAdd(Value v,
                                                           bool &isAdd) {
  isAdd = false;
  Operation *def = v.getDefiningOp();
  auto type = getTensorType(v);
  if (!def || !type || type.getRank() < 2)
    return std::nullopt;
  Value lhs, rhs;
  bool implicitBroadcast = false;
  if (auto add = dyn_cast<tosa::AddOp>(def)) {
    lhs = add.getInput1();
    rhs = add.getInput2();
    implicitBroadcast = true;
  } else if (auto add = dyn_cast<linalg::AddOp>(def)) {
    lhs = add.getDpsInputOperand(0)->get();
    rhs = add.getDpsInputOperand(1)->get();
  } else if (auto generic = dyn_cast<linalg::GenericOp>(def)) {
    Block &body = generic.getRegion().front();
    auto sum = dyn_cast<arith::AddFOp>(body.front());
    if (generic.getNumDpsInputs() != 2 ||
        generic.getNumParallelLoops() != generic.getNumLoops() ||
        body.getOperations().size() != 2 || !sum ||
        cast<linalg::YieldOp>(body.getTerminator()).getValues()[0] != sum ||
        !((sum.getLhs() == body.getArgument(0) &&
           sum.getRhs() == body.getArgument(1)) ||
          (sum.getLhs() == body.getArgument(1) &&
           sum.getRhs() == body.getArgument(0))))
      return std::nullopt;
    isAdd = true;
    SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
    unsigned rank = type.getRank();
    for (unsigned i = 0; i < 2; ++i) {
      Value other = generic.getDpsInputOperand(1 - i)->get();
      Value candidate = generic.getDpsInputOperand(i)->get();
      if (!maps[1 - i].isIdentity() || getTensorType(other) != type)
        continue;
      // The bias read along the classes (torch-mlir's broadcasting add).
      if (maps[i] == getLastDimMap(v.getContext(), rank) &&
          getTensorType(candidate).getRank() == 1)
        return BiasAdd{other, candidate};
      if (maps[i].isIdentity())
        if (Value bias = matchRowBroadcast(candidate))
          return BiasAdd{other, bias};
    }
    return std::nullopt;
  } else {
    return std::nullopt;
  }
  isAdd = true;
  for (auto [other, candidate] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
    if (getTensorType(other) != type)
      continue;
    if (Value bias = matchAddedBias(candidate, implicitBroadcast))
      return BiasAdd{other, bias};
  }
  return std::nullopt;
}

/// True when `body` yields `addf(arg0, arg1)` in either order.
static bool isAddBody(Block &body) {
  auto sum = dyn_cast<arith::AddFOp>(body.front());
  if (!sum || body.getOperations().size() != 2 ||
      body.getTerminator()->getOperand(0) != sum.getResult())
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (sum.getLhs() == a && sum.getRhs() == b) ||
         (sum.getLhs() == b && sum.getRhs() == a);
}

Value recognize::projection::matchRowSum(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto reduce = dyn_cast_or_null<tosa::ReduceSumOp>(def)) {
    auto type = getTensorType(reduce.getInput());
    return type && type.getRank() == 2 && reduce.getAxis() == 0
               ? reduce.getInput()
               : Value();
  }
  if (auto reduce = dyn_cast_or_null<linalg::ReduceOp>(def)) {
    if (reduce.getNumDpsInputs() != 1 || !isZeroFill(reduce.getInits()[0]) ||
        !isAddBody(reduce.getCombiner().front()))
      return {};
    Value in = reduce.getInputs()[0];
    auto type = getTensorType(in);
    SmallVector<int64_t> leading;
    for (int64_t i = 0; type && i + 1 < type.getRank(); ++i)
      leading.push_back(i);
    return type && type.getRank() >= 2 &&
                   reduce.getDimensions() == ArrayRef<int64_t>(leading)
               ? in
               : Value();
  }
  // A generic summing the identity-read input into an accumulator read
  // along the last loop (or along it with the leading dimensions kept as
  // size 1, as keepdim sums are).
  auto generic = dyn_cast_or_null<linalg::GenericOp>(def);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      !isZeroFill(generic.getDpsInitOperand(0)->get()) ||
      !isAddBody(generic.getRegion().front()))
    return {};
  unsigned loops = generic.getNumLoops();
  if (loops < 2 || generic.getNumParallelLoops() != 1 ||
      generic.getIteratorTypesArray().back() != utils::IteratorType::parallel)
    return {};
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[0].isIdentity())
    return {};
  AffineMap out = maps[1];
  ArrayRef<AffineExpr> results = out.getResults();
  if (results.empty() ||
      results.back() != getAffineDimExpr(loops - 1, v.getContext()))
    return {};
  for (AffineExpr e : results.drop_back()) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0 || results.size() != loops)
      return {};
  }
  return generic.getDpsInputOperand(0)->get();
}
