//===- ChainWriter.h - Frontend loss chains from fuzzer bytes ---*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// The structure-aware generator of xent-fuzz-recognize: decodes bytes into
// one function computing a loss the way a frontend writes it (the
// recognition forms of docs/recognition.md: torch-mlir's linalg nll,
// label smoothing, a softcap, a z-loss, optax's loss, TOSA with a
// rank-keeping total, a linear projection before the loss or its xent op,
// with the projection's backward), with or without one mutation that turns
// the chain into a near miss. The text is plain MLIR; nothing here depends
// on MLIR, so the generator can be exercised outside the fuzzer.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_FUZZ_CHAINWRITER_H
#define XENT_FUZZ_CHAINWRITER_H

#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

namespace xent::fuzz {

/// One generated function and what xent-recognize must make of it.
struct Chain {
  std::string text;
  /// A short description of the form and its parameters (for reports).
  std::string form;
  /// The xent ops (by name) the function must hold after xent-recognize,
  /// outside every decomposition region (none for a near miss of a chain).
  std::vector<std::string> expected;
  /// Whether `expected` is promised; false for forms whose outcome the
  /// recognizer's documentation leaves open.
  bool checked = true;
};

/// Decodes the bytes `p` holds into one chain. Every byte sequence gives
/// text that parses and verifies.
Chain writeChain(FuzzedDataProvider &p);

} // namespace xent::fuzz

#endif // XENT_FUZZ_CHAINWRITER_H
