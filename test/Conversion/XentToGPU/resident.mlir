// Gradient kernels keep each row on chip (sm_90+, resident-rows, on by
// default): one cluster of blocks per row, each block's slice copied into
// shared memory with cp.async (and partly into registers), the partial
// statistics exchanged through distributed shared memory, the gradient
// written from the on-chip copy: the logits are read once.
// RUN: xent-opt %s --convert-xent-to-gpu --one-shot-bufferize --canonicalize | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu="resident-rows=false" --one-shot-bufferize | FileCheck %s --check-prefix=OFF
// RUN: xent-opt %s --convert-xent-to-gpu="chip=sm_80" --one-shot-bufferize | FileCheck %s --check-prefix=OFF
// Whole pipeline, assembled by ptxas: no spill under the 64-register cap
// that lets two blocks of 512 threads share an SM.
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1 %}
// RUN: %if ptxas %{ FileCheck %s --check-prefix=PTXAS < %t.log %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log %}
// The same at 256 threads (4 blocks per SM, what xent.torch uses for rows
// of at most 8192 vectors).
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa threads=256" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.256.ptx
// RUN: FileCheck %s --check-prefix=PTX256 < %t.256.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 -v %t.256.ptx -o %t.256.cubin > %t.256.log 2>&1 %}
// RUN: %if ptxas %{ not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.256.log %}

// Host: blocks per row from C (0: the row is too short or too long; then
// one block without staging memory), clusters of that many blocks.
// CHECK-LABEL: func.func @joint
// The logits are dead after the op, but a joint op on the resident path does
// not write dlogits in place: block 0 reads the target's logit for the loss
// after the exchange, when another block may have written that element.
// CHECK:       gpu.alloc (%{{.*}}, %{{.*}}) : memref<?x?xbf16>
// CHECK:       gpu.launch_func @xent_kernels::@xent_prologue
// CHECK:       %[[C:.*]] = tensor.dim %{{.*}}, %c1
// CHECK:       %[[VECS:.*]] = arith.ceildivui %[[C]], %c8
// CHECK:       %[[NEED:.*]] = arith.ceildivui %[[VECS]], %c8192
// CHECK:       arith.cmpi ugt, %[[VECS]], %c4096
// CHECK:       %[[SIZE:.*]] = arith.select %{{.*}}, %[[NEED]], %c0
// CHECK:       %[[FITS:.*]] = arith.cmpi ne, %[[SIZE]], %c0
// CHECK:       %[[CL:.*]] = arith.select %[[FITS]], %[[SIZE]], %c1
// CHECK:       %[[SMEM:.*]] = arith.select %[[FITS]], %c98944_i32, %c0_i32
// CHECK:       %[[GRID:.*]] = arith.muli %{{.*}}, %[[CL]]
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_[0-9]+]] clusters in (%[[CL]], %c1, %c1) blocks in (%[[GRID]], %c1, %c1) threads in (%c512, %c1, %c1) dynamic_shared_memory_size %[[SMEM]]

// Kernel: the row is block / cluster size; the resident path when C fits
// and the buffers allow 16-byte accesses, else block 0 does the two-pass
// walk.
// CHECK:       gpu.func @[[K]](
// CHECK-SAME:  nvvm.maxntid = array<i32: 512, 1, 1>, nvvm.minctasm = 2 : i32
// CHECK:         %[[RANK:.*]] = gpu.cluster_block_id x
// CHECK:         %[[CS:.*]] = gpu.cluster_dim_blocks x
// CHECK:         arith.divui %{{.*}}, %[[CS]]
// CHECK:         scf.if %{{.*}} {
// CHECK:           nvvm.cluster.arrive.relaxed {aligned}
// Everything the resident path keeps in shared memory is in the dynamic
// region (which the static workgroup memory may overlap): exchange slots,
// the block reduction's scratch, the staged vectors.
// CHECK:           %[[DYN:.*]] = gpu.dynamic_shared_memory
// CHECK:           memref.view %[[DYN]][%c0][] : {{.*}} to memref<32xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[DYN]][%c640][] : {{.*}} to memref<49152xbf16, #gpu.address_space<workgroup>>
// CHECK:           %[[SCRATCH:.*]] = memref.view %[[DYN]][%c128][] : {{.*}} to memref<4x32xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-12:  nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1}
// CHECK:           nvgpu.device_async_create_group
// CHECK-COUNT-4:   vector.load
// CHECK:           nvgpu.device_async_wait
// CHECK:           gpu.shuffle xor
// CHECK:           memref.store %{{.*}}, %[[SCRATCH]]
// CHECK:           nvvm.cluster.wait {aligned}
// CHECK:           nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:           llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<7>
// CHECK:           nvvm.cluster.arrive {aligned}
// CHECK:           nvvm.cluster.wait {aligned}
// CHECK:           memref.atomic_rmw addf
// CHECK:           vector.store
// CHECK:         } else {
// CHECK:           arith.cmpi eq, %[[RANK]], %c0
// CHECK:           scf.for
// CHECK-NOT:       nvvm.cluster
// CHECK:         gpu.return

// OFF-NOT: clusters in
// OFF-NOT: nvgpu.device_async_copy
// OFF-NOT: nvvm.cluster

// PTX: .entry xent_loss_grad_0
// PTX: .maxntid 512, 1, 1
// PTX: .minnctapersm 2
// PTX: barrier.cluster.arrive.relaxed.aligned
// PTX: cp.async.cg.shared.global
// PTX: cp.async.wait_group 0
// PTX: mapa.shared::cluster
// PTX: st.shared::cluster
// PTX: barrier.cluster.wait.aligned
// PTX256: .maxntid 256, 1, 1
// PTX256: .minnctapersm 4
// PTXAS: Compiling entry function 'xent_loss_grad_0' for 'sm_90'
// PTXAS: Used {{[0-9]+}} registers

func.func @joint(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %w: tensor<?xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<?x?xbf16>) {
  %l, %z, %d = xent.cross_entropy_and_grad mean %g, %x, %t weight %w {z_loss_scale = 1.0e-4 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, tensor<?xf32>) -> (tensor<f32>, tensor<f32>, tensor<?x?xbf16>)
  return %l, %z, %d : tensor<f32>, tensor<f32>, tensor<?x?xbf16>
}
