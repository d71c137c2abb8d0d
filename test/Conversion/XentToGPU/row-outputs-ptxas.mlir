// The per-row outputs down to PTX, assembled by ptxas for sm_90: no stack
// frame and no spills in the f32 joint kernel with the resident path (all
// three outputs) nor in the bf16 two-pass kernel with every attribute.
// (The bf16 resident kernel with argmax carries an 8-byte spill under its
// 64-register cap: docs/gpu.md.)
// REQUIRES: ptxas

// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log

// PTX-DAG: .entry xent_loss_grad_0
// PTX-DAG: .entry xent_loss_0
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: st.shared::cluster

// PTXAS-DAG: Compiling entry function 'xent_loss_grad_0' for 'sm_90'
// PTXAS-DAG: Compiling entry function 'xent_loss_0' for 'sm_90'
// PTXAS-DAG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xf32>) {
  %l, %lse, %am, %acc, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_lse, return_argmax, return_accuracy} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xf32>)
  return %l, %lse, %am, %acc, %d : tensor<f32>, tensor<?xf32>, tensor<?xi64>, tensor<f32>, tensor<?x?xf32>
}

func.func @everything(%x: tensor<?x?xbf16>, %t: tensor<?xi32>, %w: tensor<?xf32>) -> (tensor<?xbf16>, tensor<?xf32>, tensor<?xbf16>, tensor<?xi32>, tensor<?xbf16>) {
  %l, %z, %lse, %am, %acc = xent.cross_entropy none %x, %t weight %w {ignore_index = 0 : i64, label_smoothing = 0.1 : f32, z_loss_scale = 1.0e-4 : f32, softcap = 30.0 : f32, return_lse, return_argmax, return_accuracy} : (tensor<?x?xbf16>, tensor<?xi32>, tensor<?xf32>) -> (tensor<?xbf16>, tensor<?xf32>, tensor<?xbf16>, tensor<?xi32>, tensor<?xbf16>)
  return %l, %z, %lse, %am, %acc : tensor<?xbf16>, tensor<?xf32>, tensor<?xbf16>, tensor<?xi32>, tensor<?xbf16>
}
