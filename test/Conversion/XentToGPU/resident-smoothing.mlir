// Label smoothing without class weights keeps rows on chip: the statistics
// walk is the plain one (max, Σexp), then a second walk over the on-chip
// slice sums m - x from the row's max (no rebase per step, no read of the
// logits) and a second cluster exchange (slot 2) adds the blocks' sums; Σ f
// is the number of classes. With class weights (Σ w and Σ w (m - x), a
// weight load per element) the two-pass kernel stays: it needs 122
// registers, far above the resident path's 64.
// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @unweighted
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_[0-9]+]] clusters in
// CHECK-LABEL: func.func @weighted
// CHECK-NOT:   clusters in
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_grad
// CHECK-NOT:   clusters in
// CHECK:       return

// The unweighted kernel: the first exchange (max, Σexp: slots 0 and 1) ...
// CHECK:       gpu.func @[[K]](
// CHECK:         nvvm.cluster.arrive.relaxed
// CHECK:         nvvm.cluster.wait
// CHECK-COUNT-2: nvvm.mapa
// CHECK:         nvvm.cluster.arrive
// CHECK-NEXT:    nvvm.cluster.wait
// ... then Σ max(m - x, 0) over the staged vectors with the row's max ...
// CHECK:         arith.maxnumf %{{.*}}, %{{.*}} : f32
// ... summed over the block and exchanged once more, in slot 2 (one value
// per block), with no wait before the stores.
// CHECK:         gpu.barrier
// CHECK-NOT:     nvvm.cluster.wait
// CHECK:         nvvm.mapa
// CHECK-NOT:     nvvm.mapa
// CHECK:         nvvm.cluster.arrive
// CHECK-NEXT:    nvvm.cluster.wait
// CHECK:         gpu.return
func.func @unweighted(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {label_smoothing = 0.1 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

func.func @weighted(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t weight %w {label_smoothing = 0.1 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
