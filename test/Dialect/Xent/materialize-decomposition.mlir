// RUN: xent-opt %s --xent-materialize-decomposition --split-input-file | FileCheck %s

// The canonical decomposition: max-shifted log-sum-exp accumulated in f32,
// the target's logit read at a safe index, ignored targets masked, the mean
// divided by the kept weight.

// CHECK-DAG: #[[FULL:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ELEM:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func @bf16_mean
// CHECK: xent.cross_entropy mean %{{.*}}, %{{.*}} : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32> decomposition {
// CHECK: ^bb0(%[[X:.*]]: tensor<?x?xbf16>, %[[T:.*]]: tensor<?xi64>):
// CHECK:   %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[MINIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<?xf32>)
// CHECK:   %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<?x?xbf16>) outs(%[[MINIT]] : tensor<?xf32>)
// CHECK:     arith.extf %{{.*}} : bf16 to f32
// CHECK:     arith.maximumf
// CHECK:   %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[FULL]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MAX]] : tensor<?x?xbf16>, tensor<?xf32>)
// CHECK:     %[[SHIFTED:.*]] = arith.subf
// CHECK:     %[[E:.*]] = math.exp %[[SHIFTED]] : f32
// CHECK:     arith.addf %{{.*}}, %[[E]] : f32
// CHECK:   %[[TERMS:.*]]:3 = linalg.generic {indexing_maps = [#[[ELEM]], #[[ELEM]], #[[ELEM]], #[[SCALAR]], #[[SCALAR]], #[[SCALAR]]], iterator_types = ["reduction"]} ins(%[[T]], %[[MAX]], %[[SUM]] : tensor<?xi64>, tensor<?xf32>, tensor<?xf32>)
// CHECK:     %[[KEPT:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK:     math.log
// CHECK:     tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<?x?xbf16>
// CHECK:     arith.select %[[KEPT]]
// CHECK:   %[[LOSS:.*]] = tensor.extract %[[TERMS]]#0[] : tensor<f32>
// CHECK:   %[[WEIGHT:.*]] = tensor.extract %[[TERMS]]#1[] : tensor<f32>
// CHECK:   %[[MEAN:.*]] = arith.divf %[[LOSS]], %[[WEIGHT]] : f32
// CHECK:   %[[RESULT:.*]] = tensor.from_elements %[[MEAN]] : tensor<f32>
// CHECK:   xent.yield %[[RESULT]] : tensor<f32>
func.func @bf16_mean(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// `none` keeps one loss per element: the element generic is parallel and
// writes the result type directly (rounded once to bf16); the z-loss output
// comes with it. The class axis may be any dimension.

// CHECK-LABEL: func @none_axis_last
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<2x5xbf16>, tensor<2x5xf32>)
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
// CHECK: xent.yield %[[R]]#0, %[[R]]#1 : tensor<2x5xbf16>, tensor<2x5xf32>
func.func @none_axis_last(%x: tensor<2x5x32xbf16>, %t: tensor<2x5xi32>) -> (tensor<2x5xbf16>, tensor<2x5xf32>) {
  %l, %z = xent.cross_entropy none %x, %t {axis = 2 : i64, z_loss_scale = 1.0e-4 : f32} : (tensor<2x5x32xbf16>, tensor<2x5xi32>) -> (tensor<2x5xbf16>, tensor<2x5xf32>)
  return %l, %z : tensor<2x5xbf16>, tensor<2x5xf32>
}

// -----

// Softcap is applied where the logits are read: tanh before the max.

// CHECK-LABEL: func @softcap
// CHECK: linalg.generic
// CHECK:   %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK:   %[[SCALED:.*]] = arith.divf %{{.*}}, %[[CAP]] : f32
// CHECK:   %[[TANH:.*]] = math.tanh %[[SCALED]] : f32
// CHECK:   %[[CAPPED:.*]] = arith.mulf %[[CAP]], %[[TANH]] : f32
// CHECK:   arith.maximumf %[[CAPPED]]
func.func @softcap(%x: tensor<4x10xf16>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t {softcap = 30.0 : f32} : (tensor<4x10xf16>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The gradient: one parallel generic over the logits writes dlogits in the
// logits' type; the mean first sums the kept weights.

// CHECK-LABEL: func @grad_mean
// CHECK: xent.cross_entropy_grad mean
// CHECK: ^bb0(%[[G:.*]]: tensor<f32>, %[[X:.*]]: tensor<8x16xbf16>, %[[T:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<16xf32>):
// CHECK-DAG: %[[GO:.*]] = tensor.extract %[[G]][] : tensor<f32>
// CHECK-DAG: %[[TOTALS:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK:   %[[WSUM:.*]] = tensor.extract %[[TOTALS]]#0[] : tensor<f32>
// CHECK:   %[[SCALE:.*]] = arith.divf %[[GO]], %[[WSUM]] : f32
// CHECK:   %[[D:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[T]], %{{.*}}, %{{.*}}, %[[W]]
// CHECK-SAME: outs(%{{.*}} : tensor<8x16xbf16>)
// CHECK:     linalg.index 1 : index
// CHECK:     arith.mulf %[[SCALE]]
// CHECK:     arith.truncf %{{.*}} : f32 to bf16
// CHECK:   xent.yield %[[D]] : tensor<8x16xbf16>
func.func @grad_mean(%g: tensor<f32>, %x: tensor<8x16xbf16>, %t: tensor<8xi64>, %w: tensor<16xf32>) -> tensor<8x16xbf16> {
  %d = xent.cross_entropy_grad mean %g, %x, %t weight %w : (tensor<f32>, tensor<8x16xbf16>, tensor<8xi64>, tensor<16xf32>) -> tensor<8x16xbf16>
  return %d : tensor<8x16xbf16>
}

// -----

// A region that already has a body is left alone.

// CHECK-LABEL: func @existing_region
// CHECK: decomposition {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   %[[C:.*]] = arith.constant dense<4.200000e+01> : tensor<f32>
// CHECK-NEXT:   xent.yield %[[C]] : tensor<f32>
// CHECK-NEXT: }
func.func @existing_region(%x: tensor<1x1xf32>, %t: tensor<1xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<1x1xf32>, tensor<1xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<1x1xf32>, %b: tensor<1xi64>):
    %c = arith.constant dense<42.0> : tensor<f32>
    xent.yield %c : tensor<f32>
  }
  return %l : tensor<f32>
}
