// The xentGemm* mapping of row-major products onto cuBLASLt's column-major
// one (lib/Runtime/CUDA/GemmPlan.h), executed on the host: each plan is run
// by a naive column-major GEMM with the plan's sizes, ops and leading
// dimensions on the same memory, and compared with the row-major product
// computed from the logical indices. Cases: every transpose of A and B, each
// operand stored row-major, column-major or with padded rows, single rows
// and columns, and the five products of the linear lowering.

#include "GemmPlan.h"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace xent::runtime;

namespace {

/// A logical rows x cols matrix in its own storage.
struct Stored {
  std::vector<double> data;
  Matrix m;
  double &at(int64_t i, int64_t j) {
    return reinterpret_cast<double *>(
        m.data)[i * m.rowStride + j * m.colStride];
  }
};

/// Storage 0: row-major, 1: column-major, 2: row-major with padded rows.
Stored make(int64_t rows, int64_t cols, int storage, unsigned &seed) {
  Stored s;
  int64_t rs = cols, cs = 1;
  if (storage == 1) {
    rs = 1;
    cs = rows;
  } else if (storage == 2) {
    rs = cols + 3;
  }
  s.data.assign(
      static_cast<size_t>(std::max<int64_t>(rows * cols * 2 + rows * 3 + 8, 1)),
      0);
  s.m = {reinterpret_cast<char *>(s.data.data()), rows, cols, rs, cs};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      seed = seed * 1103515245u + 12345u;
      s.at(i, j) = static_cast<double>((seed >> 16) % 17) - 8;
    }
  return s;
}

/// Column-major element (i, j) of the stored matrix behind `data` with `ld`.
double colMajor(const char *data, int64_t ld, bool trans, uint64_t i,
                uint64_t j) {
  const double *p = reinterpret_cast<const double *>(data);
  return trans ? p[j + i * ld] : p[i + j * ld];
}

/// Runs op(A) · op(B) into C (beta 0) through the plan, and checks it.
bool run(const char *name, Stored &a, bool ta, Stored &b, bool tb, Stored &c) {
  GemmPlan plan;
  if (planGemm(a.m, ta, b.m, tb, c.m, plan) != GemmPlanError::None) {
    std::printf("%s: no plan\n", name);
    return false;
  }
  // The layouts must describe memory inside each matrix: ld at least rows.
  for (const ColumnMajor *v : {&plan.a, &plan.b, &plan.c})
    if (v->ld < static_cast<int64_t>(std::max<uint64_t>(v->rows, 1))) {
      std::printf("%s: ld %ld < rows %lu\n", name, static_cast<long>(v->ld),
                  static_cast<unsigned long>(v->rows));
      return false;
    }
  // D(m x n) = opA(A) · opB(B), D written through C's layout.
  for (uint64_t i = 0; i < plan.m(); ++i)
    for (uint64_t j = 0; j < plan.n(); ++j) {
      double sum = 0;
      for (uint64_t l = 0; l < plan.k(); ++l)
        sum += colMajor(plan.aData, plan.a.ld, plan.transA, i, l) *
               colMajor(plan.bData, plan.b.ld, plan.transB, l, j);
      reinterpret_cast<double *>(c.m.data)[i + j * plan.c.ld] = sum;
    }
  for (int64_t i = 0; i < c.m.rows; ++i)
    for (int64_t j = 0; j < c.m.cols; ++j) {
      double want = 0;
      for (int64_t l = 0; l < plan.depth; ++l)
        want += (ta ? a.at(l, i) : a.at(i, l)) * (tb ? b.at(j, l) : b.at(l, j));
      if (c.at(i, j) != want) {
        std::printf("%s: C[%ld, %ld] = %g, want %g\n", name,
                    static_cast<long>(i), static_cast<long>(j), c.at(i, j),
                    want);
        return false;
      }
    }
  return true;
}

} // namespace

/// M, N, K of the products.
constexpr int64_t kSizes[][3] = {
    {5, 7, 3}, {1, 6, 4}, {6, 1, 4}, {3, 5, 1}, {1, 1, 9}};

