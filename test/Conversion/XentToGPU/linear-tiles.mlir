// The loss alone of a linear op on sm_90a takes the tile kernels where the
// call allows (LinearTiles.cpp, docs/linear-cross-entropy.md "The tile
// path"): a block of 384 threads (two consumer warpgroups, one TMA producer)
// per (128-row tile, group of 256-class tiles), TMA loads of both K-major
// operands with the 128-byte swizzle into a ring of 4 stages guarded by
// mbarriers, wgmma.m64n256k16 chains into f32 accumulators, the tile reduced
// in registers to per-row partial statistics; a merge kernel makes the
// loss. A softcap and unweighted label smoothing are on the path (a tile
// kernel that caps the logits and sums Σ (m - x) per row, launched where
// their run-time values are not 0). The same function keeps the row chunks
// for calls the tiles cannot take (weighted label smoothing other than 0,
// buffers TMA cannot read), and everything else keeps them always.
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a" --canonicalize --cse \
// RUN:   | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SM90
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a linear-tiles=false" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=SM90
// Clusters of two blocks that share the weight tile by TMA multicast.
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_90a linear-tile-cluster=2" \
// RUN:   --canonicalize --cse | FileCheck %s --check-prefix=CLUSTER
// Whole pipeline, assembled by ptxas: no spill in any kernel (the tile
// kernels at 168 registers, 384 threads), with clusters too.
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90a format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.log 2>&1 %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log %}
// RUN: %if ptxas %{ grep -q "xent_linear_tiles" %t.log %}
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90a format=isa linear-tile-cluster=2" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t2.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t2.ptx -o %t2.cubin > %t2.log 2>&1 %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t2.log %}

// CHECK-LABEL: func.func @mean
// CHECK:       xent.launch
// CHECK:       memref.extract_strided_metadata
// CHECK:       scf.if
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c64] : memref<*xbf16> -> <tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK:         nvgpu.tma.create.descriptor %{{.*}} box[%c256, %c64] : memref<*xbf16> -> <tensor = memref<256x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK:         gpu.launch_func @xent_kernels::@[[TILES:xent_linear_tiles_[0-9]+]] blocks in (%{{.*}}, %c1, %c1) threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c197664_i32
// CHECK:         gpu.launch_func @xent_kernels::@[[MERGE:xent_linear_merge_[0-9]+]]
// CHECK:       } else {
// CHECK:         func.call @xentGemm_bf16_f32
// CHECK:         gpu.launch_func @xent_kernels::@xent_loss_

// Class weights with a run-time label smoothing: the tiles where it is 0
// (weighted smoothing is not on the path); a run-time softcap of 0 launches
// the plain tile kernel, else the one that caps (its value an argument).
// CHECK-LABEL: func.func @runtime_scalars
// CHECK:       arith.cmpf oeq, %[[EPS:.*]], %cst
// CHECK:       scf.if
// CHECK:         %[[OFF:.*]] = arith.cmpf oeq, %[[CAP:.*]], %cst
// CHECK-NEXT:    scf.if %[[OFF]] {
// CHECK:           gpu.launch_func @xent_kernels::@[[TILES]] {{.*}} %{{.*}} : index)
// CHECK:         } else {
// CHECK:           gpu.launch_func @xent_kernels::@[[CAPPED:xent_linear_tiles_[0-9]+]] {{.*}} %[[CAP]] : f32)
// CHECK:         gpu.launch_func @xent_kernels::@xent_linear_merge_

// Unweighted label smoothing: always the tile kernel with the class sums,
// and a merge that takes ε.
// CHECK-LABEL: func.func @smoothing
// CHECK:       scf.if
// CHECK-NOT:     scf.if
// CHECK:         gpu.launch_func @xent_kernels::@[[SUMS:xent_linear_tiles_[0-9]+]]
// CHECK:         gpu.launch_func @xent_kernels::@[[SMOOTHED:xent_linear_merge_[0-9]+]] {{.*}} %c-100_i64 : i64, %cst{{.*}} : f32, %{{.*}} : index, %{{.*}} : index)

// Run-time softcap and unweighted smoothing: the plain kernel where both are
// 0, else the one with both features.
// CHECK-LABEL: func.func @smoothing_softcap
// CHECK:         %[[C0:.*]] = arith.cmpf oeq, %{{.*}}, %cst
// CHECK-NEXT:    %[[E0:.*]] = arith.cmpf oeq, %{{.*}}, %cst
// CHECK-NEXT:    %[[BOTH:.*]] = arith.andi %[[C0]], %[[E0]]
// CHECK-NEXT:    scf.if %[[BOTH]] {
// CHECK:           gpu.launch_func @xent_kernels::@[[TILES]]
// CHECK:         } else {
// CHECK:           gpu.launch_func @xent_kernels::@xent_linear_tiles_

