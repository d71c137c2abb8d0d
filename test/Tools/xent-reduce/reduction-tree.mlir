// RUN: xent-reduce %s -reduction-tree='traversal-mode=0 test=%S/Inputs/softcap-reaches-tanh.sh' | FileCheck %s
// REQUIRES: xent-reduce

// The script keeps what still lowers a softcap through the CPU fallback: the
// unrelated function, the dead ops around the loss and the loss without
// softcap are removed, the softcapped xent.cross_entropy and its return stay.

// CHECK-NOT: @unrelated
// CHECK-LABEL: func.func @loss(
// CHECK-NEXT:    %[[L:.*]] = xent.cross_entropy mean %{{.*}}, %{{.*}} {softcap = 3.000000e+01 : f32}
// CHECK-NEXT:    return %[[L]] : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT: }

func.func @unrelated(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  %m = arith.mulf %s, %a : f32
  return %m : f32
}

func.func @loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %y: tensor<4xf32>) -> tensor<f32> {
  %e = math.exp %y : tensor<4xf32>
  %c = arith.constant dense<2.0> : tensor<4xf32>
  %p = arith.mulf %e, %c : tensor<4xf32>
  %l = xent.cross_entropy mean %x, %t {softcap = 30.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %q = arith.addf %p, %y : tensor<4xf32>
  return %l : tensor<f32>
}

func.func @plain(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
