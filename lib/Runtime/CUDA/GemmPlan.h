//===- GemmPlan.h - Row-major GEMMs as cuBLASLt's column-major ones -*- C++
//-*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// How the xentGemm* entry points (CublasLt.cpp) map C = op(A) · op(B) on
// row-major memrefs (any strides of which one is 1) onto the column-major
// product cuBLASLt computes: Cᵀ = op(B)ᵀ · op(A)ᵀ, so cuBLASLt's A is our B
// and its B our A. Plain C++, no CUDA: test/Runtime/gemm-plan.test runs it
// against a host GEMM.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_LIB_RUNTIME_CUDA_GEMMPLAN_H
#define XENT_LIB_RUNTIME_CUDA_GEMMPLAN_H

#include <algorithm>
#include <cstdint>

namespace xent::runtime {

/// A rank-2 memref as a call passes it: logical row-major indices, strides
/// in elements.
struct Matrix {
  char *data;
  int64_t rows, cols, rowStride, colStride;
};

/// How a column-major library sees a stored matrix: the transpose of a
/// row-major one (unit column stride), or the matrix itself (unit row
/// stride), with its leading dimension.
struct ColumnMajor {
  bool ok = false;
  bool transposed = false; // the column-major matrix is the logical one's ᵀ
  uint64_t rows = 0, cols = 0;
  int64_t ld = 1;
};

inline ColumnMajor getColumnMajor(const Matrix &m) {
  ColumnMajor view;
  int64_t rows = std::max<int64_t>(m.rows, 1),
          cols = std::max<int64_t>(m.cols, 1);
  bool rowMajor =
      (m.cols <= 1 || m.colStride == 1) && (m.rows <= 1 || m.rowStride >= cols);
  bool colMajor =
      (m.rows <= 1 || m.rowStride == 1) && (m.cols <= 1 || m.colStride >= rows);
  // A single row's (column's) stride is never stepped: any leading
  // dimension at least the other size fits.
  if (rowMajor) {
    view = {true, true, static_cast<uint64_t>(m.cols),
            static_cast<uint64_t>(m.rows),
            m.rows <= 1 ? std::max(m.rowStride, cols) : m.rowStride};
  } else if (colMajor) {
    view = {true, false, static_cast<uint64_t>(m.rows),
            static_cast<uint64_t>(m.cols),
            m.cols <= 1 ? std::max(m.colStride, rows) : m.colStride};
  }
  return view;
}

/// cuBLASLt's product D(m x n) = opA(A) · opB(B) (+ beta · C, C = D) for our
/// C(M x N) = op(A)(M x K) · op(B)(K x N).
struct GemmPlan {
  int64_t rows = 0, cols = 0, depth = 0;         // our M, N, K
  const char *aData = nullptr, *bData = nullptr; // cuBLASLt's A and B
  ColumnMajor a, b, c;                           // their layouts, and C's
  bool transA = false, transB = false;           // cuBLASLt's ops
  uint64_t m() const { return static_cast<uint64_t>(cols); }
  uint64_t n() const { return static_cast<uint64_t>(rows); }
  uint64_t k() const { return static_cast<uint64_t>(depth); }
};

enum class GemmPlanError { None, Shapes, A, B, C };

/// Plans C = op(A) · op(B); an error when the sizes make no product, A or B
/// has no unit stride, or C no unit column stride.
inline GemmPlanError planGemm(const Matrix &a, bool transA, const Matrix &b,
                              bool transB, const Matrix &c, GemmPlan &plan) {
  plan.rows = transA ? a.cols : a.rows;
  plan.depth = transA ? a.rows : a.cols;
  int64_t depthB = transB ? b.cols : b.rows;
  plan.cols = transB ? b.rows : b.cols;
  if (plan.depth != depthB || plan.rows != c.rows || plan.cols != c.cols)
    return GemmPlanError::Shapes;
  ColumnMajor viewA = getColumnMajor(a), viewB = getColumnMajor(b);
  plan.c = getColumnMajor(c);
  if (!viewA.ok)
    return GemmPlanError::A;
  if (!viewB.ok)
    return GemmPlanError::B;
  if (!plan.c.ok || !plan.c.transposed)
    return GemmPlanError::C;
  plan.aData = b.data;
  plan.bData = a.data;
  plan.a = viewB;
  plan.b = viewA;
  // We need op(B)ᵀ: a row-major stored B is Bᵀ in column-major terms
  // already, so its op is its own transpose flag; a column-major one flips.
  plan.transA = transB != !viewB.transposed;
  plan.transB = transA != !viewA.transposed;
  return GemmPlanError::None;
}

} // namespace xent::runtime

#endif // XENT_LIB_RUNTIME_CUDA_GEMMPLAN_H
