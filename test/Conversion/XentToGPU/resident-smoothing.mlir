// Label smoothing without class weights keeps rows on chip: Σ f is the
// number of classes C, and Σ (m - x) = C (m - r) - Σ (x - r), where Σ (x - r)
// is summed beside the max and Σexp in the plain walk (one subtraction and
// one addition per element) and r is the row's first logit (0 where that is
// not finite): one walk, one block reduction and one cluster exchange of
// three values, no second pass over the slice after the max. With class
// weights (Σ w and Σ w (m - x), the weights read per class) the two-pass
// kernel stays: 81 registers with the weights read as vectors
// (class-operands.mlir), above the resident path's 64.
// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize --cse | FileCheck %s
// Whole pipeline, assembled by ptxas: no spill under the resident path's
// 64-register cap.
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1 %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log %}

// CHECK-LABEL: func.func @unweighted
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_[0-9]+]] clusters in
// CHECK-LABEL: func.func @weighted
// CHECK-NOT:   clusters in
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_grad
// CHECK-NOT:   clusters in
// CHECK:       return

// The unweighted kernel: the reference r, read before the walk ...
// CHECK:       gpu.func @[[K]](
// CHECK:         %[[X0:.*]] = memref.load %{{.*}}[%{{.*}}, %c0]
// CHECK:         %[[F:.*]] = arith.extf %[[X0]] : bf16 to f32
// CHECK:         %[[R:.*]] = arith.select %{{.*}}, %[[F]], %{{.*}} : f32
// CHECK:         nvvm.cluster.arrive.relaxed
// ... x - r per element of the walk ...
// CHECK:         arith.subf %{{.*}}, %[[R]] : f32
// ... one exchange: max, Σexp and Σ (x - r) ...
// CHECK:         nvvm.cluster.wait
// CHECK-COUNT-3: nvvm.mapa
// CHECK-NOT:     nvvm.mapa
// CHECK:         nvvm.cluster.arrive
// CHECK-NEXT:    nvvm.cluster.wait
// ... then C (m - r) - Σ (x - r), 0 for a row of -inf only ...
// CHECK:         %[[D:.*]] = arith.subf %{{.*}}, %[[R]] : f32
// CHECK:         %[[CD:.*]] = arith.mulf %{{.*}}, %[[D]] : f32
// CHECK:         %[[G:.*]] = arith.subf %[[CD]], %{{.*}} : f32
// CHECK:         arith.select %{{.*}}, %{{.*}}, %[[G]] : f32
// ... and no second exchange.
// CHECK-NOT:     nvvm.cluster
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
