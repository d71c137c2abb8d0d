// Every host-side GPU operation that gpu-to-llvm lowers to a runtime call:
// host_register/unregister, set_default_device, stream-ordered alloc,
// memset (32 and 16 bit), two streams joined through events, a cluster
// launch, memcpy device -> host and dealloc. (gpu.alloc host_shared is left out:
// gpu-async-region makes it asynchronous, which gpu-to-llvm rejects.)
// The module compiles with the stock passes and links against the runtime,
// which exports every mgpu* function it needs; on a GPU, the runner checks
// out[i] = 1 + 2 i and half[i] = 1.0.

// REQUIRES: cuda-toolkit, ptxas
// RUN: %stock_mlir_opt %s --pass-pipeline="builtin.module(gpu-kernel-outlining,func.func(gpu-async-region),gpu-lower-to-nvvm-pipeline{cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin opt-level=3})" -o %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: llc -O2 --relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cc -shared -Wl,--no-undefined %t.o %cuda_runtime -Wl,-rpath,%xent_libs -o %t.so
// RUN: %python %S/Inputs/check-symbols.py llvm-nm %t.so %cuda_runtime | FileCheck %s --check-prefix=SYMBOLS
// RUN: %if cuda-device %{ %host_cc %S/Inputs/runner.c -ldl -lm -o %t.runner %}
// RUN: %if cuda-device %{ %t.runner %t.so hostops | FileCheck %s --check-prefix=EXEC %}

// SYMBOLS:      mgpuEventCreate ok
// SYMBOLS-NEXT: mgpuEventDestroy ok
// SYMBOLS-NEXT: mgpuEventRecord ok
// SYMBOLS-NEXT: mgpuLaunchClusterKernel ok
// SYMBOLS-NEXT: mgpuMemAlloc ok
// SYMBOLS-NEXT: mgpuMemFree ok
// SYMBOLS-NEXT: mgpuMemHostRegisterMemRef ok
// SYMBOLS-NEXT: mgpuMemHostUnregisterMemRef ok
// SYMBOLS-NEXT: mgpuMemcpy ok
// SYMBOLS-NEXT: mgpuMemset16 ok
// SYMBOLS-NEXT: mgpuMemset32 ok
// SYMBOLS-NEXT: mgpuModuleGetFunction ok
// SYMBOLS-NEXT: mgpuModuleLoad ok
// SYMBOLS-NEXT: mgpuModuleUnload ok
// SYMBOLS-NEXT: mgpuSetDefaultDevice ok
// SYMBOLS-NEXT: mgpuStreamCreate ok
// SYMBOLS-NEXT: mgpuStreamDestroy ok
// SYMBOLS-NEXT: mgpuStreamSynchronize ok
// SYMBOLS-NEXT: mgpuStreamWaitEvent ok
// SYMBOLS-NOT:  MISSING

// EXEC: host_ops: 0 wrong
// EXEC: PASSED

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // d[i] += 2 i over a grid of clusters.
    gpu.func @add_twice_index(%d: memref<?xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %ii = arith.index_cast %i : index to i32
      %fi = arith.sitofp %ii : i32 to f32
      %two = arith.constant 2.0 : f32
      %inc = arith.mulf %fi, %two : f32
      %v = memref.load %d[%i] : memref<?xf32>
      %w = arith.addf %v, %inc : f32
      memref.store %w, %d[%i] : memref<?xf32>
      gpu.return
    }
  }

  func.func @host_ops(%out: memref<?xf32>, %half: memref<?xf16>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %dev = arith.constant 0 : i32
    %one = arith.constant 1.0 : f32
    %one16 = arith.constant 1.0 : f16
    %n = memref.dim %out, %c0 : memref<?xf32>
    %threads = arith.divui %n, %c2 : index
    %uout = memref.cast %out : memref<?xf32> to memref<*xf32>
    %uhalf = memref.cast %half : memref<?xf16> to memref<*xf16>
    gpu.host_register %uout : memref<*xf32>
    gpu.host_register %uhalf : memref<*xf16>
    gpu.set_default_device %dev

    // Two streams: the f32 buffer on one, the f16 buffer on the other,
    // joined before the launch (event record + stream wait).
    %a0 = gpu.wait async
    %d, %a1 = gpu.alloc async [%a0] (%n) : memref<?xf32>
    %a2 = gpu.memset async [%a1] %d, %one : memref<?xf32>, f32
    %b0 = gpu.wait async
    %h, %b1 = gpu.alloc async [%b0] (%n) : memref<?xf16>
    %b2 = gpu.memset async [%b1] %h, %one16 : memref<?xf16>, f16
    %j = gpu.wait async [%a2, %b2]
    %t5 = gpu.launch_func async [%j] @kernels::@add_twice_index
        clusters in (%c2, %c1, %c1) blocks in (%c2, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%d : memref<?xf32>)
    %t6 = gpu.memcpy async [%t5] %out, %d : memref<?xf32>, memref<?xf32>
    %t7 = gpu.memcpy async [%t6] %half, %h : memref<?xf16>, memref<?xf16>
    %t8 = gpu.dealloc async [%t7] %d : memref<?xf32>
    %t9 = gpu.dealloc async [%t8] %h : memref<?xf16>
    gpu.wait [%t9]

    gpu.host_unregister %uout : memref<*xf32>
    gpu.host_unregister %uhalf : memref<*xf16>
    return
  }
}
