// The loss alone of a linear op on sm_90a takes the tile kernels where the
// call allows (LinearTiles.cpp, docs/linear-cross-entropy.md "The tile
// path"): a block of 384 threads (two consumer warpgroups, one TMA producer)
// per (128-row tile, group of 256-class tiles), TMA loads of both K-major
// operands with the 128-byte swizzle into a ring of 4 stages guarded by
// mbarriers, wgmma.m64n256k16 chains into f32 accumulators, the tile reduced
// in registers to per-row partial statistics; a merge kernel makes the
// loss. The same function keeps the row chunks for calls the tiles cannot
// take (a run-time label smoothing or softcap other than 0, buffers TMA
// cannot read), and everything else keeps them always.
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a" --canonicalize --cse \
// RUN:   | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SM90
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a linear-tiles=false" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=SM90
// Whole pipeline, assembled by ptxas: no spill in any kernel (the tile
// kernel at 168 registers, 384 threads).
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90a format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.log 2>&1 %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log %}
// RUN: %if ptxas %{ grep -q "xent_linear_tiles" %t.log %}

// CHECK-LABEL: func.func @mean
// CHECK:       xent.launch
// CHECK:       memref.extract_strided_metadata
// CHECK:       scf.if
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c64] : memref<*xbf16> -> <tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c256, %c64] : memref<*xbf16> -> <tensor = memref<256x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK:         gpu.launch_func @xent_kernels::@[[TILES:xent_linear_tiles_[0-9]+]] blocks in (%{{.*}}, %c1, %c1) threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c197632_i32
// CHECK:         gpu.launch_func @xent_kernels::@[[MERGE:xent_linear_merge_[0-9]+]]
// CHECK:       } else {
// CHECK:         func.call @xentGemm_bf16_f32
// CHECK:         gpu.launch_func @xent_kernels::@xent_loss_

// CHECK-LABEL: func.func @runtime_scalars
// CHECK:       arith.cmpf oeq, %{{.*}}, %cst
// CHECK:       arith.cmpf oeq, %{{.*}}, %cst
// CHECK:       scf.if
// CHECK:         gpu.launch_func @xent_kernels::@xent_linear_tiles_
// CHECK:         gpu.launch_func @xent_kernels::@xent_linear_merge_

// Statically present label smoothing, a bias, a gradient or f32: the chunks.
// CHECK-LABEL: func.func @smoothing
// CHECK-NOT:   xent_linear_tiles
// CHECK-LABEL: func.func @bias
// CHECK-NOT:   xent_linear_tiles
// CHECK-LABEL: func.func @joint
// CHECK-NOT:   xent_linear_tiles
// CHECK-LABEL: func.func @f32
// CHECK-NOT:   xent_linear_tiles

// The tile kernel: mbarriers, TMA into the stages, warpgroup MMA.
// CHECK:       gpu.func @[[TILES]](%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: memref<?xi64, strided<[?], offset: ?>>, %{{.*}}: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-SAME:    known_block_size = array<i32: 384, 1, 1>
// CHECK:         nvgpu.mbarrier.create
// CHECK:         nvgpu.mbarrier.init
// CHECK:         nvgpu.tma.prefetch.descriptor
// CHECK:         nvvm.setmaxregister  decrease 40
// CHECK:         nvgpu.mbarrier.try_wait.parity %[[EMPTY:.*]][%[[S:.*]]], %{{.*}}, %c10000000 :
// CHECK:         nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c49152
// CHECK:         nvgpu.tma.async.load {{.*}} -> memref<128x64xbf16, #gpu.address_space<workgroup>>
// CHECK:         nvgpu.tma.async.load {{.*}} -> memref<256x64xbf16, #gpu.address_space<workgroup>>
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:         nvgpu.mbarrier.try_wait.parity %{{.*}}[%{{.*}}], %{{.*}}, %c10000000 :
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:         nvgpu.mbarrier.arrive
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:         nvvm.shfl.sync  bfly
// CHECK:       gpu.func @[[MERGE]]

// SM90-NOT: xent_linear_tiles
// SM90-NOT: nvgpu.tma

func.func @mean(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @runtime_scalars(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                           %t: tensor<?xi64>, %cw: tensor<?xf32>, %i: i64,
                           %e: f32, %z: f32, %c: f32)
    -> (tensor<?xf32>, tensor<?xf32>) {
  %l, %zl = xent.linear_cross_entropy none %h, %w, %t class_weight %cw
      ignore_index %i label_smoothing %e z_loss_scale %z softcap %c
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>, i64,
         f32, f32, f32) -> (tensor<?xf32>, tensor<?xf32>)
  return %l, %zl : tensor<?xf32>, tensor<?xf32>
}

func.func @smoothing(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                     %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t {label_smoothing = 0.1 : f32}
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @bias(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>, %b: tensor<?xbf16>,
                %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w bias %b, %t
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xbf16>, tensor<?xi64>)
      -> tensor<f32>
  return %l : tensor<f32>
}

func.func @joint(%g: tensor<f32>, %h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                 %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>)
  return %l, %dh, %dw : tensor<f32>, tensor<?x?xbf16>, tensor<?x?xbf16>
}

func.func @f32(%h: tensor<?x?xf32>, %w: tensor<?x?xf32>, %t: tensor<?xi64>)
    -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t
      : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
