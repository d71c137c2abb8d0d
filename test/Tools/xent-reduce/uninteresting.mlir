// RUN: not xent-reduce %s -reduction-tree='traversal-mode=0 test=%S/Inputs/softcap-reaches-tanh.sh' > %t
// RUN: count 0 < %t
// REQUIRES: xent-reduce

// An input the script does not find interesting (no softcap here) is not
// reduced: xent-reduce exits non-zero and prints no module. reduction-tree's
// "uninterested module will not be reduced" is a warning, which MLIR's
// default diagnostic handler drops (opt-reduction-pass's error:
// uninteresting-opt-reduction.mlir).

func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
