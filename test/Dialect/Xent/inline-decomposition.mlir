// RUN: xent-opt %s --xent-inline-decomposition --split-input-file | FileCheck %s

// A region written by hand (as xent-recognize leaves it) is inlined exactly:
// its arguments become the op's operands and the op's results the yielded
// values.

// CHECK-LABEL: func @existing_region
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4xi64>)
// CHECK:        %[[E:.*]] = tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<4x10xf32>
// CHECK-NEXT:   %[[R:.*]] = tensor.from_elements %[[E]] : tensor<f32>
// CHECK-NEXT:   return %[[R]] : tensor<f32>
// CHECK-NOT: xent.
func.func @existing_region(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    %c0 = arith.constant 0 : index
    %e = tensor.extract %a[%c0, %c0] : tensor<4x10xf32>
    %r = tensor.from_elements %e : tensor<f32>
    xent.yield %r : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// An empty region gets the canonical decomposition first; no xent op is
// left, and both results are replaced.

// CHECK-LABEL: func @empty_region
// CHECK-NOT: xent.
// CHECK: linalg.generic
// CHECK: %[[LOSS:.*]] = tensor.from_elements
// CHECK: %[[Z:.*]] = tensor.from_elements
// CHECK: %[[D:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: return %[[LOSS]], %[[Z]], %[[D]] : tensor<f32>, tensor<f32>, tensor<?x?xf32>
// CHECK-NOT: xent.
func.func @empty_region(%x: tensor<?x?xf32>, %t: tensor<?xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<?x?xf32>) {
  %l, %z = xent.cross_entropy mean %x, %t {z_loss_scale = 1.0e-4 : f32} : (tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<f32>)
  %d = xent.cross_entropy_grad mean %g, %x, %t {z_loss_scale = 1.0e-4 : f32} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  return %l, %z, %d : tensor<f32>, tensor<f32>, tensor<?x?xf32>
}

// -----

// The joint op inlines to the forward and the gradient decompositions.

// CHECK-LABEL: func @joint
// CHECK-NOT: xent.
// CHECK: %[[LOSS:.*]] = tensor.from_elements
// CHECK: %[[D:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: return %[[LOSS]], %[[D]] : tensor<f32>, tensor<4x9xbf16>
func.func @joint(%g: tensor<f32>, %x: tensor<4x9xbf16>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x9xbf16>) {
  %l, %d = xent.cross_entropy_and_grad sum %g, %x, %t : (tensor<f32>, tensor<4x9xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4x9xbf16>)
  return %l, %d : tensor<f32>, tensor<4x9xbf16>
}
