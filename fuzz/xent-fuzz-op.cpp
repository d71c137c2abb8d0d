//===- xent-fuzz-op.cpp - Structured fuzzing of the xent op contract ------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// Decodes the fuzzer's bytes into one configuration of `xent.cross_entropy`,
// `xent.cross_entropy_grad` or `xent.cross_entropy_and_grad`: operand types (rank, shape, element type,
// sometimes not a ranked tensor at all), target kind, weight, grad_output,
// reduction, every attribute including bad values and wrong attribute kinds,
// result types and counts, and a hand-written decomposition region that may
// break the region contract. It writes the op as text (custom or generic
// form) in a function that returns its results and checks:
//
//  1. the parser + verifier accept the op exactly when the independent
//     predicate `Contract::isValid` below says so. That predicate encodes the
//     op contract of docs/user-guide.md and XentOps.td, written separately
//     from lib/Dialect/Xent/IR/XentOps.cpp; a disagreement is reported with
//     the reason the predicate gives;
//  2. a valid op prints and parses back to the same text;
//  3. on a valid op, every pass of passesUnderTest() succeeds, verifies after
//     each of its passes and meets its postcondition.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace xent::fuzz;

namespace {

constexpr int64_t kDynamic = -1;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

enum class Elt { F16, BF16, F32, F64, I1, I8, I32, I64, Index };

const char *name(Elt e) {
  switch (e) {
  case Elt::F16: return "f16";
  case Elt::BF16: return "bf16";
  case Elt::F32: return "f32";
  case Elt::F64: return "f64";
  case Elt::I1: return "i1";
  case Elt::I8: return "i8";
  case Elt::I32: return "i32";
  case Elt::I64: return "i64";
  case Elt::Index: return "index";
  }
  return "?";
}

bool isOpFloat(Elt e) { return e == Elt::F16 || e == Elt::BF16 || e == Elt::F32; }
bool isClassIndex(Elt e) { return e == Elt::I32 || e == Elt::I64; }

/// An operand or result type as the harness models it.
struct TypeDesc {
  enum Kind { RankedTensor, UnrankedTensor, MemRef, Scalar } kind = RankedTensor;
  std::vector<int64_t> shape; // kDynamic for '?'
  Elt elt = Elt::F32;

