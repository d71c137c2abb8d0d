//===- ChainWriter.cpp - Frontend loss chains from fuzzer bytes -----------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Each decision reads a few bytes; 0 (what the provider returns once the
// bytes run out) picks the plain choice, so short inputs give the common
// forms and every byte can make one thing unusual. The chains follow the
// forms docs/recognition.md lists (the corpus of python/tests/
// recognizer_forms*.py and the projections of
// test/Dialect/Xent/Recognize/projection*.mlir), written from their
// description: one linalg.generic per torch op, TOSA with MLIR 22's syntax.
//
//===----------------------------------------------------------------------===//

#include "ChainWriter.h"

#include "ChainBuilder.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace xent::fuzz;
using namespace xent::fuzz::chain;

namespace {

enum class Red { None, Sum, Mean };

const char *keyword(Red r) {
  return r == Red::None ? "none" : r == Red::Sum ? "sum" : "mean";
}

/// One mutation at most per chain; each makes the chain a near miss.
enum class Mutation {
  None,
  MaxFromOne,     // the row max starts from 1.0
  MeanByN,        // a masked mean divided by every row
  SmoothingScale, // the smoothing term scaled by ε, not ε / C
  CapScale,       // tanh(x / c) · d with d ≠ c
  ZUnmasked,      // the z-loss counts ignored rows
  ZOtherLse,      // the z-loss of another tensor's logsumexp
  Count
};

struct Loss {
  Red red = Red::Mean;
  int64_t ignore = -100;
  bool smoothing = false, softcap = false, zLoss = false;
  double eps = 0.1, cap = 30.0, z = 1e-4;
  Mutation mutation = Mutation::None;
};

class Decider {
public:
  explicit Decider(FuzzedDataProvider &p) : p(p) {}
  /// True with probability about num/den; false once the bytes run out.
  bool chance(unsigned num, unsigned den) {
    return p.ConsumeIntegralInRange<unsigned>(0, den - 1) >= den - num;
  }
  template <typename T> T pick(const std::vector<T> &choices) {
    return choices[p.ConsumeIntegralInRange<size_t>(0, choices.size() - 1)];
  }
  unsigned below(unsigned n) {
    return p.ConsumeIntegralInRange<unsigned>(0, n - 1);
  }

private:
  FuzzedDataProvider &p;
};

/// `perRow` ([N]) reduced as `red`: itself, its total, or the total over
/// `count`.
V reduce(Fn &f, const V &perRow, Red red, const V *count) {
  if (red == Red::None)
    return perRow;
  V sum = total(f, perRow);
  return red == Red::Sum ? sum : divideByCount(f, sum, *count);
}

/// `a · x + b · y` of two values of one shape.
V axpby(Fn &f, double a, const V &x, double b, const V &y) {
  unsigned rank = x.dims.size();
  std::string ka = f.cst(f32(a), "f32"), kb = f.cst(f32(b), "f32");
  return f.generic(
      {{x, identity(rank)}, {y, identity(rank)}}, f.empty(x.dims),
      identity(rank), rank, {}, [&](Body &body, std::vector<std::string> v) {
        std::string l = body.op("arith.mulf " + v[0] + ", " + ka + " : f32");
        std::string r = body.op("arith.mulf " + v[1] + ", " + kb + " : f32");
        return body.op("arith.addf " + l + ", " + r + " : f32");
      });
}

/// F.cross_entropy(x, t, ...) as torch-mlir lowers it, with the terms of
/// `l` (`other`: the tensor a ZOtherLse z-loss reads).
V torchLoss(Fn &f, V x, const V &t, const Loss &l, const V *other) {
  if (l.softcap) {
    double scale = l.mutation == Mutation::CapScale ? l.cap * 2 / 3 : l.cap;
    x = withConstant(
        f, unary(f, withConstant(f, x, "arith.divf", l.cap), "math.tanh"),
        "arith.mulf", scale);
  }
  V logp = logSoftmax(
      f, x, l.mutation == Mutation::MaxFromOne ? "1.000000e+00" : kNegInf);
  V nll = masked(f, t, l.ignore,
                 [&](Body &b, const std::string &ta, const std::string &) {
                   return b.op("arith.negf " + pick(b, logp, ta) + " : f32");
                 });
  V count;
  if (l.red == Red::Mean) {
    if (l.mutation == Mutation::MeanByN)
      count = f.fill(std::to_string(t.dims[0]), {}, "i64");
    else
      count = keptCount(f, t, l.ignore);
  }
  V loss = reduce(f, nll, l.red, &count);
  if (l.smoothing) {
    V s = rowSum(f, logp);
    V smooth = masked(
        f, t, l.ignore,
        [](Body &b, const std::string &, const std::string &sv) {
          return b.op("arith.negf " + sv + " : f32");
        },
        &s);
    double classes = static_cast<double>(x.dims[1]);
    double b = l.mutation == Mutation::SmoothingScale ? l.eps : l.eps / classes;
    loss = axpby(f, 1 - l.eps, loss, b, reduce(f, smooth, l.red, &count));
  }
  if (l.zLoss) {
    V lse = logSumExp(f, other ? *other : x);
    V sq;
    if (l.mutation == Mutation::ZUnmasked)
      sq = binary(f, lse, lse, "arith.mulf");
    else
      sq = masked(
          f, t, l.ignore,
          [](Body &b, const std::string &, const std::string &lv) {
            return b.op("arith.mulf " + lv + ", " + lv + " : f32");
          },
          &lse);
    loss = axpby(f, 1, loss, l.z, reduce(f, sq, l.red, &count));
  }
  return loss;
}

/// optax's softmax_cross_entropy_with_integer_labels: lse - x[t] per row
/// (plus z · lse²), a mean by the constant N or a sum.
V optaxLoss(Fn &f, const V &x, const V &t, Red red, double z) {
  V lse = logSumExp(f, x);
  std::string kz = f.cst(f32(z), "f32");
  V per = f.generic(
      {{t, identity(1)}, {lse, identity(1)}}, f.empty(t.dims), identity(1), 1,
      {}, [&](Body &b, std::vector<std::string> a) {
        std::string d =
            b.op("arith.subf " + a[1] + ", " + pick(b, x, a[0]) + " : f32");
        if (z == 0)
          return d;
        std::string sq = b.op("arith.mulf " + a[1] + ", " + a[1] + " : f32");
        std::string zs = b.op("arith.mulf " + kz + ", " + sq + " : f32");
        return b.op("arith.addf " + d + ", " + zs + " : f32");
      });
  V sum = total(f, per);
  if (red == Red::Sum)
    return sum;
  return withConstant(f, sum, "arith.divf", static_cast<double>(t.dims[0]));
}

/// How the backward's z-loss branch differs from the loss's (near misses).
enum class GradMutation { None, ZOtherLse, ZMeanByN, ZUnscaled, Count };

/// loss.backward(g) of `torchLoss` with a plain nll and an optional z-loss
/// `z` (0: none), as autograd writes it: nll_loss_backward, then
/// _log_softmax_backward_data, plus the z-loss branch (mul.Scalar, div by
/// the count, sum's expand, where, mul from both sides of lse · lse,
/// logsumexp_backward) added.
V torchGrad(Fn &f, const V &g, const V &x, const V &t, Red red, int64_t ignore,
            double z, GradMutation m, const V *other) {
  V logp = logSoftmax(f, x, kNegInf);
  std::string ign = f.cst(std::to_string(ignore), "i64");
  std::string ignIdx =
      f.emit("i", "arith.index_cast " + ign + " : i64 to index");
  std::string zero = f.cst("0.000000e+00", "f32");
  std::string gMap = red == Red::None ? map(2, {"d0"}) : map(2, {});
  V count, totalWeight;
  std::vector<std::pair<V, std::string>> ins = {{g, gMap}, {t, map(2, {"d0"})}};
  if (red == Red::Mean) {
    count = keptCount(f, t, ignore);
    totalWeight =
        f.generic({{count, map(0, {})}}, f.empty({}), map(0, {}), 0, {},
                  [](Body &b, std::vector<std::string> a) {
                    return b.op("arith.sitofp " + a[0] + " : i64 to f32");
                  });
    ins.push_back({totalWeight, map(2, {})});
  }
  V nll = f.generic(
      ins, f.empty(x.dims), identity(2), 2, {},
      [&](Body &b, std::vector<std::string> a) {
        std::string gv = a[0];
        if (red == Red::Mean)
          gv = b.op("arith.divf " + a[0] + ", " + a[2] + " : f32");
        std::string ng = b.op("arith.negf " + gv + " : f32");
        std::string ti = b.op("arith.index_cast " + a[1] + " : i64 to index");
        std::string c = b.op("linalg.index 1 : index");
        std::string ne = b.op("arith.cmpi ne, " + ti + ", " + c + " : index");
        std::string eq =
            b.op("arith.cmpi eq, " + ti + ", " + ignIdx + " : index");
        std::string o = b.op("arith.ori " + ne + ", " + eq + " : i1");
        return b.op("arith.select " + o + ", " + zero + ", " + ng + " : f32");
      });
  V softmaxPart =
      withRow(f, unary(f, logp, "math.exp"), rowSum(f, nll), "arith.mulf");
  V dx = binary(f, nll, softmaxPart, "arith.subf");
  if (z == 0)
    return dx;
  // The z-loss branch.
  V lse = logSumExp(f, m == GradMutation::ZOtherLse ? *other : x);
  V gz = m == GradMutation::ZUnscaled ? f.fill("1.000000e+00", g.dims) : g;
  gz = withConstant(f, gz, "arith.mulf", z);
  std::string zMap = red == Red::None ? identity(1) : map(1, {});
  std::vector<std::pair<V, std::string>> zIns = {
      {t, identity(1)}, {gz, zMap}, {lse, identity(1)}};
  V divisor;
  if (red == Red::Mean) {
    divisor = m == GradMutation::ZMeanByN
                  ? f.fill(std::to_string(t.dims[0]), {}, "i64")
                  : count;
    zIns.push_back({divisor, map(1, {})});
  }
  V gLse = f.generic(
      zIns, f.empty(t.dims), identity(1), 1, {},
      [&](Body &b, std::vector<std::string> a) {
        std::string gv = a[1];
        if (red == Red::Mean) {
          std::string c = b.op("arith.sitofp " + a[3] + " : i64 to f32");
          gv = b.op("arith.divf " + a[1] + ", " + c + " : f32");
        }
        std::string k = b.op("arith.cmpi ne, " + a[0] + ", " + ign + " : i64");
        std::string sel =
            b.op("arith.select " + k + ", " + gv + ", " + zero + " : f32");
        std::string one = b.op("arith.mulf " + sel + ", " + a[2] + " : f32");
        return b.op("arith.addf " + one + ", " + one + " : f32");
      });
  const V &zx = m == GradMutation::ZOtherLse ? *other : x;
  V dz = f.generic(
      {{zx, identity(2)}, {lse, map(2, {"d0"})}, {gLse, map(2, {"d0"})}},
      f.empty(x.dims), identity(2), 2, {},
      [](Body &b, std::vector<std::string> a) {
        std::string sh = b.op("arith.subf " + a[0] + ", " + a[1] + " : f32");
        std::string e = b.op("math.exp " + sh + " : f32");
        return b.op("arith.mulf " + a[2] + ", " + e + " : f32");
      });
  return binary(f, dx, dz, "arith.addf");
}

//===----------------------------------------------------------------------===//
// TOSA
//===----------------------------------------------------------------------===//

std::string shape(Fn &f, const std::vector<int64_t> &dims) {
  std::string values;
  for (int64_t d : dims)
    values += (values.empty() ? "" : ", ") + std::to_string(d);
  std::string n = std::to_string(dims.size());
  return f.emit("s", "tosa.const_shape {values = dense<[" + values +
                         "]> : tensor<" + n + "xindex>} : () -> !tosa.shape<" +
                         n + ">");
}

V reshape(Fn &f, const V &v, const std::vector<int64_t> &dims) {
  std::string s = shape(f, dims);
  return V{f.emit("r", "tosa.reshape " + v.name + ", " + s + " : (" + v.type() +
                           ", !tosa.shape<" + std::to_string(dims.size()) +
                           ">) -> " + tensorType(dims, v.elt)),
           dims, v.elt};
}

/// A TOSA constant tensor.
V constant(Fn &f, const std::string &literal, const std::vector<int64_t> &dims,
           const std::string &elt) {
  std::string ty = tensorType(dims, elt);
  return V{f.emit("k", "\"tosa.const\"() <{values = dense<" + literal +
                           "> : " + ty + "}> : () -> " + ty),
           dims, elt};
}

/// `op(a, b) -> result` for a TOSA elementwise op.
V tosa2(Fn &f, const char *op, const V &a, const V &b,
        const std::vector<int64_t> &dims, const std::string &elt = "f32") {
  return V{f.emit("t", std::string("tosa.") + op + " " + a.name + ", " +
                           b.name + " : (" + a.type() + ", " + b.type() +
                           ") -> " + tensorType(dims, elt)),
           dims, elt};
}

V tosa1(Fn &f, const char *op, const V &a, const std::vector<int64_t> &dims,
        const std::string &elt = "f32", const std::string &attrs = "") {
  return V{f.emit("t", std::string("tosa.") + op + " " + a.name + attrs +
                           " : (" + a.type() + ") -> " + tensorType(dims, elt)),
           dims, elt};
}

/// torch-mlir TorchToTosa: the log-softmax, the per-row gather at the safe
/// target, the ignore mask, the total kept at rank 1 (a `tensor<1xf32>`
/// loss), a mean by reciprocal(count).
V tosaLoss(Fn &f, const V &x, const V &t, Red red, int64_t ignore,
           Mutation mutation) {
  int64_t n = x.dims[0], c = x.dims[1];
  std::string axis1 = " {axis = 1 : i32}", axis0 = " {axis = 0 : i32}";
  V m = tosa1(f, "reduce_max", x, {n, 1}, "f32", axis1);
  V shifted = tosa2(f, "sub", x, m, {n, c});
  V s = tosa1(f, "reduce_sum", tosa1(f, "exp", shifted, {n, c}), {n, 1}, "f32",
              axis1);
  V logp = tosa2(f, "sub", shifted, tosa1(f, "log", s, {n, 1}), {n, c});
  V ign = constant(f, std::to_string(ignore), {1}, "i64");
  V kept =
      tosa1(f, "logical_not", tosa2(f, "equal", t, ign, {n}, "i1"), {n}, "i1");
  V zeroI = constant(f, "0", {1}, "i64");
  V safe =
      V{f.emit("t", "tosa.select " + kept.name + ", " + t.name + ", " +
                        zeroI.name + " : (" + kept.type() + ", " + t.type() +
                        ", " + zeroI.type() + ") -> " + t.type()),
        t.dims, "i64"};
  V idx = tosa1(f, "cast", reshape(f, safe, {n, 1}), {n, 1}, "i32");
  V values = reshape(f, logp, {n, c, 1});
  V picked = tosa2(f, "gather", values, idx, {n, 1, 1});
  V zp = constant(f, "0.000000e+00", {1}, "f32");
  V row = reshape(f, picked, {n, 1});
  V neg = V{f.emit("t", "tosa.negate " + row.name + ", " + zp.name + ", " +
                            zp.name + " : (" + row.type() + ", " + zp.type() +
                            ", " + zp.type() + ") -> " + row.type()),
            {n, 1},
            "f32"};
  V per = reshape(f, neg, {n});
  V zeroF = constant(f, "0.000000e+00", {1}, "f32");
  V nll =
      V{f.emit("t", "tosa.select " + kept.name + ", " + per.name + ", " +
                        zeroF.name + " : (" + kept.type() + ", " + per.type() +
                        ", " + zeroF.type() + ") -> " + per.type()),
        {n},
        "f32"};
  if (red == Red::None)
    return nll;
  V sum = tosa1(f, "reduce_sum", nll, {1}, "f32", axis0);
  if (red == Red::Sum)
    return sum;
  V count;
  if (mutation == Mutation::MeanByN) {
    count = constant(f, f32(static_cast<double>(n)), {1}, "f32");
  } else {
    V asFloat = tosa1(f, "cast", tosa1(f, "cast", kept, {n}, "i8"), {n}, "f32");
    count = tosa1(f, "reduce_sum", asFloat, {1}, "f32", axis0);
  }
  V shift = constant(f, "0", {1}, "i8");
  V recip = tosa1(f, "reciprocal", count, {1});
  return V{f.emit("t", "tosa.mul " + sum.name + ", " + recip.name + ", " +
                           shift.name + " : (" + sum.type() + ", " +
                           recip.type() + ", " + shift.type() + ") -> " +
                           sum.type()),
           {1},
           "f32"};
}

//===----------------------------------------------------------------------===//
// Projections
//===----------------------------------------------------------------------===//

enum class ProjMutation {
  None,
  WeightUntransposed,
  BiasPerRow,
  LogitsReturned,
  Count
};

/// `h · wᵀ (+ b)` as a linalg.matmul (transposed-B maps, or reading a
/// linalg.transpose of `w`), the bias in the accumulator or added after,
/// or (`tosa`) a tosa.matmul on a batch of one.
V projection(Fn &f, Decider &d, const V &h, const V &w, const V *b, bool tosa,
             ProjMutation mutation) {
  int64_t n = h.dims[0], hd = h.dims[1];
  int64_t v =
      mutation == ProjMutation::WeightUntransposed ? w.dims[1] : w.dims[0];
  if (tosa) {
    V zp = constant(f, "0.000000e+00", {1}, "f32");
    V h1 = reshape(f, h, {1, n, hd});
    V w1 = mutation == ProjMutation::WeightUntransposed
               ? reshape(f, w, {1, hd, v})
               : reshape(f,
                         tosa1(f, "transpose", w, {hd, v}, "f32",
                               " {perms = array<i32: 1, 0>}"),
                         {1, hd, v});
    V p = V{f.emit("t", "tosa.matmul " + h1.name + ", " + w1.name + ", " +
                            zp.name + ", " + zp.name + " : (" + h1.type() +
                            ", " + w1.type() + ", " + zp.type() + ", " +
                            zp.type() + ") -> " + tensorType({1, n, v}, "f32")),
            {1, n, v},
            "f32"};
    if (b) {
      V b1 = mutation == ProjMutation::BiasPerRow ? reshape(f, *b, {1, n, 1})
                                                  : reshape(f, *b, {1, 1, v});
      p = tosa2(f, "add", p, b1, {1, n, v});
    }
    return reshape(f, p, {n, v});
  }
  std::vector<int64_t> out = {n, v};
  V acc = f.fill("0.000000e+00", out);
  bool biasInAcc = b && mutation != ProjMutation::BiasPerRow && d.chance(1, 2);
  if (biasInAcc)
    acc = V{f.emit("bc", "linalg.broadcast ins(" + b->name + " : " + b->type() +
                             ") outs(" + f.empty(out).name + " : " +
                             tensorType(out, "f32") + ") dimensions = [0]"),
            out, "f32"};
  std::string p;
  std::string outType = tensorType(out, "f32");
  if (mutation == ProjMutation::WeightUntransposed) {
    p = f.emit("mm", "linalg.matmul ins(" + h.name + ", " + w.name + " : " +
                         h.type() + ", " + w.type() + ") outs(" + acc.name +
                         " : " + outType + ") -> " + outType);
  } else if (d.chance(1, 2)) {
    V wt = f.empty({hd, v});
    std::string t = f.emit("tr", "linalg.transpose ins(" + w.name + " : " +
                                     w.type() + ") outs(" + wt.name + " : " +
                                     wt.type() + ") permutation = [1, 0]");
    p = f.emit("mm", "linalg.matmul ins(" + h.name + ", " + t + " : " +
                         h.type() + ", " + wt.type() + ") outs(" + acc.name +
                         " : " + outType + ") -> " + outType);
  } else {
    p = f.emit(
        "mm", "linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
              "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, "
              "n)>] ins(" +
                  h.name + ", " + w.name + " : " + h.type() + ", " + w.type() +
                  ") outs(" + acc.name + " : " + outType + ") -> " + outType);
  }
  V logits{p, out, "f32"};
  if (b && !biasInAcc) {
    bool perRow = mutation == ProjMutation::BiasPerRow;
    logits = f.generic(
        {{logits, identity(2)}, {*b, map(2, {perRow ? "d0" : "d1"})}},
        f.empty(out), identity(2), 2, {},
        [](Body &body, std::vector<std::string> a) {
          return body.op("arith.addf " + a[0] + ", " + a[1] + " : f32");
        });
  }
  return logits;
}

std::string lossOp(Fn &f, const char *op, Red red, const std::string &operands,
                   const std::string &types, const std::string &result,
                   int64_t ignore) {
  return f.emit("l", std::string("xent.") + op + " " + keyword(red) + " " +
                         operands +
                         " {ignore_index = " + std::to_string(ignore) +
                         " : i64} : (" + types + ") -> " + result);
}

} // namespace

