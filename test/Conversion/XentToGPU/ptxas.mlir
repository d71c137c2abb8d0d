// The whole GPU pipeline on every attribute at once, down to PTX, assembled
// by ptxas for sm_90: no stack frame and no spills in any kernel. The loss
// and its gradient are fused into one row kernel (xent_loss_grad).
// REQUIRES: ptxas

// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// No libdevice call (no __nv_ function): exp / log / tanh use ex2 / lg2
// directly, so the PTX needs nothing from the CUDA toolkit but ptxas.
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log

// PTX: .target sm_90
// PTX: .entry xent_prologue_0
// PTX: .entry xent_loss_grad_0
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: bar.sync
// PTX-DAG: ex2.approx
// PTX-DAG: lg2.approx
// The reduced results: f64 atomics into the scratch, a fence before the
// row counts itself done and after the last one sees the count, the bf16
// loss rounded from the f64 sum by that row (no conversion kernel).
// PTX-DAG: atom.global.add.f64
// PTX-DAG: membar.gl
// PTX-DAG: cvt.rn.bf16.f64
// PTX-DAG: cvt.rn.bf16.f32
// PTX-NOT: .entry xent_convert

// PTXAS-DAG: Compiling entry function 'xent_prologue_0' for 'sm_90'
// PTXAS-DAG: Compiling entry function 'xent_loss_grad_0' for 'sm_90'
// PTXAS-DAG: Used {{[0-9]+}} registers, used 1 barriers, 512 bytes smem
// PTXAS-DAG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @everything(%x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>, %g: tensor<f32>)
    -> (tensor<bf16>, tensor<f32>, tensor<?x?xbf16>) {
  %l, %z = xent.cross_entropy mean %x, %t weight %w {ignore_index = 0 : i64, label_smoothing = 0.1 : f32, z_loss_scale = 1.0e-4 : f32, softcap = 30.0 : f32}
      : (tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<bf16>, tensor<f32>)
  %d = xent.cross_entropy_grad mean %g, %x, %t weight %w {ignore_index = 0 : i64, label_smoothing = 0.1 : f32, z_loss_scale = 1.0e-4 : f32, softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> tensor<?x?xbf16>
  return %l, %z, %d : tensor<bf16>, tensor<f32>, tensor<?x?xbf16>
}
