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

// A bad value for a pass option (xent-recognize's only option is a bool; the
// enum-like option of the xent passes, convert-xent-to-gpu's chip, is covered
// by test/Conversion/XentToGPU/options.mlir).
// RUN: not xent-opt %s --pass-pipeline="builtin.module(xent-recognize{report-failures=maybe})" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-VALUE
// BAD-VALUE: 'maybe' is invalid value for boolean argument
// BAD-VALUE: failed to add `xent-recognize` with options `report-failures=maybe`

// An option the CPU pipeline does not have.
// RUN: not xent-opt %s --pass-pipeline="builtin.module(xent-cpu-pipeline{chip=sm_90})" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPELINE-OPTION
// PIPELINE-OPTION: failed to add `xent-cpu-pipeline` with options `chip=sm_90`

// An unknown command-line flag.
// RUN: not xent-opt %s --xent-no-such-flag 2>&1 | FileCheck %s --check-prefix=BAD-FLAG
// BAD-FLAG: Unknown command line argument '--xent-no-such-flag'

// A directory as input, an output that cannot be written, a bytecode header
// followed by garbage.
// RUN: not xent-opt %S 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// DIRECTORY: cannot open input file '{{.*}}': Is a directory
// RUN: not xent-opt %s -o %t.missing-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT: cannot open output file
// RUN: printf 'ML\357R\000\001garbage' > %t.mlirbc
// RUN: not xent-opt %t.mlirbc 2>&1 | FileCheck %s --check-prefix=BYTECODE
// BYTECODE: error: bytecode version {{[0-9]+}} is newer than the current version

// An empty file is an empty module, through every pipeline.
// RUN: printf '' > %t.empty.mlir
// RUN: xent-opt %t.empty.mlir --xent-cpu-pipeline | FileCheck %s --check-prefix=EMPTY
// EMPTY: module {

// A generic-form op that the verifier rejects stops before any pass runs.
// RUN: not xent-opt %S/Inputs/invalid-generic.mlir --xent-cpu-pipeline 2>&1 \
// RUN:   | FileCheck %s --check-prefix=VERIFY
// VERIFY: error: 'xent.cross_entropy' op weight has 3 elements but logits have 10 classes

func.func @ok(%x: tensor<2x3xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
