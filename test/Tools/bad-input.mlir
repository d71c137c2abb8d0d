// Bad input gets a diagnostic and a non-zero exit, never a crash.

// RUN: not xent-opt %S/Inputs/malformed.mlir 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: error: expected ':'

// RUN: not xent-opt %S/Inputs/unknown-attr-value.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-ENUM
// UNKNOWN-ENUM: error: expected ::mlir::xent::Reduction to be one of: none, mean, sum

// RUN: not xent-opt %S/Inputs/unknown-attr-value.mlir --xent-inline-decomposition 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN-ENUM

// RUN: not xent-opt %s --pass-pipeline="builtin.module(xent-inline-decomposition{bogus=1})" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-OPTION
// BAD-OPTION: no such option bogus

// RUN: not xent-opt %s --pass-pipeline="builtin.module(xent-no-such-pass)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-PASS
// BAD-PASS: 'xent-no-such-pass' does not refer to a registered pass or pass pipeline

// RUN: not xent-opt %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file

// A generic-form op that the verifier rejects stops before any pass runs.
// RUN: not xent-opt %S/Inputs/invalid-generic.mlir --xent-cpu-pipeline 2>&1 \
// RUN:   | FileCheck %s --check-prefix=VERIFY
// VERIFY: error: 'xent.cross_entropy' op weight has 3 elements but logits have 10 classes

func.func @ok(%x: tensor<2x3xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
