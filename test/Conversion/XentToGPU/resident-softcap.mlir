// The softcap on bf16 / f16 logits keeps rows on chip: tanh is the
// hardware's tanh.approx.f32 (llvm.tanh with afn), one MUFU op per element,
// so the resident kernel's registers hold (no spill, see the ptxas run
// below). f32 logits keep the accurate tanh (ex2 and a reciprocal, with a
// series near 0) and the two-pass kernel: that form spills in the resident
// one.
// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize --cse | FileCheck %s
// REQUIRES: ptxas
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa threads=256" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ptx

// CHECK-LABEL: func.func @narrow
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_[0-9]+]] clusters in
// CHECK-LABEL: func.func @wide
// CHECK-NOT:   clusters in
// CHECK:       gpu.launch_func @xent_kernels::@[[W:xent_loss_grad_[0-9]+]] blocks
// CHECK-NOT:   clusters in
// CHECK:       return

// CHECK:       gpu.func @[[K]](
// CHECK-NOT:   gpu.return
// CHECK:       llvm.intr.tanh({{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// CHECK:       gpu.return
// CHECK:       gpu.func @[[W]](
// CHECK-NOT:   llvm.intr.tanh
// CHECK:       llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT:   llvm.intr.tanh
// CHECK:       gpu.return

// PTX:         .entry xent_loss_grad_0
// PTX:         tanh.approx.f32
// PTX:         .entry xent_loss_grad_1
// PTX-NOT:     tanh.approx
// PTX:         ex2.approx
// PTX-NOT:     tanh.approx
// The resident kernel's registers hold with the tanh in them.
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log
func.func @narrow(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

func.func @wide(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}
