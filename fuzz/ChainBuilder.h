//===- ChainBuilder.h - Writing MLIR text for ChainWriter -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// A small text builder for the chains of ChainWriter.cpp: values with their
// tensor types, one function with fresh SSA names, linalg.generic with a
// body, and the linalg pieces of torch-mlir's lowering (one generic per
// torch op) that the forms are made of.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_FUZZ_CHAINBUILDER_H
#define XENT_FUZZ_CHAINBUILDER_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xent::fuzz::chain {

constexpr int64_t kDyn = -1;

inline std::string tensorType(const std::vector<int64_t> &dims,
                              const std::string &elt) {
  std::string s = "tensor<";
  for (int64_t d : dims)
    s += (d == kDyn ? std::string("?") : std::to_string(d)) + "x";
  return s + elt + ">";
}

/// An SSA value and its tensor type.
struct V {
  std::string name;
  std::vector<int64_t> dims;
  std::string elt = "f32";
  std::string type() const { return tensorType(dims, elt); }
};

/// `affine_map<(d0, .., d{loops-1}) -> (results)>`.
inline std::string map(unsigned loops,
                       const std::vector<std::string> &results) {
  std::string s = "affine_map<(";
  for (unsigned i = 0; i < loops; ++i)
    s += (i ? ", d" : "d") + std::to_string(i);
  s += ") -> (";
  for (size_t i = 0; i < results.size(); ++i)
    s += (i ? ", " : "") + results[i];
  return s + ")>";
}

inline std::string identity(unsigned loops) {
  std::vector<std::string> r;
  for (unsigned i = 0; i < loops; ++i)
    r.push_back("d" + std::to_string(i));
  return map(loops, r);
}

inline std::string f32(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9e",
                static_cast<double>(static_cast<float>(v)));
  return buf;
}

class Fn;

/// The body of a linalg.generic being written.
struct Body {
  Fn &fn;
  std::vector<std::string> lines;
  std::string op(const std::string &rhs);
};

