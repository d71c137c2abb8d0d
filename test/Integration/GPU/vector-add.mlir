// A hand-written gpu.module + gpu.launch_func program lowered by the stock
// mlir-opt passes (the pipeline of xent.gpu.gpu_pipeline_args), translated,
// compiled and linked against libxent_cuda_runtime.so: every mgpu* function
// the host code needs is exported by the runtime. On a GPU the runner checks
// c = a + b for n = 1000, 1, 0 (an empty grid: no launch) and 2^20.

// REQUIRES: cuda-toolkit, ptxas
// RUN: %stock_mlir_opt %s --pass-pipeline="builtin.module(gpu-kernel-outlining,func.func(gpu-async-region),gpu-lower-to-nvvm-pipeline{cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin opt-level=3})" -o %t.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: FileCheck %s --check-prefix=LLVM < %t.ll
// RUN: llc -O2 --relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cc -shared -Wl,--no-undefined %t.o %cuda_runtime -Wl,-rpath,%xent_libs -o %t.so
// RUN: %python %S/Inputs/check-symbols.py llvm-nm %t.so %cuda_runtime | FileCheck %s --check-prefix=SYMBOLS
// RUN: %if cuda-device %{ %host_cc %S/Inputs/runner.c -ldl -lm -o %t.runner %}
// RUN: %if cuda-device %{ %t.runner %t.so vadd | FileCheck %s --check-prefix=EXEC %}

// The kernel is a cubin for sm_90, embedded in the host module.
// LOWERED: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, {{.*}}bin = "\7FELF

// Loaded by a constructor when the library is loaded; launched on a fresh
// stream that is synchronized (the runtime substitutes the caller's stream
// when one is set, see xentSetStream).
// LLVM-DAG: @llvm.global_ctors = {{.*}} @kernels_load
// LLVM-DAG: declare ptr @mgpuModuleLoad(ptr, i64)
// LLVM-DAG: declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)

// SYMBOLS:      mgpuLaunchKernel ok
// SYMBOLS-NEXT: mgpuModuleGetFunction ok
// SYMBOLS-NEXT: mgpuModuleLoad ok
// SYMBOLS-NEXT: mgpuModuleUnload ok
// SYMBOLS-NEXT: mgpuStreamCreate ok
// SYMBOLS-NEXT: mgpuStreamDestroy ok
// SYMBOLS-NEXT: mgpuStreamSynchronize ok
// SYMBOLS-NOT:  MISSING

// EXEC: vadd n=1000: 0 wrong
// EXEC: vadd n=1: 0 wrong
// EXEC: vadd n=0: 0 wrong
// EXEC: vadd n=1048576: 0 wrong
// EXEC: PASSED

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vadd(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<?xf32>
      }
      gpu.return
    }
  }

  func.func @vadd(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %blocks = arith.ceildivui %n, %c256 : index
    gpu.launch_func @kernels::@vadd blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return
  }
}
