// RUN: xent-opt %s --transform-interpreter --split-input-file | FileCheck %s

// The decomposition is reachable as upstream's aggregated ops' are
// (linalg.softmax): the three ops implement linalg::AggregatedOpInterface,
// so transform.structured.decompose_interface replaces each by what it
// computes — its region's body when it has one, the canonical
// decomposition otherwise.

// CHECK-LABEL: func @existing_region
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4xi64>)
// CHECK:        %[[E:.*]] = tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<4x10xf32>
// CHECK-NEXT:   %[[R:.*]] = tensor.from_elements %[[E]] : tensor<f32>
// CHECK-NEXT:   return %[[R]] : tensor<f32>
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

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["xent.cross_entropy"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %ops : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// Empty regions: each op becomes the canonical decomposition, and its result
// is replaced. (decompose_interface hands back one op per result, so the
// transform takes single-result ops only; the joint op goes through
// xent-inline-decomposition, which calls the same interface.)

// CHECK-LABEL: func @each_op
// CHECK-NOT:   xent.cross_entropy
// CHECK:       %[[LOSS:.*]] = tensor.from_elements
// CHECK-NOT:   xent.cross_entropy
// CHECK:       %[[D:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT:   xent.cross_entropy
// CHECK:       return %[[LOSS]], %[[D]] : tensor<f32>, tensor<?x?xf32>
// CHECK-NEXT:  }
func.func @each_op(%x: tensor<?x?xf32>, %t: tensor<?xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<?x?xf32>) {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["xent.cross_entropy", "xent.cross_entropy_grad"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %ops : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// The linear family implements the interface too: its canonical
// decomposition is the projection and an op of the cross-entropy family.

// CHECK-LABEL: func @linear
// CHECK-SAME: (%[[H:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<10x8xf32>, %[[T:.*]]: tensor<4xi64>)
// CHECK:        %[[LOGITS:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[H]], %[[W]] : tensor<4x8xf32>, tensor<10x8xf32>)
// CHECK:        %[[L:.*]] = xent.cross_entropy mean %[[LOGITS]], %[[T]] : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK:        return %[[L]] : tensor<f32>
func.func @linear(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["xent.linear_cross_entropy"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %ops : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
