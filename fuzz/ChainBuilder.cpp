//===- ChainBuilder.cpp - Writing MLIR text for ChainWriter ---------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#include "ChainBuilder.h"

namespace xent::fuzz::chain {

std::string Body::op(const std::string &rhs) {
  std::string n = fn.fresh("b");
  lines.push_back(n + " = " + rhs);
  return n;
}

//===----------------------------------------------------------------------===//
// linalg pieces (torch-mlir TorchToLinalg: one generic per op)
//===----------------------------------------------------------------------===//

const std::string kNegInf = "0xFF800000";

/// max over the classes of `x` ([N, C]), from `start`.
V rowMax(Fn &f, const V &x, const std::string &start) {
  V init = f.fill(start, {x.dims[0]});
  return f.generic({{x, identity(2)}}, init, map(2, {"d0"}), 2, {1},
                   [](Body &b, std::vector<std::string> a) {
                     return b.op("arith.maximumf " + a[0] + ", " + a[1] +
                                 " : f32");
                   });
}

/// `op(x, r)` with `r` ([N]) read along the rows of `x` ([N, C]).
V withRow(Fn &f, const V &x, const V &r, const char *op) {
  V init = f.empty(x.dims);
  return f.generic({{x, identity(2)}, {r, map(2, {"d0"})}}, init, identity(2),
                   2, {}, [op](Body &b, std::vector<std::string> a) {
                     return b.op(std::string(op) + " " + a[0] + ", " + a[1] +
                                 " : f32");
                   });
}

/// An elementwise `op` on `x` (any rank, identity maps).
V unary(Fn &f, const V &x, const std::string &op) {
  unsigned rank = x.dims.size();
  V init = f.empty(x.dims);
  return f.generic({{x, identity(rank)}}, init, identity(rank), rank, {},
                   [&](Body &b, std::vector<std::string> a) {
                     return b.op(op + " " + a[0] + " : f32");
                   });
}

/// `op(x, c)` with the constant c.
V withConstant(Fn &f, const V &x, const char *op, double c) {
  unsigned rank = x.dims.size();
  std::string k = f.cst(f32(c), "f32");
  V init = f.empty(x.dims);
  return f.generic({{x, identity(rank)}}, init, identity(rank), rank, {},
                   [&](Body &b, std::vector<std::string> a) {
                     return b.op(std::string(op) + " " + a[0] + ", " + k +
                                 " : f32");
                   });
}

/// `op(x, y)` of two tensors of one shape.
V binary(Fn &f, const V &x, const V &y, const char *op) {
  unsigned rank = x.dims.size();
  V init = f.empty(x.dims);
  return f.generic(
      {{x, identity(rank)}, {y, identity(rank)}}, init, identity(rank), rank,
      {}, [op](Body &b, std::vector<std::string> a) {
        return b.op(std::string(op) + " " + a[0] + ", " + a[1] + " : f32");
      });
}

/// Σ over the classes of `x` ([N, C]).
V rowSum(Fn &f, const V &x) {
  V init = f.fill("0.000000e+00", {x.dims[0]});
  return f.generic({{x, identity(2)}}, init, map(2, {"d0"}), 2, {1},
                   [](Body &b, std::vector<std::string> a) {
                     return b.op("arith.addf " + a[0] + ", " + a[1] + " : f32");
                   });
}

/// Σ of `x` ([N]) into a 0-d tensor.
V total(Fn &f, const V &x) {
  V init = f.fill("0.000000e+00", {});
  return f.generic({{x, identity(1)}}, init, map(1, {}), 1, {0},
                   [](Body &b, std::vector<std::string> a) {
                     return b.op("arith.addf " + a[0] + ", " + a[1] + " : f32");
                   });
}

/// log_softmax(x) along the classes; `start` is the max's initial value.
V logSoftmax(Fn &f, const V &x, const std::string &start) {
  V m = rowMax(f, x, start);
  V shifted = withRow(f, x, m, "arith.subf");
  V s = rowSum(f, unary(f, shifted, "math.exp"));
  return withRow(f, shifted, unary(f, s, "math.log"), "arith.subf");
}

/// torch.logsumexp(x, 1): the max guarded by masked_fill(|m| == inf, 0).
V logSumExp(Fn &f, const V &x) {
  V m = rowMax(f, x, kNegInf);
  std::string inf = f.cst("0x7F800000", "f32");
  std::string zero = f.cst("0.000000e+00", "f32");
  V mg = f.generic({{m, identity(1)}}, f.empty(m.dims), identity(1), 1, {},
                   [&](Body &b, std::vector<std::string> a) {
                     std::string ab = b.op("math.absf " + a[0] + " : f32");
                     std::string isInf =
                         b.op("arith.cmpf oeq, " + ab + ", " + inf + " : f32");
                     return b.op("arith.select " + isInf + ", " + zero + ", " +
                                 a[0] + " : f32");
                   });
  V s = rowSum(f, unary(f, withRow(f, x, mg, "arith.subf"), "math.exp"));
  return f.generic({{s, identity(1)}, {mg, identity(1)}}, f.empty(m.dims),
                   identity(1), 1, {}, [](Body &b, std::vector<std::string> a) {
                     std::string l = b.op("math.log " + a[0] + " : f32");
                     return b.op("arith.addf " + l + ", " + a[1] + " : f32");
                   });
}

/// select(t != ignore, v, 0) per row (`v` is [N] or computed by `value`
/// from the target's block argument).
V masked(Fn &f, const V &t, int64_t ignore, const RowFn &value, const V *v) {
  std::string ign = f.cst(std::to_string(ignore), "i64");
  std::string zero = f.cst("0.000000e+00", "f32");
  std::vector<std::pair<V, std::string>> ins = {{t, identity(1)}};
  if (v)
    ins.push_back({*v, identity(1)});
  return f.generic(ins, f.empty(t.dims), identity(1), 1, {},
                   [&](Body &b, std::vector<std::string> a) {
                     std::string val = value(b, a[0], v ? a[1] : "");
                     std::string kept =
                         b.op("arith.cmpi ne, " + a[0] + ", " + ign + " : i64");
                     return b.op("arith.select " + kept + ", " + val + ", " +
                                 zero + " : f32");
                   });
}

/// -logp[i, t_i] in the body of a generic over the rows.
std::string pick(Body &b, const V &source, const std::string &target) {
  std::string ti = b.op("arith.index_cast " + target + " : i64 to index");
  std::string i = b.op("linalg.index 0 : index");
  return b.op("tensor.extract " + source.name + "[" + i + ", " + ti +
              "] : " + source.type());
}

/// The kept count Σ (t != ignore) as a 0-d i64 tensor.
V keptCount(Fn &f, const V &t, int64_t ignore) {
  std::string ign = f.cst(std::to_string(ignore), "i64");
  V init = f.fill("0", {}, "i64");
  return f.generic({{t, identity(1)}}, init, map(1, {}), 1, {0},
                   [&](Body &b, std::vector<std::string> a) {
                     std::string k =
                         b.op("arith.cmpi ne, " + a[0] + ", " + ign + " : i64");
                     std::string e = b.op("arith.extui " + k + " : i1 to i64");
                     return b.op("arith.addi " + e + ", " + a[1] + " : i64");
                   });
}

/// A 0-d `x / sitofp(count)`.
V divideByCount(Fn &f, const V &x, const V &count) {
  return f.generic({{x, map(0, {})}, {count, map(0, {})}}, f.empty({}),
                   map(0, {}), 0, {}, [](Body &b, std::vector<std::string> a) {
                     std::string c =
                         b.op("arith.sitofp " + a[1] + " : i64 to f32");
                     return b.op("arith.divf " + a[0] + ", " + c + " : f32");
                   });
}

} // namespace xent::fuzz::chain
