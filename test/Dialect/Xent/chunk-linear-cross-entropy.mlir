// RUN: xent-opt %s --xent-chunk-linear-cross-entropy=rows=4 --split-input-file | FileCheck %s

// The joint op: a loop over chunks of 4 rows (the last one shorter), each
// projecting its rows, computing the chunk's summed loss and dlogits, its
// rows of d_hidden, and accumulating d_weight and d_bias in f32. The mean
// divides by the kept count computed before the loop; grad_output is scaled
// by it before the loop.

// CHECK-LABEL: func @joint_mean
// CHECK-SAME: (%[[G:.*]]: tensor<f32>, %[[H:.*]]: tensor<10x8xbf16>, %[[W:.*]]: tensor<32x8xbf16>, %[[B:.*]]: tensor<32xbf16>, %[[T:.*]]: tensor<10xi64>)
// CHECK:      %[[COUNTS:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[T]] : tensor<10xi64>)
// CHECK:      %[[K:.*]] = tensor.extract %[[COUNTS]][] : tensor<f32>
// CHECK:      %[[GV:.*]] = tensor.extract %[[G]][] : tensor<f32>
// CHECK:      %[[SCALED:.*]] = arith.divf %[[GV]], %[[K]] : f32
// CHECK:      %[[GS:.*]] = arith.select %{{.*}}, %[[SCALED]], %{{.*}} : f32
// CHECK:      %[[GT:.*]] = tensor.from_elements %[[GS]] : tensor<f32>
// CHECK-DAG:  %[[N:.*]] = arith.constant 10 : index
// CHECK-DAG:  %[[STEP:.*]] = arith.constant 4 : index
// CHECK:      %[[LOOP:.*]]:4 = scf.for %[[I:[a-z0-9]+]] = %{{.*}} to %[[N]] step %[[STEP]] iter_args(%[[LOSS:.*]] = %{{.*}}, %[[DH:.*]] = %{{.*}}, %[[DW:.*]] = %{{.*}}, %[[DB:.*]] = %{{.*}}) -> (f32, tensor<10x8xbf16>, tensor<32x8xf32>, tensor<32xf32>)
// CHECK:        %[[LEFT:.*]] = arith.subi %[[N]], %[[I]] : index
// CHECK:        %[[R:.*]] = arith.minsi %[[STEP]], %[[LEFT]] : index
// CHECK:        %[[HC:.*]] = tensor.extract_slice %[[H]][%[[I]], 0] [%[[R]], 8] [1, 1] : tensor<10x8xbf16> to tensor<?x8xbf16>
// CHECK:        %[[TC:.*]] = tensor.extract_slice %[[T]][%[[I]]] [%[[R]]] [1] : tensor<10xi64> to tensor<?xi64>
// CHECK:        %[[LOGITS:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[HC]], %[[W]] : tensor<?x8xbf16>, tensor<32x8xbf16>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK:        %[[L:.*]], %[[DL:.*]] = xent.cross_entropy_and_grad sum %[[GT]], %[[LOGITS]], %[[TC]] : (tensor<f32>, tensor<?x32xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x32xf32>)
// CHECK:        %[[LV:.*]] = tensor.extract %[[L]][] : tensor<f32>
// CHECK:        %[[LOSS2:.*]] = arith.addf %[[LOSS]], %[[LV]] : f32
// CHECK:        %[[DHC:.*]] = linalg.matmul ins(%[[DL]], %[[W]] : tensor<?x32xf32>, tensor<32x8xbf16>) outs(%{{.*}} : tensor<?x8xf32>)
// CHECK:        %[[DHC16:.*]] = linalg.generic {{.*}} ins(%[[DHC]] : tensor<?x8xf32>) outs(%{{.*}} : tensor<?x8xbf16>)
// CHECK:        %[[DH2:.*]] = tensor.insert_slice %[[DHC16]] into %[[DH]][%[[I]], 0] [%[[R]], 8] [1, 1]
// CHECK:        %[[DW2:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[DL]], %[[HC]] : tensor<?x32xf32>, tensor<?x8xbf16>) outs(%[[DW]] : tensor<32x8xf32>)
// CHECK:        %[[DB2:.*]] = linalg.reduce ins(%[[DL]] : tensor<?x32xf32>) outs(%[[DB]] : tensor<32xf32>) dimensions = [0]
// CHECK:        scf.yield %[[LOSS2]], %[[DH2]], %[[DW2]], %[[DB2]] : f32, tensor<10x8xbf16>, tensor<32x8xf32>, tensor<32xf32>
// CHECK:      %[[MEAN:.*]] = arith.divf %[[LOOP]]#0, %[[K]] : f32
// CHECK:      %[[LT:.*]] = tensor.from_elements %[[MEAN]] : tensor<f32>
// CHECK:      %[[DWR:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#2 : tensor<32x8xf32>) outs(%{{.*}} : tensor<32x8xbf16>)
// CHECK:      %[[DBR:.*]] = linalg.generic {{.*}} ins(%[[LOOP]]#3 : tensor<32xf32>) outs(%{{.*}} : tensor<32xbf16>)
// CHECK:      return %[[LT]], %[[LOOP]]#1, %[[DWR]], %[[DBR]]
func.func @joint_mean(%g: tensor<f32>, %h: tensor<10x8xbf16>, %w: tensor<32x8xbf16>, %b: tensor<32xbf16>, %t: tensor<10xi64>) -> (tensor<f32>, tensor<10x8xbf16>, tensor<32x8xbf16>, tensor<32xbf16>) {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad mean %g, %h, %w bias %b, %t : (tensor<f32>, tensor<10x8xbf16>, tensor<32x8xbf16>, tensor<32xbf16>, tensor<10xi64>) -> (tensor<f32>, tensor<10x8xbf16>, tensor<32x8xbf16>, tensor<32xbf16>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<10x8xbf16>, tensor<32x8xbf16>, tensor<32xbf16>
}

// -----

// Class weights with a z-loss under mean: the chunks see the class weights
// times K / W, and the loss and the z-loss divide by K.

// CHECK-LABEL: func @weighted_z_loss_mean
// CHECK-SAME: (%[[H:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<32x8xf32>, %[[T:.*]]: tensor<?xi64>, %[[CW:.*]]: tensor<32xf32>)
// CHECK:      %[[SUMS:.*]]:2 = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// CHECK:        tensor.extract %[[CW]]
// CHECK:      %[[K:.*]] = tensor.extract %[[SUMS]]#0[] : tensor<f32>
// CHECK:      %[[WS:.*]] = tensor.extract %[[SUMS]]#1[] : tensor<f32>
// CHECK:      %[[RATIO:.*]] = arith.divf %[[K]], %[[WS]] : f32
// CHECK:      %[[SCALE:.*]] = arith.select %{{.*}}, %[[RATIO]], %{{.*}} : f32
// CHECK:      %[[CW2:.*]] = linalg.generic {{.*}} ins(%[[CW]] : tensor<32xf32>)
// CHECK:        arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK:      %[[N:.*]] = tensor.dim %[[H]], %{{.*}} : tensor<?x8xf32>
// CHECK:      %[[LOOP:.*]]:2 = scf.for {{.*}} to %[[N]] {{.*}} -> (f32, f32)
// CHECK:        xent.cross_entropy sum %{{.*}}, %{{.*}} weight %[[CW2]] {z_loss_scale = 5.000000e-01 : f32} : (tensor<?x32xf32>, tensor<?xi64>, tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
// CHECK:      arith.divf %[[LOOP]]#0, %[[K]] : f32
// CHECK:      arith.divf %[[LOOP]]#1, %[[K]] : f32
func.func @weighted_z_loss_mean(%h: tensor<?x8xf32>, %w: tensor<32x8xf32>, %t: tensor<?xi64>, %cw: tensor<32xf32>) -> (tensor<f32>, tensor<f32>) {
  %l, %z = xent.linear_cross_entropy mean %h, %w, %t class_weight %cw {z_loss_scale = 0.5 : f32} : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<?xi64>, tensor<32xf32>) -> (tensor<f32>, tensor<f32>)
  return %l, %z : tensor<f32>, tensor<f32>
}

