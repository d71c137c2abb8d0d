// RUN: not xent-reduce %s -opt-reduction-pass='opt-pass=canonicalize test=%S/Inputs/softcap-reaches-tanh.sh' 2>&1 | FileCheck %s
// REQUIRES: xent-reduce
// OptReductionPass (LLVM 22.1.8) returns without destroying its clone of the
// module when the input is not interesting; LeakSanitizer reports that leak
// inside libMLIR.so with a stack too short to suppress it alone.
// UNSUPPORTED: sanitizers

// opt-reduction-pass on an input the script does not find interesting (no
// softcap here) says so as an error and exits non-zero.

// CHECK: error:
// CHECK-NEXT: the original input is not interested

func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
