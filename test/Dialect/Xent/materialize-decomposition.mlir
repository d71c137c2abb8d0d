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

// -----

// Per-row outputs: lse = m + log(s) from the loss's own row statistics; the
// first largest class in one reduction over the logits (NaN counts as the
// largest); accuracy counts kept elements whose target is that class, the
// mean divides by the number of kept elements (unweighted). They follow the
// loss in the yield, in the op's order.

// CHECK-LABEL: func @row_outputs
// CHECK: ^bb0(%[[X:.*]]: tensor<4x10xbf16>, %[[T:.*]]: tensor<4xi32>):
// CHECK:   %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x10xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : tensor<4x10xbf16>, tensor<4xf32>)
// CHECK:   %[[LSE:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[MAX]], %[[SUM]] : tensor<4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:     %[[LOG:.*]] = math.log
// CHECK:     arith.addf %{{.*}}, %[[LOG]] : f32
// CHECK:   %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x10xbf16>) outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xi64>)
// CHECK:   ^bb0(%[[IN:.*]]: bf16, %[[BEST:.*]]: f32, %[[IDX:.*]]: i64):
// CHECK:     %[[V:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK:     %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[BEST]] : f32
// CHECK:     %[[NAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK:     %[[NUM:.*]] = arith.cmpf ord, %[[BEST]], %[[BEST]] : f32
// CHECK:     %[[FIRSTNAN:.*]] = arith.andi %[[NAN]], %[[NUM]] : i1
// CHECK:     %[[TAKE:.*]] = arith.ori %[[GT]], %[[FIRSTNAN]] : i1
// CHECK:     %[[C:.*]] = linalg.index 1 : index
// CHECK:     %[[CI:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK:     arith.select %[[TAKE]], %[[V]], %[[BEST]] : f32
// CHECK:     arith.select %[[TAKE]], %[[CI]], %[[IDX]] : i64
// CHECK:   %[[PRED:.*]] = linalg.generic {{.*}} ins(%[[ARGMAX]]#1 : tensor<4xi64>) outs(%{{.*}} : tensor<4xi32>)
// CHECK:     arith.trunci %{{.*}} : i64 to i32
// CHECK:   %[[ACC:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[T]], %[[ARGMAX]]#1 : tensor<4xi32>, tensor<4xi64>)
// CHECK:     %[[KEPT:.*]] = arith.cmpi ne
// CHECK:     %[[EQ:.*]] = arith.cmpi eq
// CHECK:     arith.andi %[[KEPT]], %[[EQ]] : i1
// CHECK:   %[[CORRECT:.*]] = tensor.extract %[[ACC]]#0[] : tensor<f32>
// CHECK:   %[[COUNT:.*]] = tensor.extract %[[ACC]]#1[] : tensor<f32>
// CHECK:   %[[RATIO:.*]] = arith.divf %[[CORRECT]], %[[COUNT]] : f32
// CHECK:   %[[ACCT:.*]] = tensor.from_elements %[[RATIO]] : tensor<f32>
// CHECK:   %[[LOSS:.*]] = tensor.from_elements %{{.*}} : tensor<f32>
// CHECK:   xent.yield %[[LOSS]], %[[LSE]], %[[PRED]], %[[ACCT]] : tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>
func.func @row_outputs(%x: tensor<4x10xbf16>, %t: tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>) {
  %l, %lse, %am, %acc = xent.cross_entropy mean %x, %t {return_lse, return_argmax, return_accuracy} : (tensor<4x10xbf16>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>)
  return %l, %lse, %am, %acc : tensor<f32>, tensor<4xf32>, tensor<4xi32>, tensor<f32>
}

// -----

// `none` keeps the accuracy per element (1 or 0, in its type); argmax as i64
// is the reduction's index itself; softcap applies before the argmax too.

// CHECK-LABEL: func @row_outputs_none
// CHECK:   %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : tensor<6x3xbf16>)
// CHECK:     math.tanh
// CHECK:   %[[ACC:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.*}}, %[[ARGMAX]]#1 : tensor<3xi64>, tensor<3xi64>) outs(%{{.*}} : tensor<3xbf16>)
// CHECK:     arith.truncf %{{.*}} : f32 to bf16
// CHECK:   xent.yield %{{.*}}, %{{.*}}, %[[ARGMAX]]#1, %[[ACC]] : tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xbf16>
func.func @row_outputs_none(%x: tensor<6x3xbf16>, %t: tensor<3xi64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xbf16>) {
  %l, %z, %am, %acc = xent.cross_entropy none %x, %t {axis = 0 : i64, softcap = 5.0 : f32, z_loss_scale = 0.5 : f32, return_argmax, return_accuracy} : (tensor<6x3xbf16>, tensor<3xi64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xbf16>)
  return %l, %z, %am, %acc : tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xbf16>
}

// -----

// The loss is formed from differences with the row max m first and log(s)
// last, so that it is not rounded to the spacing of m: the sums
// take exp(x - m) and w (m - x), the loss (m - x_t) + log(s) and the
// smoothing term Σ w (m - x) + log(s) Σ w.

// CHECK-LABEL: func @differences_first
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.maximumf
// CHECK: %[[SUMS:.*]]:3 = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : tensor<?x?xf32>, tensor<?xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:   %[[SHIFTED:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK:   math.exp %[[SHIFTED]] : f32
// CHECK:   arith.subf %[[M]], %[[X]] : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]], %[[SUMS]]#0, %[[SUMS]]#1, %[[SUMS]]#2 :
// CHECK: ^bb0(%{{.*}}: i64, %[[RM:.*]]: f32, %[[S:.*]]: f32, %[[GAP:.*]]: f32, %[[MASS:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[LOGS:.*]] = math.log %[[S]] : f32
// CHECK:   %[[XT:.*]] = tensor.extract
// CHECK:   %[[D:.*]] = arith.subf %[[RM]], %[[XT]] : f32
// CHECK:   arith.addf %[[D]], %[[LOGS]] : f32
// CHECK:   %[[ML:.*]] = arith.mulf %[[LOGS]], %[[MASS]] : f32
// CHECK:   arith.addf %[[GAP]], %[[ML]] : f32
func.func @differences_first(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t {label_smoothing = 0.1 : f32} : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}
