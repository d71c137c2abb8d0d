// RUN: xent-opt %s --convert-xent-to-gpu="runtime-dispatch=true" | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu | FileCheck %s --check-prefix=STATIC
// RUN: xent-opt %s --xent-gpu-pipeline="runtime-dispatch=true format=isa" | FileCheck %s --check-prefix=PIPELINE

// runtime-dispatch: the host code picks each call's row kernel. A run-time
// ε or softcap of 0 takes the kernel without the feature (cmpf une: NaN
// keeps the feature's kernel, which computes NaN as the formula does); a
// gradient kernel on the resident path runs with 256 threads where two
// blocks of 256 hold the row (at most 8192 16-byte vectors), else with
// `threads`. Where dlogits is the logits' memory (compared by address) the
// host launches clusters of one block without the staging memory, and the
// same kernel, comparing the same addresses, takes its two-pass walk.

// CHECK-LABEL: func.func @joint
// CHECK:       xent.launch
// CHECK-NEXT:  ^bb0(%[[X:[^:]*]]: memref<?x?xbf16{{.*}}>, {{.*}}, %[[II:[^:]*]]: i64, %[[LS:[^:]*]]: f32, %[[ZS:[^:]*]]: f32, %[[SC:[^:]*]]: f32, %[[L:[^:]*]]: memref<f32, {{.*}}>, %[[D:[^:]*]]: memref<?x?xbf16{{.*}}>):
// CHECK:         gpu.launch_func @xent_kernels::@xent_prologue_0
// CHECK:         %[[LSON:.*]] = arith.cmpf une, %[[LS]], %{{.*}} : f32
// CHECK-NEXT:    scf.if %[[LSON]] {
// CHECK:           %[[SCON:.*]] = arith.cmpf une, %[[SC]], %{{.*}} : f32
// CHECK-NEXT:      scf.if %[[SCON]] {
// CHECK:             %[[V:.*]] = arith.ceildivui %{{.*}}, %c8 : index
// CHECK:             %[[SHORT:.*]] = arith.cmpi ule, %[[V]], %c8192 : index
// CHECK-NEXT:        scf.if %[[SHORT]] {
// CHECK:               %[[FITS:.*]] = arith.andi
// CHECK-NEXT:          %[[XP:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK-NEXT:          %[[DP:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK-NEXT:          %[[APART:.*]] = arith.cmpi ne, %[[XP]], %[[DP]] : index
// CHECK-NEXT:          %[[OK:.*]] = arith.andi %[[FITS]], %[[APART]] : i1
// CHECK:               %[[SIZE:.*]] = arith.select %[[OK]]
// With ε the kernel has class sums: its loss buffer is the op's f32 one.
// CHECK:               gpu.launch_func @xent_kernels::@[[R256:xent_loss_grad_0]] clusters in {{.*}} threads in (%c256{{.*}}) dynamic_shared_memory_size {{.*}} args({{.*}}, %[[L]] : memref<f32, strided<[], offset: ?>>, %[[D]] : {{.*}}, %[[II]] : i64, %[[LS]] : f32, %[[ZS]] : f32, %[[SC]] : f32)
// CHECK:             } else {
// CHECK:               gpu.launch_func @xent_kernels::@[[R512:xent_loss_grad_1]] clusters in {{.*}} threads in (%c512{{.*}}) dynamic_shared_memory_size
// Softcap 0: the same two without the softcap's scalar.
// CHECK:         } else {
// CHECK:           scf.if
// CHECK:             gpu.launch_func @xent_kernels::@xent_loss_grad_2 clusters in {{.*}} args({{.*}}, %[[II]] : i64, %[[LS]] : f32, %[[ZS]] : f32)
// CHECK:             gpu.launch_func @xent_kernels::@xent_loss_grad_3 clusters in
// ε 0: the same for softcap on / off, without ε. Without class sums the
// loss's type is the kernel's run-time choice: the op's f32 buffer, an
// unused bf16 one (a constant global: no side effect, so gpu-async-region
// adds no host wait for it), and the flag that says which is written.
// CHECK:       } else {
// CHECK:             %[[UNUSED:.*]] = memref.get_global @xent_unused_bf16_0 : memref<bf16>
// CHECK-NEXT:        %[[UNUSEDCAST:.*]] = memref.cast %[[UNUSED]]
// CHECK-NEXT:        %[[NARROW:.*]] = arith.constant false
// CHECK:             gpu.launch_func @xent_kernels::@xent_loss_grad_4 {{.*}} args({{.*}}, %[[L]] : memref<f32, strided<[], offset: ?>>, %[[UNUSEDCAST]] : memref<bf16, strided<[], offset: ?>>, %[[D]] : {{.*}}, %[[II]] : i64, %[[ZS]] : f32, %[[SC]] : f32, %[[NARROW]] : i1)
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_6 {{.*}} args({{.*}}, %[[II]] : i64, %[[ZS]] : f32, %{{.*}} : i1)
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_7 clusters in
// CHECK-NOT:       gpu.launch_func
// CHECK:         gpu.dealloc
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %ii: i64, %ls: f32,
                 %zs: f32, %sc: f32) -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t ignore_index %ii label_smoothing %ls
      z_loss_scale %zs softcap %sc
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, i64, f32, f32, f32) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

// A forward op has no gradient pass: only ε picks the kernel.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[ON:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    scf.if %[[ON]] {
// CHECK:           gpu.launch_func @xent_kernels::@[[FS:xent_loss_0]] blocks in {{.*}} threads in (%c512{{.*}}) args({{.*}} : i64, %{{.*}} : f32)
// CHECK-NEXT:    } else {
// CHECK:           gpu.launch_func @xent_kernels::@[[FP:xent_loss_1]] blocks in {{.*}} threads in (%c512{{.*}}) args({{.*}} : i64)
// CHECK-NEXT:    }
func.func @forward(%x: tensor<?x?xf32>, %t: tensor<?xi32>, %ls: f32) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t label_smoothing %ls : (tensor<?x?xf32>, tensor<?xi32>, f32) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// The kernels: each variant's signature takes the scalars of its features;
// the resident ones are tuned for their block size and compare the
// addresses of the logits and the gradient themselves. The kernel without ε
// has no smoothing code.
// CHECK:       gpu.module @xent_kernels
// CHECK:       gpu.func @[[R256]]({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 4 : i32}
// CHECK:         memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    arith.cmpi ne
// CHECK:       gpu.func @[[R512]]({{.*}}) kernel attributes {known_block_size = array<i32: 512, 1, 1>, nvvm.maxntid = array<i32: 512, 1, 1>, nvvm.minctasm = 2 : i32}
// CHECK:       gpu.func @[[FP]]({{.*}}: memref<?xf32, strided<[?], offset: ?>>, %{{.*}}: i64) workgroup

// Without runtime-dispatch a run-time value is read by the one kernel; a
// softcap of 0 is none there too (compared once per thread, selected per
// logit).
// STATIC-LABEL: func.func @joint
// STATIC-NOT:   scf.if
// STATIC:       gpu.launch_func @xent_kernels::@xent_loss_grad_0
// STATIC-NOT:   gpu.launch_func
// STATIC-LABEL: func.func @forward
// STATIC:       gpu.func @xent_loss_grad_0({{.*}}, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %[[KSC:.*]]: f32)
// STATIC:         arith.cmpf oeq, %[[KSC]], %{{.*}} : f32

// The whole pipeline takes the dispatching host code.
// PIPELINE: llvm.func @joint
// PIPELINE: gpu.binary @xent_kernels
