// Dynamic shared memory: a row sum with one block of 256 threads per row and
// a tree reduction in gpu.dynamic_shared_memory, launched with 1 KiB, and
// with 100 KiB (the tree at the end), beyond the 48 KiB a kernel gets
// without opting in (the runtime sets its dynamic shared memory limit).

// REQUIRES: cuda-toolkit, ptxas
// RUN: %stock_mlir_opt %s --pass-pipeline="builtin.module(gpu-kernel-outlining,func.func(gpu-async-region),gpu-lower-to-nvvm-pipeline{cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin opt-level=3})" -o %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: FileCheck %s --check-prefix=LLVM < %t.ll
// RUN: llc -O2 --relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cc -shared -Wl,--no-undefined %t.o %cuda_runtime -Wl,-rpath,%xent_libs -o %t.so
// RUN: %python %S/Inputs/check-symbols.py llvm-nm %t.so %cuda_runtime | FileCheck %s --check-prefix=SYMBOLS
// RUN: %if cuda-device %{ %host_cc %S/Inputs/runner.c -ldl -lm -o %t.runner %}
// RUN: %if cuda-device %{ %t.runner %t.so rowsum | FileCheck %s --check-prefix=EXEC %}

// The dynamic shared memory size reaches mgpuLaunchKernel.
// LLVM-LABEL: define void @rowsum(
// LLVM: call void @mgpuLaunchKernel({{.*}}, i32 1024, ptr
// LLVM-LABEL: define void @rowsum_big(
// LLVM: call void @mgpuLaunchKernel({{.*}}, i32 102400, ptr

// SYMBOLS:      mgpuLaunchKernel ok
// SYMBOLS-NEXT: mgpuModuleGetFunction ok
// SYMBOLS-NEXT: mgpuModuleLoad ok
// SYMBOLS-NEXT: mgpuModuleUnload ok
// SYMBOLS-NEXT: mgpuStreamCreate ok
// SYMBOLS-NEXT: mgpuStreamDestroy ok
// SYMBOLS-NEXT: mgpuStreamSynchronize ok
// SYMBOLS-NOT:  MISSING

// EXEC: rowsum: 0 of 37 rows wrong
// EXEC: rowsum_big: 0 of 37 rows wrong
// EXEC: PASSED

#smem = #gpu.address_space<workgroup>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // out[row] = sum of x[row, :]; the 256 partial sums go to a tree that
    // starts `tree_byte` bytes into the dynamic shared memory.
    gpu.func @rowsum(%x: memref<?x?xf32>, %out: memref<?xf32>, %tree_byte: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols = memref.dim %x, %c1 : memref<?x?xf32>
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #smem>
      %tree = memref.view %raw[%tree_byte][] : memref<?xi8, #smem> to memref<256xf32, #smem>
      %partial = scf.for %j = %tid to %cols step %c256 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %x[%row, %j] : memref<?x?xf32>
        %s = arith.addf %acc, %v : f32
        scf.yield %s : f32
      }
      memref.store %partial, %tree[%tid] : memref<256xf32, #smem>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %half = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %half : index
        scf.if %active {
          %other = arith.addi %tid, %half : index
          %u = memref.load %tree[%tid] : memref<256xf32, #smem>
          %v = memref.load %tree[%other] : memref<256xf32, #smem>
          %w = arith.addf %u, %v : f32
          memref.store %w, %tree[%tid] : memref<256xf32, #smem>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %tree[%c0] : memref<256xf32, #smem>
        memref.store %r, %out[%row] : memref<?xf32>
      }
      gpu.return
    }
  }

  func.func @rowsum(%x: memref<?x?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %bytes = arith.constant 1024 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    gpu.launch_func @kernels::@rowsum blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %bytes
        args(%x : memref<?x?xf32>, %out : memref<?xf32>, %c0 : index)
    return
  }

  func.func @rowsum_big(%x: memref<?x?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %bytes = arith.constant 102400 : i32
    %tree = arith.constant 101376 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    gpu.launch_func @kernels::@rowsum blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %bytes
        args(%x : memref<?x?xf32>, %out : memref<?xf32>, %tree : index)
    return
  }
}