// -----

// Per-row losses and grad_output of [B, T] rows: sliced per chunk, the loss
// inserted per chunk, and expanded back after the loop.

// CHECK-LABEL: func @grad_none_3d
// CHECK-SAME: (%[[G:.*]]: tensor<2x3xf32>, %[[H:.*]]: tensor<2x3x8xf32>
// CHECK:      %[[GR:.*]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK:      %[[LOOP:.*]]:2 = scf.for %[[I:[a-z0-9]+]] = {{.*}} -> (tensor<6x8xf32>, tensor<32x8xf32>)
// CHECK:        %[[GC:.*]] = tensor.extract_slice %[[GR]][%[[I]]] [%{{.*}}] [1] : tensor<6xf32> to tensor<?xf32>
// CHECK:        xent.cross_entropy_grad none %[[GC]], %{{.*}}, %{{.*}} : (tensor<?xf32>, tensor<?x32xf32>, tensor<?xi64>) -> tensor<?x32xf32>
// CHECK:      %[[DH:.*]] = tensor.expand_shape %[[LOOP]]#0 {{\[}}[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
// CHECK:      return %[[DH]], %[[LOOP]]#1
func.func @grad_none_3d(%g: tensor<2x3xf32>, %h: tensor<2x3x8xf32>, %w: tensor<32x8xf32>, %t: tensor<2x3xi64>) -> (tensor<2x3x8xf32>, tensor<32x8xf32>) {
  %dh, %dw = xent.linear_cross_entropy_grad none %g, %h, %w, %t : (tensor<2x3xf32>, tensor<2x3x8xf32>, tensor<32x8xf32>, tensor<2x3xi64>) -> (tensor<2x3x8xf32>, tensor<32x8xf32>)
  return %dh, %dw : tensor<2x3x8xf32>, tensor<32x8xf32>
}
