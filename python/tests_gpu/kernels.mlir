// Kernels of the GPU runtime tests (python/tests_gpu, python/tests/test_gpu_*.py):
// hand-written gpu-dialect modules lowered with xent.runtime.gpu.gpu_pipeline_args().
//   vadd_<type>      c = a + b, one thread per element, grid ceil(n / 256)
//   vadd_f32_cluster the same launched in clusters of 2 blocks
//   rowsum_<type>    out[r] = sum_c x[r, c] (f32 accumulation) through dynamic
//                    shared memory: one block of 256 threads per row
//   rowsum_big_f32   the same with 100 KiB of dynamic shared memory, the tree at
//                    its end (beyond the 48 KiB default: the runtime opts in)
//   rowsum_strided_f32 the input with any strides and offset (strided layout)
//   scale_alloc_f32  returns 2 * x in a buffer it allocates with gpu.alloc
//   vadd_f32_bad_block, rowsum_too_much_smem_f32: launches CUDA rejects
//                    (2048 threads a block; 300 KiB of shared memory)
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @vadd_f32(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @vadd_f16(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf16>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xf16>
        %y = memref.load %b[%i] : memref<?xf16>
        %s = arith.addf %x, %y : f16
        memref.store %s, %c[%i] : memref<?xf16>
      }
      gpu.return
    }
    gpu.func @vadd_bf16(%a: memref<?xbf16>, %b: memref<?xbf16>, %c: memref<?xbf16>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xbf16>
        %y = memref.load %b[%i] : memref<?xbf16>
        %s = arith.addf %x, %y : bf16
        memref.store %s, %c[%i] : memref<?xbf16>
      }
      gpu.return
    }
    gpu.func @vadd_i32(%a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xi32>
        %y = memref.load %b[%i] : memref<?xi32>
        %s = arith.addi %x, %y : i32
        memref.store %s, %c[%i] : memref<?xi32>
      }
      gpu.return
    }
    gpu.func @vadd_i64(%a: memref<?xi64>, %b: memref<?xi64>, %c: memref<?xi64>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xi64>
        %y = memref.load %b[%i] : memref<?xi64>
        %s = arith.addi %x, %y : i64
        memref.store %s, %c[%i] : memref<?xi64>
      }
      gpu.return
    }
    gpu.func @rowsum_f32(%x: memref<?x?xf32>, %out: memref<?xf32>, %tree_byte: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols = memref.dim %x, %c1 : memref<?x?xf32>
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %tree = memref.view %raw[%tree_byte][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
      %acc = scf.for %j = %tid to %cols step %c256 iter_args(%a = %zero) -> (f32) {
          %xv = memref.load %x[%row, %j] : memref<?x?xf32>
          %s = arith.addf %a, %xv : f32
          scf.yield %s : f32
      }
      memref.store %acc, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %half = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %half : index
        scf.if %active {
          %other = arith.addi %tid, %half : index
          %u = memref.load %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
          %v = memref.load %tree[%other] : memref<256xf32, #gpu.address_space<workgroup>>
          %w = arith.addf %u, %v : f32
          memref.store %w, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %tree[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%row] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @rowsum_bf16(%x: memref<?x?xbf16>, %out: memref<?xf32>, %tree_byte: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols = memref.dim %x, %c1 : memref<?x?xbf16>
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %tree = memref.view %raw[%tree_byte][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
      %acc = scf.for %j = %tid to %cols step %c256 iter_args(%a = %zero) -> (f32) {
          %xv = memref.load %x[%row, %j] : memref<?x?xbf16>
          %xe = arith.extf %xv : bf16 to f32
          %s = arith.addf %a, %xe : f32
          scf.yield %s : f32
      }
      memref.store %acc, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %half = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %half : index
        scf.if %active {
          %other = arith.addi %tid, %half : index
          %u = memref.load %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
          %v = memref.load %tree[%other] : memref<256xf32, #gpu.address_space<workgroup>>
          %w = arith.addf %u, %v : f32
          memref.store %w, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %tree[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%row] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @rowsum_strided_f32(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?xf32>, %tree_byte: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %tree = memref.view %raw[%tree_byte][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
      %acc = scf.for %j = %tid to %cols step %c256 iter_args(%a = %zero) -> (f32) {
          %xv = memref.load %x[%row, %j] : memref<?x?xf32, strided<[?, ?], offset: ?>>
          %s = arith.addf %a, %xv : f32
          scf.yield %s : f32
      }
      memref.store %acc, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %half = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %half : index
        scf.if %active {
          %other = arith.addi %tid, %half : index
          %u = memref.load %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
          %v = memref.load %tree[%other] : memref<256xf32, #gpu.address_space<workgroup>>
          %w = arith.addf %u, %v : f32
          memref.store %w, %tree[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %tree[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%row] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @scale(%x: memref<?xf32>, %y: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %two = arith.constant 2.0 : f32
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.mulf %v, %two : f32
        memref.store %w, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @vadd_f32(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd_f32 blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return
  }
  func.func @vadd_f16(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf16>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xf16>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd_f16 blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xf16>, %b : memref<?xf16>, %c : memref<?xf16>, %n : index)
    return
  }
  func.func @vadd_bf16(%a: memref<?xbf16>, %b: memref<?xbf16>, %c: memref<?xbf16>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xbf16>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd_bf16 blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xbf16>, %b : memref<?xbf16>, %c : memref<?xbf16>, %n : index)
    return
  }
  func.func @vadd_i32(%a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xi32>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd_i32 blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xi32>, %b : memref<?xi32>, %c : memref<?xi32>, %n : index)
    return
  }
  func.func @vadd_i64(%a: memref<?xi64>, %b: memref<?xi64>, %c: memref<?xi64>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xi64>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd_i64 blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xi64>, %b : memref<?xi64>, %c : memref<?xi64>, %n : index)
    return
  }
  func.func @vadd_f32_cluster(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c512 = arith.constant 512 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %pairs = arith.ceildivui %n, %c512 : index
    %g = arith.muli %pairs, %c2 : index
    gpu.launch_func @k::@vadd_f32 clusters in (%c2, %c1, %c1) blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return
  }
  func.func @rowsum_f32(%x: memref<?x?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %tree = arith.constant 0 : index
    %smem = arith.constant 1024 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    gpu.launch_func @k::@rowsum_f32 blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x?xf32>, %out : memref<?xf32>, %tree : index)
    return
  }
  func.func @rowsum_bf16(%x: memref<?x?xbf16>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %tree = arith.constant 0 : index
    %smem = arith.constant 1024 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xbf16>
    gpu.launch_func @k::@rowsum_bf16 blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x?xbf16>, %out : memref<?xf32>, %tree : index)
    return
  }
  func.func @rowsum_big_f32(%x: memref<?x?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %tree = arith.constant 101376 : index
    %smem = arith.constant 102400 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    gpu.launch_func @k::@rowsum_f32 blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x?xf32>, %out : memref<?xf32>, %tree : index)
    return
  }
  func.func @rowsum_strided_f32(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %tree = arith.constant 0 : index
    %smem = arith.constant 1024 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, ?], offset: ?>>
    gpu.launch_func @k::@rowsum_strided_f32 blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x?xf32, strided<[?, ?], offset: ?>>, %out : memref<?xf32>, %tree : index)
    return
  }
  func.func @scale_alloc_f32(%x: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %y = gpu.alloc (%n) : memref<?xf32>
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@scale blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<?xf32>, %y : memref<?xf32>, %n : index)
    return %y : memref<?xf32>
  }
  func.func @vadd_f32_bad_block(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2048 = arith.constant 2048 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    gpu.launch_func @k::@vadd_f32 blocks in (%c1, %c1, %c1) threads in (%c2048, %c1, %c1)
        args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return
  }
  func.func @rowsum_too_much_smem_f32(%x: memref<?x?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %smem = arith.constant 307200 : i32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    gpu.launch_func @k::@rowsum_f32 blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x?xf32>, %out : memref<?xf32>, %c0 : index)
    return
  }
}
