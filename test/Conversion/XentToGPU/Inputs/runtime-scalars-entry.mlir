module attributes {gpu.container_module} {
func.func @xent_entry(%x: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %t: memref<?xi64, strided<[?], offset: ?>>, %w: memref<?xf32, strided<[?], offset: ?>>, %g: memref<f32>, %loss: memref<f32>, %z: memref<f32>, %dx: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %ii: i64, %ls: f32, %zs: f32, %sc: f32) attributes {llvm.emit_c_interface} {
  %xt = bufferization.to_tensor %x restrict : memref<?x?xbf16, strided<[?, ?], offset: ?>> to tensor<?x?xbf16>
  %tt = bufferization.to_tensor %t restrict : memref<?xi64, strided<[?], offset: ?>> to tensor<?xi64>
  %wt = bufferization.to_tensor %w restrict : memref<?xf32, strided<[?], offset: ?>> to tensor<?xf32>
  %gt = bufferization.to_tensor %g restrict : memref<f32> to tensor<f32>
  %l, %zz, %d = xent.cross_entropy_and_grad mean %gt, %xt, %tt weight %wt ignore_index %ii label_smoothing %ls z_loss_scale %zs softcap %sc : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>, i64, f32, f32, f32) -> (tensor<f32>, tensor<f32>, tensor<?x?xbf16>)
  bufferization.materialize_in_destination %d in restrict writable %dx : (tensor<?x?xbf16>, memref<?x?xbf16, strided<[?, ?], offset: ?>>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %loss : (tensor<f32>, memref<f32>) -> ()
  bufferization.materialize_in_destination %zz in restrict writable %z : (tensor<f32>, memref<f32>) -> ()
  return
}

  gpu.module @xent_scale {
    // dx *= g, skipped entirely when g == 1 (the usual loss.backward()).
    gpu.func @scale(%dx: memref<?xbf16>, %g: memref<f32>) kernel {
      %gv = memref.load %g[] : memref<f32>
      %one = arith.constant 1.0 : f32
      %skip = arith.cmpf oeq, %gv, %one : f32
      scf.if %skip {
      } else {
        %c0 = arith.constant 0 : index
        %n = memref.dim %dx, %c0 : memref<?xbf16>
        %bid = gpu.block_id x
        %bdim = gpu.block_dim x
        %tid = gpu.thread_id x
        %gdim = gpu.grid_dim x
        %start0 = arith.muli %bid, %bdim : index
        %start = arith.addi %start0, %tid : index
        %stride = arith.muli %gdim, %bdim : index
        scf.for %k = %start to %n step %stride {
          %v = memref.load %dx[%k] : memref<?xbf16>
          %w = arith.extf %v : bf16 to f32
          %s = arith.mulf %w, %gv : f32
          %r = arith.truncf %s : f32 to bf16
          memref.store %r, %dx[%k] : memref<?xbf16>
        }
      }
      gpu.return
    }

    // dx *= g, skipped entirely when g == 1 (the usual loss.backward()).
    gpu.func @scale_dt(%dx: memref<?xbf16>, %g: memref<bf16>) kernel {
      %g0 = memref.load %g[] : memref<bf16>
      %gv = arith.extf %g0 : bf16 to f32
      %one = arith.constant 1.0 : f32
      %skip = arith.cmpf oeq, %gv, %one : f32
      scf.if %skip {
      } else {
        %c0 = arith.constant 0 : index
        %n = memref.dim %dx, %c0 : memref<?xbf16>
        %bid = gpu.block_id x
        %bdim = gpu.block_dim x
        %tid = gpu.thread_id x
        %gdim = gpu.grid_dim x
        %start0 = arith.muli %bid, %bdim : index
        %start = arith.addi %start0, %tid : index
        %stride = arith.muli %gdim, %bdim : index
        scf.for %k = %start to %n step %stride {
          %v = memref.load %dx[%k] : memref<?xbf16>
          %w = arith.extf %v : bf16 to f32
          %s = arith.mulf %w, %gv : f32
          %r = arith.truncf %s : f32 to bf16
          memref.store %r, %dx[%k] : memref<?xbf16>
        }
      }
      gpu.return
    }
  }

  func.func @xent_scale_grad(%dx: memref<?xbf16>, %g: memref<f32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c4096 = arith.constant 4096 : index
    %n = memref.dim %dx, %c0 : memref<?xbf16>
    // 8 elements per thread, at most 4096 blocks (grid-stride loop).
    %per = arith.constant 2048 : index
    %b0 = arith.ceildivui %n, %per : index
    %b1 = arith.maxui %b0, %c1 : index
    %blocks = arith.minui %b1, %c4096 : index
    gpu.launch_func @xent_scale::@scale blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1) args(%dx : memref<?xbf16>, %g : memref<f32>)
    return
  }

  func.func @xent_scale_grad_dt(%dx: memref<?xbf16>, %g: memref<bf16>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c4096 = arith.constant 4096 : index
    %n = memref.dim %dx, %c0 : memref<?xbf16>
    // 8 elements per thread, at most 4096 blocks (grid-stride loop).
    %per = arith.constant 2048 : index
    %b0 = arith.ceildivui %n, %per : index
    %b1 = arith.maxui %b0, %c1 : index
    %blocks = arith.minui %b1, %c4096 : index
    gpu.launch_func @xent_scale::@scale_dt blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1) args(%dx : memref<?xbf16>, %g : memref<bf16>)
    return
  }
}
