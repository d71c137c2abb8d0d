//===- View.h - Semantic view of tensor values ------------------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The analysis behind `xent-recognize`: every tensor (or scalar) value is seen
// as a node of a small expression DAG over *logical axes*, whatever dialect
// computed it. `x - max` is the same node whether it was written as a
// linalg.generic body with broadcasting indexing maps, as linalg.sub after
// linalg.broadcast, as tosa.sub with an implicitly broadcast size-1 dimension
// or as arith.subf on tensors: broadcasts, unit dimensions and reshapes of
// unit dimensions only change how a tensor's dimensions map to logical axes,
// never the node.
//
// A logical axis is an iteration variable. Each analyzable value carries one
// logical axis per dimension (or "unit" for a dimension of static size 1);
// ops that iterate two tensors' dimensions in lockstep (a linalg.generic
// loop, an elementwise op) unify their axes, so that the class axis of the
// logits, the axis reduced by the row max and the axis of a linalg.index are
// the same axis exactly when the IR iterates them together. Axes that index
// different dimensions of one tensor are never unified: IR that would need
// that (a diagonal, a transpose against itself) becomes an opaque leaf.
//
// The view never fails: anything it does not understand is a leaf standing
// for the value itself, so matchers see precise algebra where it exists and
// an unknown value everywhere else.
//
// View.cpp holds the nodes, the axes' union-find, the analysis driver and
// what no dialect owns (constants, broadcasting elementwise ops, printing);
// each source dialect the view understands has its own file with a visitor
// the driver calls: ViewLinalg.cpp, ViewTensor.cpp, ViewTosa.cpp and
// ViewArith.cpp (arith and math).
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_VIEW_H
#define XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_VIEW_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Allocator.h"

#include <memory>
#include <optional>

namespace mlir::linalg {
class LinalgOp;
} // namespace mlir::linalg

namespace mlir::xent::recognize {

/// A logical axis: an id in the analysis' union-find.
using Axis = unsigned;
/// The "axis" of a dimension of static size 1, which no value depends on.
constexpr Axis kUnitAxis = ~0u;

enum class NodeKind {
  /// A value the view does not look into (function argument, unknown op).
  Leaf,
  /// A splat constant.
  Constant,
  /// The position along one logical axis (linalg.index, an iota constant).
  Index,
  /// A scalar operation applied elementwise.
  Elementwise,
  /// A sum or max over some logical axes.
  Reduce,
  /// `source` read along `axis` at the position `index`.
  Gather,
  /// Pieces concatenated along a new axis: operand i at position i.
  Concat,
  /// A constant vector along one axis: `table[i]` at position i.
  Table,
};

enum class ElementwiseKind {
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Exp,
  Log,
  Abs,
  Max,
  Min,
  Select,
  CmpF,
  CmpI,
  Cast,
  And,
  Or,
  Xor,
  Not,
  Tanh,
};

enum class CastKind {
  ExtF,
  TruncF,
  SIToFP,
  UIToFP,
  FPToSI,
  FPToUI,
  ExtSI,
  ExtUI,
  TruncI,
  IndexCast,
  IndexCastUI,
};

enum class ReduceKind { Sum, Max };

/// One node of the expression DAG. Nodes are owned by the analysis.
struct Node {
  NodeKind kind = NodeKind::Leaf;
  /// The scalar (element) type of the value.
  Type type;
  /// Elementwise: the operation; Cast: which cast; CmpF/CmpI: the predicate
  /// as its integer value.
  ElementwiseKind op = ElementwiseKind::Add;
  CastKind cast = CastKind::ExtF;
  int64_t predicate = 0;
  /// Reduce: sum or max; `nanIgnoring` for maxnumf, whose identity is NaN.
  ReduceKind reduce = ReduceKind::Sum;
  bool nanIgnoring = false;
  /// Reduce with max: the constant the reduction starts from (the identity
  /// is not always used by frontends), if it is a constant.
  std::optional<double> init;
  /// Constant: the splat value (integers and booleans as doubles).
  double number = 0;
  /// Elementwise: the operands; Reduce: {body}; Gather: {source, index};
  /// Concat: the pieces.
  SmallVector<Node *, 3> operands;
  /// Table: the values along its axis.
  SmallVector<double, 4> table;
  /// Leaf: one axis per dimension of `origin` (kUnitAxis for unit ones);
  /// Index, Concat, Table: {axis}; Reduce: the reduced axes; Gather:
  /// {gathered axis}.
  SmallVector<Axis, 4> axes;
  /// The value this node was built for, when there is one: for a leaf the
  /// value itself, for other nodes the first tensor or scalar value whose
  /// view it is. Synthesized nodes have none.
  Value origin;
};

/// How a value is seen: its node and, per dimension, the logical axis that
/// dimension iterates (kUnitAxis for a dimension of static size 1).
struct View {
  Node *node = nullptr;
  SmallVector<Axis, 4> dims;
};

/// The semantic view of every value in a piece of IR, built lazily and
/// memoized. Axes are unified as a side effect of analyzing ops that iterate
/// values together; the facts it records are facts about the IR, so a view
/// stays valid as long as the IR it was built from is unchanged.
class ViewAnalysis {
public:
  ViewAnalysis();
  ~ViewAnalysis();
  ViewAnalysis(const ViewAnalysis &) = delete;
  ViewAnalysis &operator=(const ViewAnalysis &) = delete;

