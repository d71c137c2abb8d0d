//===- Projection.h - Projections as matrix products ------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// What the projection matchers (Projection.cpp, ProjectionGrad.cpp) share.
//
// Every tensor is seen as the matrix of its rows: its leading dimensions
// collapsed, its last dimension the columns. A reshape that keeps the last
// dimension (`tensor.collapse_shape` / `expand_shape` / `reshape`,
// `tosa.reshape`) changes the shape but not that matrix; a transpose of the
// last two dimensions (with unit dimensions before them) transposes it. A
// matrix product is `linalg.matmul`, `linalg.batch_matmul` or a contraction
// `linalg.generic` of the same loops, with either operand transposed by its
// indexing map, or `tosa.matmul`; a batched product is one matrix product
// when its batch has size 1 or when its right operand is the same matrix
// for every batch (broadcast by its indexing map, `linalg.broadcast` or a
// broadcasting generic): its rows are then those of its left operand
// (Contraction.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_PROJECTION_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_PROJECTION_H

#include "xent/Dialect/Xent/IR/XentOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::xent::recognize::projection {

/// The matrix of `value`'s rows, transposed when `transposed`.
struct MatrixRef {
  Value value;
  bool transposed = false;
};

/// The source of a reshape `op` that keeps the last dimension, or null.
Value getRowReshapeSource(Operation *op);

/// The source of a transpose `op` of the last two dimensions (every other
/// dimension of static size 1), or null.
Value getMatrixTransposeSource(Operation *op);

/// `m` followed by what it reads through row reshapes and matrix transposes,
/// the last element the value none of them defines.
SmallVector<MatrixRef> peelMatrix(MatrixRef m);

/// `v` through row reshapes only.
Value peelRowReshapes(Value v);

/// `v`'s rows `lhs · rhs`.
struct Product {
  Operation *op;
  MatrixRef lhs, rhs;
  /// The accumulator (null for tosa.matmul).
  Value init;
};

/// The reason matchProduct gives for a value that is no product at all.
inline constexpr llvm::StringLiteral kNotAProduct = "not a matrix product";

/// Matches `v` as a matrix product.
FailureOr<Product> matchProduct(Value v, std::string &reason);

/// True when `v` is a zero-filled tensor.
bool isZeroFill(Value v);

/// The `[V]` bias that `v` (rank r) broadcasts along its first r - 1
/// dimensions (`linalg.broadcast`, a broadcasting generic, or a value of
/// shape `[1, .., 1, V]` reshaped from it), or null.
Value matchRowBroadcast(Value v);

/// `v = other + bias`, the `[V]` bias broadcast along the rows.
struct BiasAdd {
  Value other, bias;
};

/// Matches `v` as an addition of a row-broadcast bias (`linalg.add`, an
/// `addf` generic, `tosa.add`). `isAdd` says whether `v` is an addition at
/// all.
std::optional<BiasAdd> matchBiasAdd(Value v, bool &isAdd);

/// The tensor whose rows `v` sums (`linalg.reduce`, a reduction generic,
/// `tosa.reduce_sum` along axis 0 of a matrix), or null.
Value matchRowSum(Value v);

/// What a projection reads: `hidden · weightᵀ (+ bias)`, with `rows` the
/// value without reshapes that `hidden` is a row reshape of.
struct Projection {
  Value hidden, weight, bias;
  Value rows;
};

/// The projection whose rows are `logits`' (shaped `[..., V]`), `hidden`
/// shaped like `logits` with `H` for `V`. `nearMiss` says, on failure,
/// whether the logits are a product (maybe plus a bias) at all.
FailureOr<Projection> matchProjection(Value logits, std::string &reason,
                                      bool &nearMiss);

/// The ops between `leaves` and `roots`, in program order, or failure when
/// they read another block argument, have side effects or do not live in
/// one block.
FailureOr<SmallVector<Operation *>> collectSlice(ArrayRef<Value> roots,
                                                 ArrayRef<Value> leaves);

/// Builds `op`'s decomposition region from clones of `slice` on its
/// operands, yielding the clones of `roots`, verifies `op`, replaces the
/// roots by its results and erases what of the slice is left without
/// users. Erases `op` and fails when it would not verify or cannot be
/// placed: `op` is moved before the first user of a root, and every
/// operand must be defined before that.
LogicalResult finishRaise(RewriterBase &rewriter, Operation *op,
                          ArrayRef<Operation *> slice, ArrayRef<Value> roots);

/// Raises `ce` with its projection `p` to `xent.linear_cross_entropy`.
LogicalResult raiseForward(RewriterBase &rewriter, CrossEntropyOp ce,
                           const Projection &p);

/// Raises the gradient op `grad` (xent.cross_entropy_grad or _and_grad), with
/// `forward` (an xent.cross_entropy on the same logits) or null, whose
/// logits are the projection `p` and whose dlogits feed the backward
/// products of the projection only, to `xent.linear_cross_entropy_grad` or
/// `_and_grad` (ProjectionGrad.cpp).
LogicalResult raiseGradient(RewriterBase &rewriter,
                            CrossEntropyOpInterface grad,
                            CrossEntropyOp forward, const Projection &p,
                            std::string &reason);

/// True when `op`'s results are the loss (and z-loss) and the gradient only,
/// its targets class indices, its classes last.
bool isLinearizable(CrossEntropyOpInterface op, std::string &reason);

} // namespace mlir::xent::recognize::projection

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_PROJECTION_H
