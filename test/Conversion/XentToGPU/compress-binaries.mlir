// REQUIRES: ptxas
// RUN: xent-opt %s --xent-gpu-pipeline | FileCheck %s
// RUN: xent-opt %s --xent-gpu-pipeline="compress=false" | FileCheck %s --check-prefix=CUBIN

// xent-gpu-pipeline's cubins become fatbins holding them compressed
// (xent-compress-gpu-binaries, the CUDA toolkit's fatbinary): the object's
// format is fatbin (the default, so the printer names none) and the host
// code loads it with mgpuModuleLoad as it would the cubin. compress=false
// keeps the cubin.

// CHECK-LABEL: llvm.func @loss
// CHECK:       gpu.binary @xent_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{{.*}}}, "
// CHECK-NOT:   bin = "
// CUBIN:       gpu.binary @xent_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{{.*}}}, bin = "
func.func @loss(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