  /// The view of `value`; its node is never null (unanalyzable values are
  /// leaves).
  View get(Value value);

  /// The canonical representative of `axis` (kUnitAxis stays kUnitAxis).
  Axis find(Axis axis);
  /// True when the two axes are the same logical axis.
  bool same(Axis a, Axis b) { return find(a) == find(b); }
  /// The canonical, sorted set of logical axes `node` depends on.
  SmallVector<Axis, 4> freeAxes(Node *node);
  /// True when `node` depends on logical axis `axis`.
  bool dependsOn(Node *node, Axis axis);

  /// Prints `node` as an expression (for debugging and remarks).
  void print(Node *node, raw_ostream &os, unsigned level = 0);

  //===--- Synthesized nodes (used by the normalization helpers) --------===//
  Node *makeConstant(double value, Type type);
  Node *makeElementwise(ElementwiseKind op, Type type,
                        ArrayRef<Node *> operands);
  Node *makeGather(Node *source, Axis axis, Node *index);
  Node *makeReduce(ReduceKind kind, Node *body, ArrayRef<Axis> axes);

private:
  struct LinalgInfo;

  //===--- The driver and dialect-neutral views (View.cpp) --------------===//
  View analyze(Value value);
  View analyzeResult(OpResult result);
  View analyzeConstant(Value value, Attribute attr);
  View analyzeTensorElementwise(Operation *op, ElementwiseKind kind,
                                ArrayRef<Value> operands, int64_t predicate,
                                std::optional<CastKind> cast);

  // One visitor per source dialect, called by analyzeResult: each returns
  // the view of an op result, or nullopt when the op is not one its file
  // handles.

  //===--- arith and math (ViewArith.cpp) -------------------------------===//
  std::optional<View> visitArithMath(OpResult result);
  View analyzeScalarOp(Operation *op);

  //===--- linalg (ViewLinalg.cpp) --------------------------------------===//
  std::optional<View> visitLinalg(OpResult result);
  View analyzeLinalg(linalg::LinalgOp op, unsigned resultIndex);
  View analyzeSoftmax(Operation *op);
  /// The node of a scalar value inside the body of `op`; null when it is not
  /// expressible (it reads an accumulator, an unknown op...).
  Node *bodyNode(LinalgInfo &info, Value value, unsigned level);
  LinalgInfo &getLinalgInfo(linalg::LinalgOp op);

