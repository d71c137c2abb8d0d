// The per-class operands a row walk reads beside the logits: probability
// targets (rows of the logits' shape) and, where every class's weight enters
// the loss (label smoothing, or probabilities, with class weights), the
// class weights. On the vector walks they are read as vectors beside each
// 16-byte vector of the logits (here 8 bf16 logits: 8 f32 targets or
// weights, 32-byte aligned), after a run-time check of their strides and
// alignment; the scalar walk keeps one load per class.
// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: gpu.func @xent_loss_0
// CHECK-SAME:  (%[[X:[^:]*]]: memref<?x?xbf16, {{.*}}>, %[[Q:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>
// The row's unit-stride views, then per unrolled step four vectors of the
// logits and four of the target.
// CHECK:       %[[XR:.*]] = memref.reinterpret_cast %[[X]]
// CHECK:       %[[QR:.*]] = memref.reinterpret_cast %[[Q]]{{.*}} to memref<?xf32, strided<[1], offset: ?>>
// CHECK:       scf.for
// CHECK-COUNT-4: vector.load %[[XR]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16, strided<[1], offset: ?>>, vector<8xbf16>
// CHECK-COUNT-4: vector.load %[[QR]][%{{.*}}] {alignment = 32 : i64} : memref<?xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK-NOT:   vector.load
// The scalar walk (strides or alignment that do not allow vectors).
// CHECK:       scf.for
// CHECK:         memref.load %[[Q]]
// CHECK:       gpu.return
func.func @probs_forward(%x: tensor<?x?xbf16>, %q: tensor<?x?xf32>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %q : (tensor<?x?xbf16>, tensor<?x?xf32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// -----

// Label smoothing with class weights: Σ w (m - x) in the statistics walk and
// ε/C w_c in the gradient read the weights per class, as vectors from class
// 0 of a unit-stride view.
// CHECK-LABEL: gpu.func @xent_loss_grad_0
// CHECK-SAME:  %[[W:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>
// CHECK:       %[[WR:.*]] = memref.reinterpret_cast %[[W]] to offset: [%{{.*}}], sizes: [%{{.*}}], strides: [1] : memref<?xf32, strided<[?], offset: ?>> to memref<?xf32, strided<[1], offset: ?>>
// CHECK:       vector.load %[[WR]][%{{.*}}] {alignment = 32 : i64} : memref<?xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:       gpu.return
func.func @weighted_smoothing(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t weight %w {label_smoothing = 0.1 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

// -----

// Class weights without smoothing enter at the target alone: no per-class
// read.
// CHECK-LABEL: gpu.func @xent_loss_grad_0
// CHECK-NOT:   vector<8xf32>
// CHECK:       gpu.return
func.func @weighted(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t weight %w
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
