// RUN: xent-opt %s --xent-inline-decomposition --split-input-file | FileCheck %s

// The canonical decomposition: rows collapsed, the projection a matmul
// against the transposed weight into an f32 accumulator that starts at the
// bias, the loss the cross-entropy family's (itself inlined), and the
// gradients matmuls and a reduction in f32 rounded once.

// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[RHS_T:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[LHS_T:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func @joint
// CHECK-SAME: (%[[G:.*]]: tensor<f32>, %[[H:.*]]: tensor<2x3x8xbf16>, %[[W:.*]]: tensor<10x8xbf16>, %[[B:.*]]: tensor<10xbf16>, %[[T:.*]]: tensor<2x3xi64>)
// CHECK:      %[[ROWS:.*]] = tensor.collapse_shape %[[H]] {{\[}}[0, 1], [2]] : tensor<2x3x8xbf16> into tensor<6x8xbf16>
// CHECK:      %[[BIAS:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<10xbf16>) outs(%{{.*}} : tensor<6x10xf32>)
// CHECK:        arith.extf
// CHECK:      %[[LOGITS:.*]] = linalg.matmul indexing_maps = [#[[LHS]], #[[RHS_T]], #{{.*}}] ins(%[[ROWS]], %[[W]] : tensor<6x8xbf16>, tensor<10x8xbf16>) outs(%[[BIAS]] : tensor<6x10xf32>)
// CHECK:      %[[DLOGITS:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]], {{.*}}) outs(%{{.*}} : tensor<6x10xf32>)
// CHECK:      %[[DROWS:.*]] = linalg.matmul ins(%[[DLOGITS]], %[[W]] : tensor<6x10xf32>, tensor<10x8xbf16>) outs(%{{.*}} : tensor<6x8xf32>)
// CHECK:      %[[DROWS16:.*]] = linalg.generic {{.*}} ins(%[[DROWS]] : tensor<6x8xf32>) outs(%{{.*}} : tensor<6x8xbf16>)
// CHECK:      %[[DH:.*]] = tensor.expand_shape %[[DROWS16]] {{\[}}[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xbf16> into tensor<2x3x8xbf16>
// CHECK:      %[[DW32:.*]] = linalg.matmul indexing_maps = [#[[LHS_T]], #[[RHS]], #{{.*}}] ins(%[[DLOGITS]], %[[ROWS]] : tensor<6x10xf32>, tensor<6x8xbf16>) outs(%{{.*}} : tensor<10x8xf32>)
// CHECK:      %[[DW:.*]] = linalg.generic {{.*}} ins(%[[DW32]] : tensor<10x8xf32>) outs(%{{.*}} : tensor<10x8xbf16>)
// CHECK:      %[[DB32:.*]] = linalg.reduce ins(%[[DLOGITS]] : tensor<6x10xf32>) outs(%{{.*}} : tensor<10xf32>) dimensions = [0]
// CHECK:      %[[DB:.*]] = linalg.generic {{.*}} ins(%[[DB32]] : tensor<10xf32>) outs(%{{.*}} : tensor<10xbf16>)
// CHECK:      return %{{.*}}, %[[DH]], %[[DW]], %[[DB]]
// CHECK-NOT: xent.
func.func @joint(%g: tensor<f32>, %h: tensor<2x3x8xbf16>, %w: tensor<10x8xbf16>, %b: tensor<10xbf16>, %t: tensor<2x3xi64>) -> (tensor<f32>, tensor<2x3x8xbf16>, tensor<10x8xbf16>, tensor<10xbf16>) {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad mean %g, %h, %w bias %b, %t : (tensor<f32>, tensor<2x3x8xbf16>, tensor<10x8xbf16>, tensor<10xbf16>, tensor<2x3xi64>) -> (tensor<f32>, tensor<2x3x8xbf16>, tensor<10x8xbf16>, tensor<10xbf16>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<2x3x8xbf16>, tensor<10x8xbf16>, tensor<10xbf16>
}

// -----

// Per-row losses of [B, T] rows are expanded back to the target's shape,
// dynamic sizes included.

// CHECK-LABEL: func @forward_none
// CHECK-SAME: (%[[H:.*]]: tensor<?x?x8xf32>,
// CHECK:      %[[ROWS:.*]] = tensor.collapse_shape %[[H]] {{\[}}[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK:      linalg.matmul {{.*}} ins(%[[ROWS]], %{{.*}} : tensor<?x8xf32>, tensor<10x8xf32>) outs(%{{.*}} : tensor<?x10xf32>)
// CHECK-DAG:  %[[B:.*]] = tensor.dim %[[H]], %c0
// CHECK-DAG:  %[[T:.*]] = tensor.dim %[[H]], %c1
// CHECK:      tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [%[[B]], %[[T]]] : tensor<?xf32> into tensor<?x?xf32>
// CHECK-NOT: xent.
func.func @forward_none(%h: tensor<?x?x8xf32>, %w: tensor<10x8xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> {
  %l = xent.linear_cross_entropy none %h, %w, %t : (tensor<?x?x8xf32>, tensor<10x8xf32>, tensor<?x?xi64>) -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// A region's body replaces the op exactly.

// CHECK-LABEL: func @existing_region
// CHECK-SAME: (%[[H:.*]]: tensor<4x8xf32>
// CHECK-NEXT: %[[C:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[H]][%[[C]], %[[C]]] : tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tensor.from_elements %[[E]] : tensor<f32>
// CHECK-NEXT: return %[[R]] : tensor<f32>
func.func @existing_region(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy sum %h, %w, %t : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<10x8xf32>, %c: tensor<4xi64>):
    %c0 = arith.constant 0 : index
    %e = tensor.extract %a[%c0, %c0] : tensor<4x8xf32>
    %r = tensor.from_elements %e : tensor<f32>
    xent.yield %r : tensor<f32>
  }
  return %l : tensor<f32>
}