  //===--- tensor (ViewTensor.cpp) --------------------------------------===//
  // The reshape and the concatenation also serve tosa.reshape and
  // tosa.concat.
  std::optional<View> visitTensor(OpResult result);
  View analyzeReshape(Value source, Value result);
  View analyzeConcat(Operation *op, ValueRange inputs, int64_t dim);

  //===--- TOSA (ViewTosa.cpp) ------------------------------------------===//
  std::optional<View> visitTosa(OpResult result);
  View analyzeTosa(Operation *op);
  View analyzeTosaReduce(Operation *op, ReduceKind kind, bool nanIgnoring);
  View analyzeTosaGather(Operation *op);
  View analyzeFlattenedGather(Operation *op);
  /// `node` as Σ coeff · term + constant over integers, looking through
  /// integer casts and expanding sums over concatenated or constant axes;
  /// false when it is not such a combination.
  bool decomposeIndex(Node *node, int64_t coeff,
                      SmallVectorImpl<std::pair<int64_t, Node *>> &terms,
                      int64_t &constant, unsigned level = 0);
  /// `node` with its dependence on `axis` fixed at `position` (through
  /// Concat and Table nodes), or null.
  Node *evaluateAt(Node *node, Axis axis, int64_t position, unsigned level = 0);

  //===--- Nodes and axes (View.cpp) ------------------------------------===//
  View leaf(Value value);
  Node *newNode(NodeKind kind, Type type);
  Axis freshAxis();
  /// Records that `axes` iterate different dimensions of one value.
  void addDistinct(ArrayRef<Axis> axes);
  /// Unifies two axes; false when they are known to be distinct.
  bool unify(Axis a, Axis b);
  bool areDistinct(Axis a, Axis b);
  /// Unifies the dimensions of `views` (all of the rank of `shape`) with
  /// numpy/TOSA broadcasting: a unit dimension broadcasts. Returns the result
  /// dims, or nullopt on a conflict.
  std::optional<SmallVector<Axis, 4>>
  broadcastDims(ArrayRef<const View *> views, ArrayRef<int64_t> shape);
  void collectFreeAxes(Node *node, SmallVectorImpl<Axis> &out, unsigned level);
  /// `node` with its integer and boolean constants folded: a select on a
  /// constant condition is its branch, an i1 and/or with a constant side is
  /// that side or the other, integer arithmetic, signed compares and
  /// value-preserving casts of constants are constants. Everything else is
  /// returned as is.
  Node *foldConstants(Node *node);

  llvm::SpecificBumpPtrAllocator<Node> allocator;
  DenseMap<Value, View> views;
  llvm::DenseSet<Value> inProgress;
  DenseMap<Node *, SmallVector<Axis, 4>> freeAxesCache;
  DenseMap<Operation *, std::unique_ptr<LinalgInfo>> linalgInfos;
  SmallVector<Axis> parents;
  SmallVector<SmallVector<Axis, 4>> distinctGroups;
  /// How many calls of get() are in progress.
  unsigned analysisDepth = 0;
};

//===----------------------------------------------------------------------===//
// Shared by the view's files
//===----------------------------------------------------------------------===//

namespace detail {

/// How deep the analysis follows use-def chains before it gives up and
/// treats a value as a leaf.
constexpr unsigned kMaxAnalysisDepth = 256;

/// The element type of a value: the element type of a shaped type, else the
/// type itself.
Type getElementType(Value value);
/// A scalar attribute as a double (integers sign-extended, i1 as 0/1).
std::optional<double> attrToDouble(Attribute attr);

/// What an elementwise op computes, independent of its dialect.
struct ElementwiseSpec {
  ElementwiseKind kind;
  int64_t predicate = 0;
  std::optional<CastKind> cast;
};
/// The elementwise meaning of an arith or math op (on scalars or tensors).
std::optional<ElementwiseSpec> classifyArithMath(Operation *op);

} // namespace detail

} // namespace mlir::xent::recognize

#endif // XENT_LIB_DIALECT_XENT_TRANSFORMS_RECOGNIZE_VIEW_H