// A static weighted label smoothing, a bias, a gradient or f32: the chunks.
// CHECK-LABEL: func.func @weighted_smoothing
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
// CHECK:         nvgpu.mbarrier.init %{{.*}}[%c0], %c1
// The `empty` mbarriers count the two consumer warpgroups.
// CHECK:         nvvm.mbarrier.init %{{.*}}, %c2_i32 : !llvm.ptr<3>, i32
// CHECK:         nvgpu.tma.prefetch.descriptor
// CHECK:         gpu.barrier
// CHECK:         nvvm.setmaxregister  decrease 40
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}}, %c10000000_i32 : !llvm.ptr<3>, i32, i32
// CHECK:         nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c49152
// CHECK:         nvgpu.tma.async.load {{.*}} -> memref<128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT:     multicast_mask
// CHECK:         nvgpu.tma.async.load {{.*}} -> memref<256x64xbf16, #gpu.address_space<workgroup>>
// CHECK:         nvvm.setmaxregister  increase 232
// CHECK:         nvgpu.mbarrier.try_wait.parity %{{.*}}[%{{.*}}], %{{.*}}, %c10000000 :
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 1
// CHECK:         nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:         nvvm.shfl.sync  bfly
// CHECK-NOT:     nvvm.cluster
// CHECK:         gpu.return
// CHECK:       gpu.func @[[MERGE]]

// The capping kernel: s · tanh(x · (1 / s)) per logit, the logit itself where
// s is 0.
// CHECK:       gpu.func @[[CAPPED]](
// CHECK-SAME:    %[[S:[a-z0-9]+]]: f32)
// CHECK:         %[[INV:.*]] = arith.divf %cst{{.*}}, %[[S]] : f32
// CHECK:         %[[IS0:.*]] = arith.cmpf oeq, %[[S]], %cst
// CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:         arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:         nvvm.rcp.approx.ftz.f
// CHECK:         arith.mulf %[[S]], %{{.*}} : f32
// CHECK:         arith.select %[[IS0]]

// The class sums: four values per row and group; the merge rebases each
// group's D to the row's max and adds ε Σ (lse - x) / C where ε is not 0.
// CHECK:       gpu.func @[[SUMS]](
// CHECK:         memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %c3]
// CHECK:       gpu.func @[[SMOOTHED]](
// CHECK:         memref.load %{{.*}}[%{{.*}}, %{{.*}}, %c3]
// CHECK:         arith.cmpf oeq, %{{.*}}, %cst
// CHECK:         arith.select

// SM90-NOT: xent_linear_tiles
// SM90-NOT: nvgpu.tma

// CLUSTER-LABEL: func.func @mean
// Row tiles rounded up to whole clusters: ceil(ceil(N / 128) / 2) * 2.
// CLUSTER:       %[[RT:.*]] = arith.ceildivui %{{.*}}, %c128
// CLUSTER-NEXT:  %[[RC:.*]] = arith.ceildivui %[[RT]], %c2
// CLUSTER-NEXT:  arith.muli %[[RC]], %c2
// The weight box is the block's half of a class tile.
// CLUSTER:       nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c64] : memref<*xbf16> -> <tensor = memref<128x64xbf16
// CLUSTER:       nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c64] : memref<*xbf16> -> <tensor = memref<128x64xbf16
// CLUSTER:       gpu.launch_func @xent_kernels::@[[TILES:xent_linear_tiles_[0-9]+]] clusters in (%c2, %c1, %c1) blocks in (%{{.*}}, %c1, %c1) threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c197664_i32
// CLUSTER:       gpu.func @[[TILES]](
// CLUSTER:         %[[RANK:.*]] = gpu.cluster_block_id  x
// The `empty` mbarriers count the consumer warpgroups of both blocks.
// CLUSTER:         nvvm.mbarrier.init %{{.*}}, %c4_i32 : !llvm.ptr<3>, i32
// CLUSTER:         nvvm.fence.mbarrier.init
// CLUSTER:         nvvm.cluster.arrive
// CLUSTER-NEXT:    nvvm.cluster.wait
// CLUSTER:         nvvm.setmaxregister  decrease 40
// CLUSTER:         nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c49152
// The block's half of the weight tile: rows rank * 128, at 16384 + rank *
// 16384 bytes of the stage, multicast to both blocks.
// CLUSTER:         arith.muli %[[RANK]], %c16384
// CLUSTER:         nvgpu.tma.async.load {{.*}} multicast_mask = %c3_i16 : {{.*}} -> memref<128x64xbf16, #gpu.address_space<workgroup>>
// CLUSTER:         nvvm.wgmma.wait.group.sync.aligned 1
// CLUSTER:         nvvm.mapa %{{.*}}, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER-NEXT:    nvvm.mbarrier.arrive %{{.*}} {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
// CLUSTER-NEXT:    nvvm.mapa %{{.*}}, %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER-NEXT:    nvvm.mbarrier.arrive %{{.*}} {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
// CLUSTER:         nvvm.shfl.sync  bfly
// CLUSTER:         nvvm.cluster.arrive
// CLUSTER-NEXT:    nvvm.cluster.wait
// CLUSTER-NEXT:    gpu.return

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

func.func @smoothing_softcap(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                             %t: tensor<?xi64>, %e: f32, %c: f32)
    -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t label_smoothing %e softcap %c
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>, f32, f32)
      -> tensor<f32>
  return %l : tensor<f32>
}

func.func @weighted_smoothing(%h: tensor<?x?xbf16>, %w: tensor<?x?xbf16>,
                              %t: tensor<?xi64>, %cw: tensor<?xf32>)
    -> tensor<f32> {
  %l = xent.linear_cross_entropy mean %h, %w, %t class_weight %cw
      {label_smoothing = 0.1 : f32}
      : (tensor<?x?xbf16>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>)
      -> tensor<f32>
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