int main() {
  unsigned seed = 1;
  int failures = 0, cases = 0;
  // Every transpose and storage of A and B, C row-major (padded or not).
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int sa = 0; sa < 3; ++sa)
        for (int sb = 0; sb < 3; ++sb)
          for (int sc = 0; sc < 3; sc += 2)
            for (const auto &size : kSizes) {
              int64_t m = size[0], n = size[1], k = size[2];
              Stored a = ta ? make(k, m, sa, seed) : make(m, k, sa, seed);
              Stored b = tb ? make(n, k, sb, seed) : make(k, n, sb, seed);
              Stored c = make(m, n, sc, seed);
              ++cases;
              char name[96];
              std::snprintf(name, sizeof(name), "t%d%d s%d%d%d %ldx%ldx%ld", ta,
                            tb, sa, sb, sc, static_cast<long>(m),
                            static_cast<long>(n), static_cast<long>(k));
              failures += !run(name, a, ta, b, tb, c);
            }
  std::printf("%d of %d products wrong\n", failures, cases);

  // The products of the linear lowering, r = 5 rows of H = 4 and V = 6
  // classes, with their cuBLASLt ops.
  Stored h = make(5, 4, 0, seed), w = make(6, 4, 0, seed),
         logits = make(5, 6, 2, seed);
  GemmPlan plan;
  bool ok = run("logits", h, false, w, true, logits);
  planGemm(h.m, false, w.m, true, logits.m, plan);
  std::printf("logits = h . w^T: %s, cuBLASLt %c%c m=%lu n=%lu k=%lu\n",
              ok ? "ok" : "WRONG", plan.transA ? 'T' : 'N',
              plan.transB ? 'T' : 'N', static_cast<unsigned long>(plan.m()),
              static_cast<unsigned long>(plan.n()),
              static_cast<unsigned long>(plan.k()));
  Stored dl = make(5, 6, 2, seed), dh = make(5, 4, 0, seed);
  ok = run("d_hidden", dl, false, w, false, dh);
  planGemm(dl.m, false, w.m, false, dh.m, plan);
  std::printf("d_hidden = dl . w: %s, cuBLASLt %c%c m=%lu n=%lu k=%lu\n",
              ok ? "ok" : "WRONG", plan.transA ? 'T' : 'N',
              plan.transB ? 'T' : 'N', static_cast<unsigned long>(plan.m()),
              static_cast<unsigned long>(plan.n()),
              static_cast<unsigned long>(plan.k()));
  Stored dw = make(6, 4, 0, seed);
  ok = run("d_weight", dl, true, h, false, dw);
  planGemm(dl.m, true, h.m, false, dw.m, plan);
  std::printf("d_weight = dl^T . h: %s, cuBLASLt %c%c m=%lu n=%lu k=%lu\n",
              ok ? "ok" : "WRONG", plan.transA ? 'T' : 'N',
              plan.transB ? 'T' : 'N', static_cast<unsigned long>(plan.m()),
              static_cast<unsigned long>(plan.n()),
              static_cast<unsigned long>(plan.k()));
  // ones as a 1 x r row whose stride (the leading dimension) is padded.
  Stored ones = make(1, 5, 0, seed), db = make(1, 6, 0, seed);
  ones.m.rowStride = 8;
  ok = run("d_bias", ones, false, dl, false, db);
  planGemm(ones.m, false, dl.m, false, db.m, plan);
  std::printf(
      "d_bias = 1 . dl: %s, cuBLASLt %c%c m=%lu n=%lu k=%lu ldb=%ld ldc=%ld\n",
      ok ? "ok" : "WRONG", plan.transA ? 'T' : 'N', plan.transB ? 'T' : 'N',
      static_cast<unsigned long>(plan.m()),
      static_cast<unsigned long>(plan.n()),
      static_cast<unsigned long>(plan.k()), static_cast<long>(plan.b.ld),
      static_cast<long>(plan.c.ld));

  // The bias without cuBLASLt's epilogue: C += ones (r x 1) · bias (1 x V).
  Stored onesColumn = make(5, 1, 0, seed), biasRow = make(1, 6, 0, seed),
         rank1 = make(5, 6, 2, seed);
  ok = run("bias rows", onesColumn, false, biasRow, false, rank1);
  planGemm(onesColumn.m, false, biasRow.m, false, rank1.m, plan);
  std::printf("bias rows = 1 . bias: %s, cuBLASLt %c%c m=%lu n=%lu k=%lu "
              "lda=%ld ldb=%ld\n",
              ok ? "ok" : "WRONG", plan.transA ? 'T' : 'N',
              plan.transB ? 'T' : 'N', static_cast<unsigned long>(plan.m()),
              static_cast<unsigned long>(plan.n()),
              static_cast<unsigned long>(plan.k()),
              static_cast<long>(plan.a.ld), static_cast<long>(plan.b.ld));

  // What is refused.
  Stored strided = make(3, 3, 0, seed), cm = make(3, 3, 1, seed),
         rm = make(3, 3, 0, seed);
  strided.m.colStride = 2;
  strided.m.rowStride = 7;
  std::printf(
      "A without a unit stride: %d\n",
      static_cast<int>(planGemm(strided.m, false, rm.m, false, rm.m, plan)));
  std::printf(
      "B without a unit stride: %d\n",
      static_cast<int>(planGemm(rm.m, false, strided.m, true, rm.m, plan)));
  std::printf("C column-major: %d\n",
              static_cast<int>(planGemm(cm.m, false, cm.m, false, cm.m, plan)));
  std::printf("sizes: %d\n",
              static_cast<int>(planGemm(h.m, false, h.m, false, h.m, plan)));
  return failures ? 1 : 0;
}