  bool isRankedTensor() const { return kind == RankedTensor; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  std::string str() const {
    std::string dims;
    for (int64_t d : shape)
      dims += (d == kDynamic ? std::string("?") : std::to_string(d)) + "x";
    switch (kind) {
    case RankedTensor: return "tensor<" + dims + name(elt) + ">";
    case UnrankedTensor: return std::string("tensor<*x") + name(elt) + ">";
    case MemRef: return "memref<" + dims + name(elt) + ">";
    case Scalar: return name(elt);
    }
    return "?";
  }
  bool operator==(const TypeDesc &o) const {
    return kind == o.kind && elt == o.elt &&
           (kind == UnrankedTensor || kind == Scalar || shape == o.shape);
  }
  bool operator!=(const TypeDesc &o) const { return !(*this == o); }
};

TypeDesc rankedTensor(std::vector<int64_t> shape, Elt elt) {
  TypeDesc t;
  t.shape = std::move(shape);
  t.elt = elt;
  return t;
}

/// A type that differs from `t` (for region contract violations).
TypeDesc differentFrom(const TypeDesc &t) {
  TypeDesc d = t;
  d.elt = t.elt == Elt::F32 ? Elt::F16 : Elt::F32;
  return d;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// An integer attribute slot (ignore_index, axis).
struct IntAttr {
  enum Kind { Absent, I64, WrongIntType, FloatKind } kind = Absent;
  int64_t value = 0;
  std::string str() const {
    switch (kind) {
    case Absent: return "";
    case I64: return std::to_string(value) + " : i64";
    case WrongIntType: return std::to_string(static_cast<int32_t>(value)) + " : i32";
    case FloatKind: return "1.000000e+00 : f32";
    }
    return "";
  }
};

/// A float attribute slot (label_smoothing, z_loss_scale, softcap); values
/// are written as f32 bit patterns so that NaN, inf and denormals are exact.
struct FloatAttr {
  enum Kind { Absent, F32, WrongFloatType, IntKind } kind = Absent;
  uint32_t bits = 0;
  float value() const {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  std::string str() const {
    char buf[32];
    switch (kind) {
    case Absent: return "";
    case F32:
      std::snprintf(buf, sizeof buf, "0x%08X : f32", bits);
      return buf;
    case WrongFloatType: return "5.000000e-01 : f64";
    case IntKind: return "1 : i64";
    }
    return "";
  }
};

enum class Reduction { None, Mean, Sum, Absent, WrongKind };

const char *keyword(Reduction r) {
  switch (r) {
  case Reduction::None: return "none";
  case Reduction::Mean: return "mean";
  case Reduction::Sum: return "sum";
  default: return "?";
  }
}

enum class DecompRegion {
  Empty,          // ({}) / no decomposition clause
  Valid,          // block args = operand types, yield of the result types
  Missing,        // generic form without a region list: zero regions
  WrongArgCount,
  WrongArgType,
  WrongYieldCount,
  WrongYieldType,
  NoTerminator,
  TwoBlocks,
};

//===----------------------------------------------------------------------===//
// One op configuration
//===----------------------------------------------------------------------===//

enum class OpKind { Forward, Grad, Joint };

struct OpDesc {
  OpKind kind = OpKind::Forward;
  /// Every op but the forward one takes grad_output first.
  bool hasGradOutput() const { return kind != OpKind::Forward; }
  bool generic = false;
  bool propertiesSyntax = false; // generic: inherent attributes in <{...}>

  std::optional<TypeDesc> gradOutput;
  TypeDesc logits, target;
  std::optional<TypeDesc> weight;
  bool dropTarget = false; // generic only: operand list lacks the target
  int extraOperands = 0;   // generic only: surplus operands

  Reduction reduction = Reduction::Mean;
  IntAttr ignoreIndex, axis;
  FloatAttr labelSmoothing, zLossScale, softcap;
  bool discardableAttr = false;

  std::vector<TypeDesc> results;
  DecompRegion region = DecompRegion::Empty;

  std::vector<TypeDesc> operandTypes() const {
    std::vector<TypeDesc> ops;
    if (hasGradOutput() && gradOutput)
      ops.push_back(*gradOutput);
    ops.push_back(logits);
    if (!dropTarget)
      ops.push_back(target);
    if (weight)
      ops.push_back(*weight);
    for (int i = 0; i < extraOperands; ++i)
      ops.push_back(logits);
    return ops;
  }
};

//===----------------------------------------------------------------------===//
// The contract, independently of XentOps.cpp
//===----------------------------------------------------------------------===//

struct Contract {
  std::string reason; // why the op is invalid

  bool reject(std::string why) {
    reason = std::move(why);
    return false;
  }

  static bool compatible(const std::vector<int64_t> &a,
                         const std::vector<int64_t> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != kDynamic && b[i] != kDynamic && a[i] != b[i])
        return false;
    return true;
  }

  static bool isFloatTensor(const TypeDesc &t) {
    return t.isRankedTensor() && isOpFloat(t.elt);
  }

  bool isValid(const OpDesc &desc) {
    // Operands are what the op sees, by position: [grad_output,] logits,
    // target[, weight]. (The generator may drop or add operands; then the
    // types shift, and the op is judged on what it gets.)
    std::vector<TypeDesc> operands = desc.operandTypes();
    size_t minOperands = desc.hasGradOutput() ? 3 : 2;
    if (operands.size() < minOperands || operands.size() > minOperands + 1)
      return reject("operand count");
    OpDesc op = desc;
    size_t next = 0;
    if (op.hasGradOutput())
      op.gradOutput = operands[next++];
    op.logits = operands[next++];
    op.target = operands[next++];
    op.weight = std::nullopt;
    if (next < operands.size())
      op.weight = operands[next];

    // Operand types (ODS constraints).
    if (op.hasGradOutput() && !isFloatTensor(*op.gradOutput))
      return reject("grad_output is not a ranked f16/bf16/f32 tensor");
    if (!isFloatTensor(op.logits))
      return reject("logits is not a ranked f16/bf16/f32 tensor");
    if (!op.target.isRankedTensor() ||
        !(isOpFloat(op.target.elt) || isClassIndex(op.target.elt)))
      return reject("target is not a ranked i32/i64/f16/bf16/f32 tensor");
    if (op.weight && !isFloatTensor(*op.weight))
      return reject("weight is not a ranked f16/bf16/f32 tensor");

    // Attribute kinds.
    if (op.reduction == Reduction::Absent)
      return reject("reduction missing");
    if (op.reduction == Reduction::WrongKind)
      return reject("reduction is not a #xent.reduction");
    for (const IntAttr *a : {&op.ignoreIndex, &op.axis})
      if (a->kind != IntAttr::Absent && a->kind != IntAttr::I64)
        return reject("integer attribute is not i64");
    for (const FloatAttr *a : {&op.labelSmoothing, &op.zLossScale, &op.softcap})
      if (a->kind != FloatAttr::Absent && a->kind != FloatAttr::F32)
        return reject("float attribute is not f32");

    // Result structure and types.
    // forward: loss[, z_loss]; grad: dlogits; joint: loss[, z_loss], dlogits.
    size_t minResults = op.kind == OpKind::Joint ? 2 : 1;
    size_t maxResults = op.kind == OpKind::Forward ? 2 : (op.kind == OpKind::Grad ? 1 : 3);
    if (op.results.size() < minResults || op.results.size() > maxResults)
      return reject("result count");
    std::vector<TypeDesc> lossResults = op.results;
    std::optional<TypeDesc> dlogits;
    if (op.kind != OpKind::Forward) {
      dlogits = lossResults.back();
      lossResults.pop_back();
    }
    for (const TypeDesc &r : op.results)
      if (!isFloatTensor(r))
        return reject("result is not a ranked f16/bf16/f32 tensor");

    // The region (region verification runs after the op's own verifier, but
    // either failure rejects the op).
    switch (op.region) {
    case DecompRegion::Empty:
    case DecompRegion::Valid:
      break;
    default:
      return reject("decomposition region breaks the region contract");
    }

    // Semantics: logits, class axis, classes.
    int64_t rank = op.logits.rank();
    if (rank == 0)
      return reject("rank-0 logits");
    int64_t axis = rank == 1 ? 0 : 1;
    if (op.axis.kind == IntAttr::I64) {
      if (op.axis.value < 0 || op.axis.value >= rank)
        return reject("axis out of range");
      axis = op.axis.value;
    }
    int64_t classes = op.logits.shape[axis];
    if (classes == 0)
      return reject("zero classes");

    if (op.labelSmoothing.kind == FloatAttr::F32) {
      float e = op.labelSmoothing.value();
      if (!(e >= 0.0f && e <= 1.0f))
        return reject("label_smoothing outside [0, 1]");
    }
    if (op.zLossScale.kind == FloatAttr::F32) {
      float z = op.zLossScale.value();
      if (!(z >= 0.0f) || !std::isfinite(z))
        return reject("z_loss_scale negative or not finite");
    }
    if (op.softcap.kind == FloatAttr::F32) {
      float s = op.softcap.value();
      if (!(s > 0.0f) || !std::isfinite(s))
        return reject("softcap not positive or not finite");
    }

    std::vector<int64_t> elementShape;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        elementShape.push_back(op.logits.shape[d]);

    bool probabilities = isOpFloat(op.target.elt);
    if (probabilities) {
      if (op.ignoreIndex.kind != IntAttr::Absent)
        return reject("ignore_index with probability targets");
      if (!compatible(op.target.shape, op.logits.shape))
        return reject("probability target shape");
    } else if (!compatible(op.target.shape, elementShape)) {
      return reject("class-index target shape");
    }

    // The operands describe one tensor: a size that the target or the weight
    // fixes holds for grad_output and the results too.
    std::vector<int64_t> known = op.logits.shape;
    auto learn = [](int64_t &size, int64_t seen) {
      if (size == kDynamic)
        size = seen;
    };
    for (int64_t d = 0, t = 0; d < rank; ++d) {
      if (probabilities)
        learn(known[d], op.target.shape[d]);
      else if (d != axis)
        learn(known[d], op.target.shape[t++]);
    }
    if (op.weight) {
      if (op.weight->rank() != 1)
        return reject("weight rank");
      if (!compatible(op.weight->shape, {known[axis]}))
        return reject("weight size");
      learn(known[axis], op.weight->shape[0]);
    }
    elementShape.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        elementShape.push_back(known[d]);

    std::vector<int64_t> reduced =
        op.reduction == Reduction::None ? elementShape : std::vector<int64_t>{};
    if (op.hasGradOutput()) {
      if (!compatible(op.gradOutput->shape, reduced))
        return reject("grad_output shape");
      // A per-element grad_output fixes sizes too.
      if (op.reduction == Reduction::None) {
        for (int64_t d = 0, g = 0; d < rank; ++d)
          if (d != axis)
            learn(known[d], op.gradOutput->shape[g++]);
        reduced.clear();
        for (int64_t d = 0; d < rank; ++d)
          if (d != axis)
            reduced.push_back(known[d]);
      }
    }
    for (const TypeDesc &r : lossResults) {
      if (!compatible(r.shape, reduced))
        return reject("loss / z_loss shape");
      // Results fix sizes too (the decomposition computes them together).
      if (op.reduction == Reduction::None) {
        for (size_t i = 0; i < reduced.size(); ++i)
          learn(reduced[i], r.shape[i]);
        for (int64_t d = 0, k = 0; d < rank; ++d)
          if (d != axis)
            known[d] = reduced[k++];
      }
      // "Results may be f32 or the logits' element type" (XentOps.td).
      if (r.elt != Elt::F32 && r.elt != op.logits.elt)
        return reject("loss / z_loss element type neither f32 nor the logits'");
    }
    if (dlogits && (dlogits->elt != op.logits.elt ||
                    !compatible(dlogits->shape, known)))
      return reject("dlogits type");
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Decoding the bytes
//===----------------------------------------------------------------------===//

class Decoder {
public:
  explicit Decoder(FuzzedDataProvider &p) : p(p) {}

  // Every decision maps 0 (what the provider returns once the bytes run
  // out) to the common, valid choice, so that short inputs give valid ops
  // and each byte can make one thing unusual.

  /// True with probability about num/den; false once the bytes run out.
  bool chance(unsigned num, unsigned den) {
    return p.ConsumeIntegralInRange<unsigned>(0, den - 1) >= den - num;
  }

  Elt floatElt() {
    static const Elt e[] = {Elt::F32, Elt::BF16, Elt::F16};
    return e[p.ConsumeIntegralInRange<size_t>(0, 2)];
  }
  Elt anyElt() {
    static const Elt e[] = {Elt::F64, Elt::I1, Elt::I8, Elt::I32, Elt::I64, Elt::Index,
                            Elt::F16, Elt::BF16, Elt::F32};
    return e[p.ConsumeIntegralInRange<size_t>(0, 8)];
  }

  int64_t dim() {
    static const int64_t d[] = {1, 2, 3, 5, 7, 0, kDynamic, 4, 16, 1000000007};
    unsigned i = p.ConsumeIntegralInRange<unsigned>(0, 19);
    if (i >= 10)
      return i < 15 ? kDynamic : 1 + (i - 15); // more '?' and small sizes
    return d[i];
  }

  /// Mostly valid: keeps `t` a ranked tensor; sometimes another kind.
  void maybeBreakKind(TypeDesc &t) {
    if (!chance(1, 24))
      return;
    static const TypeDesc::Kind k[] = {TypeDesc::UnrankedTensor,
                                       TypeDesc::MemRef, TypeDesc::Scalar};
    t.kind = k[p.ConsumeIntegralInRange<size_t>(0, 2)];
  }

  /// Perturbs a shape that should match `like`: mostly kept, sometimes a
  /// static dimension becomes '?' (still compatible), changes, or the rank
  /// changes.
  std::vector<int64_t> shapeLike(const std::vector<int64_t> &like) {
    std::vector<int64_t> s = like;
    switch (p.ConsumeIntegralInRange<unsigned>(0, 15)) {
    case 15: // a dimension becomes dynamic
      if (!s.empty())
        s[p.ConsumeIntegralInRange<size_t>(0, s.size() - 1)] = kDynamic;
      break;
    case 14: // a dimension changes
      if (!s.empty())
        s[p.ConsumeIntegralInRange<size_t>(0, s.size() - 1)] = dim();
      break;
    case 13: // one dimension more
      s.insert(s.begin() + p.ConsumeIntegralInRange<size_t>(0, s.size()), dim());
      break;
    case 12: // one dimension less
      if (!s.empty())
        s.erase(s.begin() + p.ConsumeIntegralInRange<size_t>(0, s.size() - 1));
      break;
    case 11: // every dimension dynamic
      for (int64_t &d : s)
        d = kDynamic;
      break;
    default:
      break;
    }
    return s;
  }

  IntAttr intAttr(int64_t typical, unsigned absentOdds) {
    IntAttr a;
    if (!chance(1, absentOdds))
      return a;
    unsigned k = p.ConsumeIntegralInRange<unsigned>(0, 15);
    if (k == 15)
      a.kind = IntAttr::WrongIntType;
    else if (k == 14)
      a.kind = IntAttr::FloatKind;
    else
      a.kind = IntAttr::I64;
    switch (p.ConsumeIntegralInRange<unsigned>(0, 5)) {
    case 0: a.value = p.ConsumeIntegral<int64_t>(); break;
    case 1: a.value = -1; break;
    case 2: a.value = -100; break;
    default: a.value = typical + p.ConsumeIntegralInRange<int64_t>(-1, 3); break;
    }
    return a;
  }

  FloatAttr floatAttr(unsigned absentOdds) {
    static const uint32_t interesting[] = {
        0x00000000u, // 0
        0x80000000u, // -0
        0x3DCCCCCDu, // 0.1
        0x3F800000u, // 1
        0x3F800001u, // 1 + ulp
        0x38D1B717u, // 1e-4
        0xB8D1B717u, // -1e-4
        0x41F00000u, // 30
        0x7F800000u, // +inf
        0xFF800000u, // -inf
        0x7FC00000u, // NaN
        0x00000001u, // smallest denormal
        0x7149F2CAu, // 1e30
        0xBF800000u, // -1
        0x3F000000u, // 0.5
    };
    FloatAttr a;
    if (!chance(1, absentOdds))
      return a;
    unsigned k = p.ConsumeIntegralInRange<unsigned>(0, 15);
    a.kind = k == 15 ? FloatAttr::WrongFloatType
                     : (k == 14 ? FloatAttr::IntKind : FloatAttr::F32);
    if (chance(1, 6))
      a.bits = p.ConsumeIntegral<uint32_t>();
    else
      a.bits = interesting[p.ConsumeIntegralInRange<size_t>(
          0, std::size(interesting) - 1)];
    return a;
  }

  OpDesc decode() {
    OpDesc op;
    op.kind = static_cast<OpKind>(p.ConsumeIntegralInRange<int>(0, 2));

    // Logits.
    static const unsigned ranks[] = {2, 2, 2, 2, 2, 1, 1, 1, 3, 3, 3, 4, 4, 2, 1, 0};
    unsigned rank = ranks[p.ConsumeIntegralInRange<size_t>(0, 15)];
    std::vector<int64_t> shape;
    for (unsigned i = 0; i < rank; ++i)
      shape.push_back(dim());
    op.logits = rankedTensor(shape, chance(1, 20) ? anyElt() : floatElt());
    maybeBreakKind(op.logits);

    op.axis = intAttr(rank == 1 ? 0 : rank - 1, 4);
    int64_t axis = rank <= 1 ? 0 : 1;
    if (op.axis.kind == IntAttr::I64 && op.axis.value >= 0 &&
        op.axis.value < static_cast<int64_t>(rank))
      axis = op.axis.value;
    std::vector<int64_t> elementShape;
    for (unsigned d = 0; d < rank; ++d)
      if (static_cast<int64_t>(d) != axis)
        elementShape.push_back(shape[d]);
    int64_t classes = rank ? shape[axis] : 1;

    // Target.
    bool probabilities = chance(1, 4);
    Elt targetElt = probabilities ? floatElt() : (p.ConsumeBool() ? Elt::I64 : Elt::I32);
    if (chance(1, 20))
      targetElt = anyElt();
    op.target = rankedTensor(shapeLike(probabilities ? shape : elementShape),
                             targetElt);
    maybeBreakKind(op.target);

    // Weight.
    if (chance(1, 3)) {
      std::vector<int64_t> w = shapeLike({classes});
      op.weight = rankedTensor(w, chance(1, 16) ? anyElt() : floatElt());
      maybeBreakKind(*op.weight);
    }

    // Reduction and attributes.
    switch (p.ConsumeIntegralInRange<unsigned>(0, 31)) {
    case 31: op.reduction = Reduction::Absent; break;
    case 30: op.reduction = Reduction::WrongKind; break;
    default:
      op.reduction = static_cast<Reduction>(p.ConsumeIntegralInRange<int>(0, 2));
    }
    op.ignoreIndex = intAttr(p.ConsumeIntegralInRange<int64_t>(-1, 3), 3);
    op.labelSmoothing = floatAttr(3);
    op.zLossScale = floatAttr(3);
    op.softcap = floatAttr(3);
    op.discardableAttr = chance(1, 10);

    std::vector<int64_t> reduced =
        op.reduction == Reduction::None ? elementShape : std::vector<int64_t>{};
    if (op.hasGradOutput()) {
      op.gradOutput = rankedTensor(shapeLike(reduced),
                                   chance(1, 16) ? anyElt() : floatElt());
      maybeBreakKind(*op.gradOutput);
    }
    if (op.kind != OpKind::Grad) {
      unsigned n = chance(1, 2) ? 1 : 2;
      for (unsigned i = 0; i < n; ++i) {
        Elt e = Elt::F32;
        unsigned k = p.ConsumeIntegralInRange<unsigned>(0, 9);
        if (k < 3)
          e = op.logits.elt;
        else if (k == 3)
          e = floatElt();
        else if (k == 4)
          e = anyElt();
        TypeDesc r = rankedTensor(shapeLike(reduced), e);
        maybeBreakKind(r);
        op.results.push_back(r);
      }
    }
    if (op.kind != OpKind::Forward) {
      TypeDesc d = op.logits;
      if (d.isRankedTensor())
        d.shape = shapeLike(d.shape);
      if (chance(1, 10))
        d.elt = floatElt();
      op.results.push_back(d);
    }
    if (chance(1, 40))
      op.results.push_back(op.results.back()); // one result too many
    if (chance(1, 60))
      op.results.clear();

    // Form, operand structure, region.
    op.generic = chance(1, 3);
    if (op.reduction == Reduction::Absent || op.reduction == Reduction::WrongKind)
      op.generic = true;
    if (op.generic) {
      op.propertiesSyntax = p.ConsumeBool();
      if (chance(1, 40))
        op.dropTarget = true;
      if (chance(1, 40))
        op.extraOperands = p.ConsumeIntegralInRange<int>(1, 2);
    }
    unsigned r = p.ConsumeIntegralInRange<unsigned>(0, 31);
    if (r < 22)
      op.region = DecompRegion::Empty;
    else if (r < 26)
      op.region = DecompRegion::Valid;
    else
      op.region = static_cast<DecompRegion>(
          p.ConsumeIntegralInRange<int>(static_cast<int>(DecompRegion::Missing),
                                        static_cast<int>(DecompRegion::TwoBlocks)));
    if (op.region == DecompRegion::Missing && !op.generic)
      op.region = DecompRegion::Empty;
    return op;
  }

  bool runPassesOnValidOp() { return chance(1, 4); }

private:
  FuzzedDataProvider &p;
};

//===----------------------------------------------------------------------===//
// Writing the op as text
//===----------------------------------------------------------------------===//

std::string joinTypes(const std::vector<TypeDesc> &types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + types[i].str();
  return s;
}

std::string regionText(const OpDesc &op) {
  std::vector<TypeDesc> args = op.operandTypes();
  std::vector<TypeDesc> yields = op.results;
  switch (op.region) {
  case DecompRegion::WrongArgCount:
    if (args.empty() || (args.size() % 2))
      args.push_back(op.logits);
    else
      args.pop_back();
    break;
  case DecompRegion::WrongArgType:
    if (args.empty())
      args.push_back(op.logits);
    args[0] = differentFrom(args[0]);
    break;
  case DecompRegion::WrongYieldCount:
    yields.push_back(rankedTensor({}, Elt::F32));
    break;
  case DecompRegion::WrongYieldType:
    if (yields.empty())
      yields.push_back(rankedTensor({}, Elt::F32));
    else
      yields[0] = differentFrom(yields[0]);
    break;
  default:
    break;
  }
  std::string s = "{\n  ^bb0(";
  for (size_t i = 0; i < args.size(); ++i)
    s += (i ? ", " : "") + ("%a" + std::to_string(i)) + ": " + args[i].str();
  s += "):\n";
  if (op.region == DecompRegion::TwoBlocks)
    s += "    cf.br ^bb1\n  ^bb1:\n";
  std::string values;
  for (size_t i = 0; i < yields.size(); ++i) {
    s += "    %p" + std::to_string(i) + " = ub.poison : " + yields[i].str() + "\n";
    values += (i ? ", " : "") + ("%p" + std::to_string(i));
  }
  if (op.region != DecompRegion::NoTerminator) {
    if (yields.empty())
      s += "    xent.yield\n";
    else
      s += "    xent.yield " + values + " : " + joinTypes(yields) + "\n";
  }
  s += "  }";
  return s;
}

std::string attributeList(const OpDesc &op, bool withReduction) {
  std::vector<std::string> attrs;
  if (withReduction) {
    if (op.reduction == Reduction::WrongKind)
      attrs.push_back("reduction = 1 : i32");
    else if (op.reduction != Reduction::Absent)
      attrs.push_back(std::string("reduction = #xent.reduction<") +
                      keyword(op.reduction) + ">");
  }
  auto add = [&](const char *n, const std::string &v) {
    if (!v.empty())
      attrs.push_back(std::string(n) + " = " + v);
  };
  add("ignore_index", op.ignoreIndex.str());
  add("label_smoothing", op.labelSmoothing.str());
  add("z_loss_scale", op.zLossScale.str());
  add("softcap", op.softcap.str());
  add("axis", op.axis.str());
  std::string s;
  for (size_t i = 0; i < attrs.size(); ++i)
    s += (i ? ", " : "") + attrs[i];
  return s;
}

/// The whole module: one function whose arguments are the operands and which
/// returns the op's results.
std::string moduleText(const OpDesc &op) {
  std::vector<TypeDesc> operands = op.operandTypes();
  std::string s = "func.func @f(";
  for (size_t i = 0; i < operands.size(); ++i)
    s += (i ? ", " : "") + ("%v" + std::to_string(i)) + ": " + operands[i].str();
  s += ") -> (" + joinTypes(op.results) + ") {\n  ";
  if (!op.results.empty())
    s += "%r:" + std::to_string(op.results.size()) + " = ";
  const char *opName = op.kind == OpKind::Forward ? "xent.cross_entropy"
                       : op.kind == OpKind::Grad  ? "xent.cross_entropy_grad"
                                                  : "xent.cross_entropy_and_grad";
  std::string operandList;
  for (size_t i = 0; i < operands.size(); ++i)
    operandList += (i ? ", " : "") + ("%v" + std::to_string(i));
  std::string fnType = "(" + joinTypes(operands) + ") -> (" + joinTypes(op.results) + ")";

  if (op.generic) {
    // "name"(operands) <{properties}> (regions) {attributes} : type
    s += std::string("\"") + opName + "\"(" + operandList + ")";
    std::string attrs = attributeList(op, /*withReduction=*/true);
    // The ops' operand groups (AttrSizedOperandSegments): grad_output,
    // logits, target, weight, the slice operands, then the four run-time
    // scalars; the fuzzer gives neither of the last two. The operands fill them by position, as the
    // generic form did before the groups existed: one for each required
    // group while they last, the rest (0, 1 or a surplus) to `weight`.
    size_t remaining = operands.size();
    std::string segments = "operandSegmentSizes = array<i32: ";
    for (int g = 0, e = op.hasGradOutput() ? 3 : 2; g < e; ++g) {
      size_t n = remaining ? 1 : 0;
      remaining -= n;
      segments += std::to_string(n) + ", ";
    }
    segments += std::to_string(remaining);
    // The slice operands the fuzzer never gives: the forward's
    // class_offset and num_classes; the gradient's row_stats, class_offset
    // and num_classes.
    int sliceGroups = op.kind == OpKind::Forward ? 2
                      : op.kind == OpKind::Grad  ? 3
                                                 : 0;
    for (int g = 0; g < sliceGroups; ++g)
      segments += ", 0";
    segments += ", 0, 0, 0, 0>";
    attrs += (attrs.empty() ? "" : ", ") + segments;
    std::string discardable = op.discardableAttr ? "xent_fuzz.tag = 7 : i64" : "";
    if (op.propertiesSyntax)
      s += " <{" + attrs + "}>";
    else if (!discardable.empty())
      attrs += (attrs.empty() ? "" : ", ") + discardable;
    if (op.region != DecompRegion::Missing)
      s += " (" + (op.region == DecompRegion::Empty ? std::string("{\n  }")
                                                   : regionText(op)) + ")";
    if (op.propertiesSyntax && !discardable.empty())
      s += " {" + discardable + "}";
    else if (!op.propertiesSyntax && !attrs.empty())
      s += " {" + attrs + "}";
    s += " : " + fnType;
  } else {
    // Custom form: operands by position, `weight` keyword for the last one.
    s += std::string(opName) + " " + keyword(op.reduction) + " ";
    size_t numPositional = op.weight ? operands.size() - 1 : operands.size();
    for (size_t i = 0; i < numPositional; ++i)
      s += (i ? ", " : "") + ("%v" + std::to_string(i));
    if (op.weight)
      s += " weight %v" + std::to_string(operands.size() - 1);
    std::string attrs = attributeList(op, /*withReduction=*/false);
    if (op.discardableAttr)
      attrs += std::string(attrs.empty() ? "" : ", ") + "xent_fuzz.tag = 7 : i64";
    if (!attrs.empty())
      s += " {" + attrs + "}";
    s += " : " + fnType;
    if (op.region != DecompRegion::Empty)
      s += " decomposition " + regionText(op);
  }
  s += "\n  return";
  if (!op.results.empty()) {
    s += " ";
    for (size_t i = 0; i < op.results.size(); ++i)
      s += (i ? ", " : "") + ("%r#" + std::to_string(i));
    s += " : " + joinTypes(op.results);
  }
  s += "\n}\n";
  return s;
}

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// With XENT_FUZZ_STATS set, how many ops were valid is printed at exit
/// (docs/reliability.md quotes it); XENT_FUZZ_PRINT prints every module.
struct Stats {
  uint64_t valid = 0, invalid = 0, passRuns = 0;
  bool enabled = std::getenv("XENT_FUZZ_STATS") != nullptr;
  bool printInputs = std::getenv("XENT_FUZZ_PRINT") != nullptr;
  ~Stats() {
    if (enabled)
      llvm::errs() << "xent-fuzz-op: " << valid << " valid ops, " << invalid
                   << " invalid ops, passes run on " << passRuns
                   << " valid ops\n";
  }
};
Stats stats;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider provider(data, size);
  Decoder decoder(provider);
  OpDesc op = decoder.decode();
  bool runPasses = decoder.runPassesOnValidOp();
  std::string text = moduleText(op);
  Contract contract;
  bool expected = contract.isValid(op);
  if (stats.printInputs)
    llvm::errs() << "// " << (expected ? "valid" : "invalid: " + contract.reason)
                 << "\n" << text;
  ++(expected ? stats.valid : stats.invalid);

  MLIRContext *ctx = &contextForInput();
  DiagnosticCollector diags(*ctx);
  ParserConfig config(ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "fuzz-op");
  bool parsed = static_cast<bool>(module);
  bool verified = parsed && succeeded(verify(*module));
  bool accepted = parsed && verified;

  if (expected && !accepted)
    reportFailure(parsed ? "the verifier rejects an op that the contract allows"
                         : "a valid op does not parse",
                  text, &diags);
  if (!expected && accepted)
    reportFailure("the verifier accepts an op that the contract forbids (" +
                      contract.reason + ")",
                  text, &diags);
  if (!accepted) {
    if (diags.numErrors() == 0)
      reportFailure("the op is rejected without an error diagnostic", text,
                    &diags);
    return 0;
  }

  // A valid op round-trips through its printed form.
  std::string printed = print(*module);
  {
    ParserConfig reparseConfig(ctx, /*verifyAfterParse=*/true);
    OwningOpRef<ModuleOp> again =
        parseSourceString<ModuleOp>(printed, reparseConfig, "printed");
    if (!again)
      reportFailure("the printed op does not parse back:\n" + printed, text,
                    &diags);
    if (print(*again) != printed)
      reportFailure("printing is not stable:\n" + printed + "\nvs\n" +
                        print(*again),
                    text, &diags);
  }

  // A valid op goes through every pass, which must all succeed. A
  // hand-written region yields ub.poison, which upstream bufferization may
  // reject: there, as for arbitrary IR, a failure with an error is allowed.
  if (runPasses) {
    ++stats.passRuns;
    checkPasses(*module, text, diags,
                op.region == DecompRegion::Empty ? FailurePolicy::MustSucceed
                                               : FailurePolicy::ArbitraryIR);
  }
  return 0;
}