Chain xent::fuzz::writeChain(FuzzedDataProvider &p) {
  Decider d(p);
  Fn f;
  Chain chain;
  unsigned kind = d.below(9);
  int64_t classes = d.pick<int64_t>({10, 7, 16, 5, 3});
  bool dynamic = d.chance(1, 4);
  int64_t rows = d.pick<int64_t>({8, 6, 1, 13});
  std::vector<V> results;
  Red red = static_cast<Red>(2 - d.below(3)); // mean first
  int64_t ignore = d.pick<int64_t>({-100, -1, 0});

  if (kind <= 1) {
    // torch-mlir: the nll with label smoothing, softcap and z-loss terms.
    Loss l;
    l.red = red;
    l.ignore = ignore;
    l.smoothing = d.chance(1, 3);
    l.softcap = d.chance(1, 3);
    l.zLoss = d.chance(1, 3);
    l.eps = d.pick<double>({0.1, 0.2, 0.05});
    l.cap = d.pick<double>({30.0, 15.0, 50.0});
    l.z = d.pick<double>({1e-4, 1e-3, 1e-2});
    if (d.chance(1, 3))
      l.mutation = static_cast<Mutation>(
          1 + d.below(static_cast<unsigned>(Mutation::Count) - 1));
    // Mutations of a term the chain does not have change nothing.
    bool applies =
        l.mutation == Mutation::None || l.mutation == Mutation::MaxFromOne ||
        (l.mutation == Mutation::MeanByN && l.red == Red::Mean && rows > 1) ||
        (l.mutation == Mutation::SmoothingScale && l.smoothing) ||
        (l.mutation == Mutation::CapScale && l.softcap) ||
        ((l.mutation == Mutation::ZUnmasked ||
          l.mutation == Mutation::ZOtherLse) &&
         l.zLoss);
    if (!applies)
      l.mutation = Mutation::None;
    std::vector<int64_t> n = {
        dynamic && l.mutation != Mutation::MeanByN ? kDyn : rows};
    V x = f.arg("x", {n[0], classes});
    V t = f.arg("t", n, "i64");
    V other;
    if (l.mutation == Mutation::ZOtherLse)
      other = f.arg("o", {n[0], classes});
    f.setRows(t);
    results.push_back(torchLoss(
        f, x, t, l, l.mutation == Mutation::ZOtherLse ? &other : nullptr));
    chain.form = std::string("torch ") + keyword(l.red) +
                 (l.smoothing ? " smoothing" : "") +
                 (l.softcap ? " softcap" : "") + (l.zLoss ? " z-loss" : "") +
                 (l.mutation != Mutation::None ? " mutated" : "");
    if (l.mutation == Mutation::None)
      chain.expected = {"xent.cross_entropy"};
  } else if (kind == 2) {
    // optax, integer labels: nothing masked, a mean by N or a sum.
    Red r = red == Red::None ? Red::Mean : red;
    double z = d.chance(1, 2) ? d.pick<double>({1e-4, 1e-3}) : 0.0;
    V x = f.arg("x", {rows, classes});
    V t = f.arg("t", {rows}, "i64");
    results.push_back(optaxLoss(f, x, t, r, z));
    chain.form = std::string("optax ") + keyword(r) + (z ? " z-loss" : "");
    chain.expected = {"xent.cross_entropy"};
  } else if (kind == 3) {
    // TOSA with the total kept at rank 1.
    // (Dividing one row by N = 1 is dividing by its kept count or a sum.)
    Mutation m = d.chance(1, 4) && red == Red::Mean && rows > 1
                     ? Mutation::MeanByN
                     : Mutation::None;
    V x = f.arg("x", {rows, classes});
    V t = f.arg("t", {rows}, "i64");
    results.push_back(tosaLoss(f, x, t, red, ignore, m));
    chain.form = std::string("tosa ") + keyword(red) +
                 (m != Mutation::None ? " mutated" : "");
    if (m == Mutation::None)
      chain.expected = {"xent.cross_entropy"};
  } else if (kind == 7) {
    // The loss and its gradient in one function (autograd's joint graph),
    // with or without a z-loss; the near misses change the gradient's
    // z-loss branch only, so the loss is still raised.
    double z = d.chance(1, 2) ? d.pick<double>({1e-2, 1e-3}) : 0.0;
    GradMutation m = GradMutation::None;
    if (z != 0 && d.chance(1, 3))
      m = static_cast<GradMutation>(
          1 + d.below(static_cast<unsigned>(GradMutation::Count) - 1));
    if (m == GradMutation::ZMeanByN && (red != Red::Mean || rows == 1))
      m = GradMutation::None;
    int64_t n = dynamic && m != GradMutation::ZMeanByN ? kDyn : rows;
    V g = f.arg("g", red == Red::None ? std::vector<int64_t>{n}
                                      : std::vector<int64_t>{});
    V x = f.arg("x", {n, classes});
    V t = f.arg("t", {n}, "i64");
    V other;
    if (m == GradMutation::ZOtherLse)
      other = f.arg("o", {n, classes});
    f.setRows(t);
    Loss l;
    l.red = red;
    l.ignore = ignore;
    l.zLoss = z != 0;
    l.z = z;
    results.push_back(torchLoss(f, x, t, l, nullptr));
    results.push_back(
        torchGrad(f, g, x, t, red, ignore, z, m,
                  m == GradMutation::ZOtherLse ? &other : nullptr));
    chain.form = std::string("torch joint ") + keyword(red) +
                 (z != 0 ? " z-loss" : "") +
                 (m != GradMutation::None ? " mutated" : "");
    chain.expected = {"xent.cross_entropy"};
    if (m == GradMutation::None)
      chain.expected.push_back("xent.cross_entropy_grad");
  } else if (kind == 8) {
    // F.linear on [B, T, H]: linalg.batch_matmul with the transposed weight
    // broadcast over the batch (linalg.broadcast, or the product's map), the
    // loss op on [B, T, V] logits.
    int64_t batch = d.pick<int64_t>({2, 3, 1}),
            steps = d.pick<int64_t>({4, 1, 5});
    int64_t hidden = d.pick<int64_t>({16, 4});
    bool perBatch = d.chance(1, 4);
    V h = f.arg("h", {batch, steps, hidden});
    V w = perBatch ? f.arg("w", {batch, hidden, classes})
                   : f.arg("w", {classes, hidden});
    V t = f.arg("t", {batch, steps}, "i64");
    std::vector<int64_t> out = {batch, steps, classes};
    V acc = f.fill("0.000000e+00", out);
    std::string outType = tensorType(out, "f32");
    std::string rhs, rhsType, maps;
    if (perBatch) {
      rhs = w.name;
      rhsType = w.type();
    } else {
      V wt = f.empty({hidden, classes});
      rhs = f.emit("tr", "linalg.transpose ins(" + w.name + " : " + w.type() +
                             ") outs(" + wt.name + " : " + wt.type() +
                             ") permutation = [1, 0]");
      rhsType = wt.type();
      if (d.chance(1, 2)) {
        maps = "indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, "
               "affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> "
               "(b, m, n)>] ";
      } else {
        V wb = f.empty({batch, hidden, classes});
        rhs = f.emit("bc", "linalg.broadcast ins(" + rhs + " : " + rhsType +
                               ") outs(" + wb.name + " : " + wb.type() +
                               ") dimensions = [0]");
        rhsType = wb.type();
      }
    }
    std::string logits =
        f.emit("bmm", "linalg.batch_matmul " + maps + "ins(" + h.name + ", " +
                          rhs + " : " + h.type() + ", " + rhsType + ") outs(" +
                          acc.name + " : " + outType + ") -> " + outType);
    std::string lossType =
        red == Red::None ? tensorType(t.dims, "f32") : "tensor<f32>";
    results.push_back(
        V{f.emit("l", std::string("xent.cross_entropy ") + keyword(red) + " " +
                          logits + ", " + t.name +
                          " {axis = 2 : i64, ignore_index = " +
                          std::to_string(ignore) + " : i64} : (" + outType +
                          ", " + t.type() + ") -> " + lossType),
          red == Red::None ? t.dims : std::vector<int64_t>{}});
    chain.form = std::string("batched projection ") + keyword(red) +
                 (perBatch ? " mutated" : "");
    chain.expected = {perBatch && batch != 1 ? "xent.cross_entropy"
                                             : "xent.linear_cross_entropy"};
    // A batch of one whose right operand is a [1, H, V] argument is read
    // as [H, V] untransposed: not raised either.
    if (perBatch)
      chain.expected = {"xent.cross_entropy"};
  } else {
    // A projection before the loss (kind 4: the xent op, 5: a torch chain,
    // 6: the gradient and its backward products).
    int64_t hidden = d.pick<int64_t>({16, 4, 9});
    bool tosa = d.chance(1, 3);
    bool bias = d.chance(1, 2);
    ProjMutation pm = ProjMutation::None;
    if (d.chance(1, 4))
      pm = static_cast<ProjMutation>(
          1 + d.below(static_cast<unsigned>(ProjMutation::Count) - 1));
    // A per-row addend needs a bias; the backward products need [V, H].
    if ((pm == ProjMutation::BiasPerRow && !bias) ||
        (pm == ProjMutation::WeightUntransposed && kind == 6))
      pm = ProjMutation::None;
    int64_t n = dynamic && !tosa ? kDyn : rows;
    V g;
    if (kind == 6)
      g = f.arg("g", red == Red::None ? std::vector<int64_t>{n}
                                      : std::vector<int64_t>{});
    V h = f.arg("h", {n, hidden});
    V w = pm == ProjMutation::WeightUntransposed
              ? f.arg("w", {hidden, classes})
              : f.arg("w", {classes, hidden});
    V b;
    if (bias)
      b = f.arg("b", {pm == ProjMutation::BiasPerRow ? n : classes});
    V t = f.arg("t", {n}, "i64");
    f.setRows(t);
    V logits = projection(f, d, h, w, bias ? &b : nullptr, tosa, pm);
    std::string lossType =
        red == Red::None ? tensorType({n}, "f32") : "tensor<f32>";
    std::string ops = logits.name + ", " + t.name;
    std::string types = logits.type() + ", " + t.type();
    chain.form = std::string("projection") + (tosa ? " tosa" : "") +
                 (bias ? " bias" : "") +
                 (pm != ProjMutation::None ? " mutated" : "");
    bool raisedToLinear = pm == ProjMutation::None;
    if (kind == 4 || kind == 5) {
      if (kind == 4) {
        results.push_back(
            V{lossOp(f, "cross_entropy", red, ops, types, lossType, ignore),
              red == Red::None ? std::vector<int64_t>{n}
                               : std::vector<int64_t>{}});
      } else {
        Loss l;
        l.red = red;
        l.ignore = ignore;
        results.push_back(torchLoss(f, logits, t, l, nullptr));
        // A chain on logits that are no projection (a per-row addend, an
        // untransposed weight) reads them as an expression the recognizer
        // may or may not take apart: no promise.
        chain.checked =
            pm == ProjMutation::None || pm == ProjMutation::LogitsReturned;
      }
      chain.expected = {raisedToLinear ? "xent.linear_cross_entropy"
                                       : "xent.cross_entropy"};
    } else {
      bool pair = d.chance(1, 2);
      bool dlogitsReturned = d.chance(1, 5);
      if (pair) {
        V lv{lossOp(f, "cross_entropy", red, ops, types, lossType, ignore),
             red == Red::None ? std::vector<int64_t>{n}
                              : std::vector<int64_t>{}};
        results.push_back(lv);
      }
      V dl{lossOp(f, "cross_entropy_grad", red, g.name + ", " + ops,
                  g.type() + ", " + types, logits.type(), ignore),
           logits.dims};
      // d_hidden = dlogits · W, d_weight = dlogitsᵀ · hidden, d_bias = Σ_rows.
      int64_t v = logits.dims[1];
      V dh{f.emit("dh", "linalg.matmul ins(" + dl.name + ", " + w.name + " : " +
                            dl.type() + ", " + w.type() + ") outs(" +
                            f.fill("0.000000e+00", {n, hidden}).name + " : " +
                            tensorType({n, hidden}, "f32") + ") -> " +
                            tensorType({n, hidden}, "f32")),
           {n, hidden}};
      std::string dwType = tensorType({v, hidden}, "f32");
      V dw{
          f.emit(
              "dw",
              "linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, "
              "affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, "
              "n)>] ins(" +
                  dl.name + ", " + h.name + " : " + dl.type() + ", " +
                  h.type() + ") outs(" +
                  f.fill("0.000000e+00", {v, hidden}).name + " : " + dwType +
                  ") -> " + dwType),
          {v, hidden}};
      results.push_back(dh);
      results.push_back(dw);
      if (bias && pm != ProjMutation::BiasPerRow)
        results.push_back(f.generic(
            {{dl, identity(2)}}, f.fill("0.000000e+00", {v}), map(2, {"d1"}), 2,
            {0}, [](Body &body, std::vector<std::string> a) {
              return body.op("arith.addf " + a[0] + ", " + a[1] + " : f32");
            }));
      if (dlogitsReturned)
        results.push_back(dl);
      bool linear = raisedToLinear && !dlogitsReturned;
      if (linear)
        chain.expected = {pair ? "xent.linear_cross_entropy_and_grad"
                               : "xent.linear_cross_entropy_grad"};
      else if (pair)
        chain.expected = {"xent.cross_entropy", "xent.cross_entropy_grad"};
      else
        chain.expected = {"xent.cross_entropy_grad"};
    }
    if (pm == ProjMutation::LogitsReturned)
      results.push_back(logits);
  }
  chain.text = f.text("chain", results);
  return chain;
}