/// One function being written. Every SSA name is fresh (generic bodies share
/// the function's scope).
class Fn {
public:
  std::string fresh(const char *hint) {
    return std::string("%") + hint + std::to_string(counter++);
  }
  V arg(const char *hint, std::vector<int64_t> dims, std::string elt = "f32") {
    V v{fresh(hint), std::move(dims), std::move(elt)};
    args.push_back(v.name + ": " + v.type());
    return v;
  }
  std::string emit(const char *hint, const std::string &rhs) {
    std::string n = fresh(hint);
    lines.push_back(n + " = " + rhs);
    return n;
  }
  V value(const char *hint, const std::string &rhs, std::vector<int64_t> dims,
          std::string elt = "f32") {
    return V{emit(hint, rhs + " : " + tensorType(dims, elt)), dims, elt};
  }
  std::string cst(const std::string &literal, const std::string &elt) {
    return emit("c", "arith.constant " + literal + " : " + elt);
  }
  /// The index value of the dynamic row count, from `rows` (a tensor whose
  /// first dimension it is).
  void setRows(const V &rows) {
    if (!rows.dims.empty() && rows.dims[0] == kDyn) {
      std::string zero = cst("0", "index");
      rowCount = emit("n", "tensor.dim " + rows.name + ", " + zero + " : " +
                               rows.type());
    }
  }
  V empty(std::vector<int64_t> dims, std::string elt = "f32") {
    std::string sizes;
    for (int64_t d : dims)
      if (d == kDyn)
        sizes += (sizes.empty() ? "" : ", ") + rowCount;
    V v{fresh("e"), dims, elt};
    lines.push_back(v.name + " = tensor.empty(" + sizes + ") : " + v.type());
    return v;
  }
  V fill(const std::string &literal, std::vector<int64_t> dims,
         std::string elt = "f32") {
    std::string c = cst(literal, elt);
    V e = empty(dims, elt);
    V v{fresh("f"), dims, elt};
    lines.push_back(v.name + " = linalg.fill ins(" + c + " : " + elt +
                    ") outs(" + e.name + " : " + e.type() + ") -> " + v.type());
    return v;
  }
  /// A linalg.generic over `loops` loops (`reduced` lists the reduction
  /// ones) reading `ins` through their maps into `init` through `outMap`;
  /// `body` gets the block arguments and returns the yielded value.
  V generic(const std::vector<std::pair<V, std::string>> &ins, const V &init,
            const std::string &outMap, unsigned loops,
            const std::vector<unsigned> &reduced,
            const std::function<std::string(Body &, std::vector<std::string>)>
                &body) {
    std::string maps, iterators, operands, types;
    for (const auto &[v, m] : ins) {
      maps += m + ", ";
      operands += (operands.empty() ? "" : ", ") + v.name;
      types += (types.empty() ? "" : ", ") + v.type();
    }
    maps += outMap;
    for (unsigned i = 0; i < loops; ++i) {
      bool red = false;
      for (unsigned r : reduced)
        red |= r == i;
      iterators +=
          std::string(i ? ", " : "") + (red ? "\"reduction\"" : "\"parallel\"");
    }
    std::vector<std::string> blockArgs;
    std::string header = "^bb0(";
    for (const auto &[v, m] : ins) {
      blockArgs.push_back(fresh("a"));
      header += blockArgs.back() + ": " + v.elt + ", ";
    }
    blockArgs.push_back(fresh("a"));
    header += blockArgs.back() + ": " + init.elt + "):";
    Body b{*this, {}};
    std::string yielded = body(b, blockArgs);
    V result{fresh("g"), init.dims, init.elt};
    std::string s = result.name + " = linalg.generic {indexing_maps = [" +
                    maps + "], iterator_types = [" + iterators + "]}";
    if (!ins.empty())
      s += " ins(" + operands + " : " + types + ")";
    s += " outs(" + init.name + " : " + init.type() + ") {";
    lines.push_back(s);
    lines.push_back(header);
    for (const std::string &l : b.lines)
      lines.push_back("  " + l);
    lines.push_back("  linalg.yield " + yielded + " : " + init.elt);
    lines.push_back("} -> " + init.type());
    return result;
  }
  std::string text(const std::string &name,
                   const std::vector<V> &results) const {
    std::string types, names;
    for (const V &r : results) {
      types += (types.empty() ? "" : ", ") + r.type();
      names += (names.empty() ? "" : ", ") + r.name;
    }
    std::string s = "func.func @" + name + "(";
    for (size_t i = 0; i < args.size(); ++i)
      s += (i ? ", " : "") + args[i];
    s += ") -> (" + types + ") {\n";
    for (const std::string &l : lines)
      s += "  " + l + "\n";
    s += "  return " + names + " : " + types + "\n}\n";
    return s;
  }

  std::string rowCount;

private:
  std::vector<std::string> args, lines;
  unsigned counter = 0;
};

//===----------------------------------------------------------------------===//
// linalg pieces
//===----------------------------------------------------------------------===//

extern const std::string kNegInf;

/// Callback writing a generic's body: the block arguments in, the yielded
/// value out.
using BodyFn = std::function<std::string(Body &, std::vector<std::string>)>;
/// A masked value's per-row computation from the target's block argument and
/// (when given) the value's.
using RowFn = std::function<std::string(Body &, const std::string &,
                                        const std::string &)>;

V rowMax(Fn &f, const V &x, const std::string &start);
V withRow(Fn &f, const V &x, const V &r, const char *op);
V unary(Fn &f, const V &x, const std::string &op);
V withConstant(Fn &f, const V &x, const char *op, double c);
V binary(Fn &f, const V &x, const V &y, const char *op);
V rowSum(Fn &f, const V &x);
V total(Fn &f, const V &x);
V logSoftmax(Fn &f, const V &x, const std::string &start);
V logSumExp(Fn &f, const V &x);
V masked(Fn &f, const V &t, int64_t ignore, const RowFn &value,
         const V *v = nullptr);
std::string pick(Body &b, const V &source, const std::string &target);
V keptCount(Fn &f, const V &t, int64_t ignore);
V divideByCount(Fn &f, const V &x, const V &count);

} // namespace xent::fuzz::chain

#endif // XENT_FUZZ_CHAINBUILDER_H
