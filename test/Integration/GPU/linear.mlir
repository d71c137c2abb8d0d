// The linear family through xent-gpu-pipeline, linked against the runtime:
// every mgpu* function and every xentGemm* GEMM the chunk loop calls is
// exported by libxent_cuda_runtime.so (the GEMMs whether or not it was built
// with cuBLASLt: without it they report an error when called). Running it
// needs PyTorch for the inputs: python/tests_gpu/test_linear_gpu.py.

// REQUIRES: cuda-toolkit, ptxas
// RUN: xent-opt %s --xent-gpu-pipeline -o %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: llc -O2 --relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cc -shared -Wl,--no-undefined %t.o %cuda_runtime -Wl,-rpath,%xent_libs -o %t.so
// RUN: %python %S/Inputs/check-symbols.py llvm-nm %t.so %cuda_runtime | FileCheck %s

// CHECK-DAG: mgpuLaunchKernel ok
// CHECK-DAG: mgpuMemAlloc ok
// CHECK-DAG: mgpuMemFree ok
// CHECK-DAG: mgpuMemset16 ok
// CHECK-DAG: xentGemmBias_bf16_f32 ok
// CHECK-DAG: xentGemm_bf16_bf16 ok
// CHECK-DAG: xentGemm_bf16_f32 ok
// CHECK-DAG: xentGemm_f32_f32 ok
// CHECK-NOT: MISSING

func.func @bf16_bias(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>) attributes {llvm.emit_c_interface} {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad mean %g, %h, %w bias %b, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>
}

func.func @f32_none(%h: tensor<?x?xf32>, %w: tensor<?x?xf32>, %t: tensor<?xi32>) -> tensor<?xf32>
    attributes {llvm.emit_c_interface} {
  %l = xent.linear_cross_entropy none %h, %w, %t : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}
