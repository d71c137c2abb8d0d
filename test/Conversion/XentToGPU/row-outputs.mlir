// The per-row outputs (lse, argmax, accuracy) in the kernels, with no extra
// pass over the logits: the row's max and its index come from the same
// reduction (an (m, index) pair, the first index on ties), lse = m + log Σ,
// and thread 0 writes them for every row; accuracy counts kept rows whose
// target is the argmax, reduced like the loss (an f64 accumulator of the
// scratch that the prologue initializes, NaN for a mean over nothing; the
// row that finishes last writes the result). mode=kernel takes them.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu="resident-rows=false" --canonicalize --cse | FileCheck %s
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics -o /dev/null

// REMARK: remark: [Passed] kernel {{.*}}Function=lse | Kernels="xent_prologue_0, xent_loss_0"
// CHECK-LABEL: func.func @lse
// CHECK:       xent.launch {{.*}} tied [-1, -1] -> (tensor<f32>, tensor<8xf32>)
// CHECK:       ^bb0(%{{.*}}: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %{{.*}}: memref<?xi64, strided<[?], offset: ?>>, %{{.*}}: memref<f32, strided<[], offset: ?>>, %[[LSE:.*]]: memref<?xf32, strided<[?], offset: ?>>):
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_0 {{.*}}, %[[LSE]] : memref<?xf32, strided<[?], offset: ?>>, %{{.*}} : i64)
// CHECK:       gpu.func @xent_loss_0({{.*}}, %[[KLSE:.*]]: memref<?xf32, strided<[?], offset: ?>>, %{{.*}}: i64)
// lse = m + log Σ, stored by thread 0 for every row (not only kept ones).
// CHECK:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// CHECK-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// CHECK-NEXT:  %[[V:.*]] = arith.addf %{{.*}}, %[[LOG]] : f32
// CHECK-NEXT:  %[[T0:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:  scf.if %[[T0]] {
// CHECK-NEXT:    memref.store %[[V]], %[[KLSE]][%{{.*}}] : memref<?xf32, strided<[?], offset: ?>>
// CHECK-NEXT:  }
func.func @lse(%x: tensor<8x64xbf16>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>) {
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse} : (tensor<8x64xbf16>, tensor<8xi64>) -> (tensor<f32>, tensor<8xf32>)
  return %l, %lse : tensor<f32>, tensor<8xf32>
}

// -----

// Accuracy under mean in a joint op: the prologue initializes its f32
// accumulator like the loss's (NaN when no target is kept); the row kernel
// reduces (m, index) pairs (the index an i32 in the butterflies and, by
// bitcast, in the f32 scratch) and adds correct / kept count for kept rows.

// REMARK: remark: [Passed] kernel {{.*}}Function=joint_accuracy
// CHECK-LABEL: func.func @joint_accuracy
// CHECK:       ^bb0({{.*}}, %[[ACC:.*]]: memref<f32, strided<[], offset: ?>>, %{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>):
// CHECK:       gpu.launch_func @xent_kernels::@xent_prologue_0 {{.*}}, %[[ACC]] : memref<f32, strided<[], offset: ?>>, %{{.*}} : i64)
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_grad_0 {{.*}}, %[[ACC]] : memref<f32, strided<[], offset: ?>>, %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}} : i64)
// CHECK:       gpu.func @xent_prologue_0({{.*}}, %[[STATS:.*]]: memref<6xf64>, %{{.*}}: memref<f32, strided<[], offset: ?>>, %[[PACC:.*]]: memref<f32, strided<[], offset: ?>>, %{{.*}}: i64)
// CHECK:         memref.store %{{.*}}, %[[STATS]][%c0] : memref<6xf64>
// CHECK-NEXT:    arith.extf %[[COUNT:.*]] : f32 to f64
// CHECK-NEXT:    memref.store %{{.*}}, %[[STATS]][%c1] : memref<6xf64>
// CHECK:         %[[NONE:.*]] = arith.cmpf oeq, %[[COUNT]], %{{.*}} : f32
// CHECK-NEXT:    %[[INIT:.*]] = arith.select %[[NONE]], %{{.*}}, %{{.*}} : f64
// CHECK:         memref.store %[[INIT]], %[[STATS]][%c4] : memref<6xf64>
// CHECK:         %[[INIT32:.*]] = arith.truncf %[[INIT]] : f64 to f32
// CHECK-NEXT:    memref.store %[[INIT32]], %[[PACC]][]
// CHECK:       gpu.func @xent_loss_grad_0({{.*}}, %[[KSTATS:.*]]: memref<6xf64>, %{{.*}}: memref<f32, strided<[], offset: ?>>, %{{.*}}: memref<f32, strided<[], offset: ?>>, %[[KACC:.*]]: memref<f32, strided<[], offset: ?>>, %{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}}: i64)
// CHECK:         %[[T:.*]] = memref.load %{{.*}} : memref<?xi64, strided<[?], offset: ?>>
// CHECK:         %[[KEPT:.*]] = arith.cmpi ne, %[[T]], %{{.*}} : i64
// The thread's walk carries the index with max and Σexp.
// CHECK:         scf.for {{.*}} -> (f32, f32, i32)
// CHECK:         gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         memref.store %{{.*}}, %{{.*}} : memref<4x32xf32, #gpu.address_space<workgroup>>
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// correct = kept ∧ target = argmax; kept rows add correct / kept count.
// CHECK:         %[[AM:.*]] = arith.extui %{{.*}} : i32 to i64
// CHECK-NEXT:    %[[SAME:.*]] = arith.cmpi eq, %[[T]], %[[AM]] : i64
// CHECK-NEXT:    %[[HIT:.*]] = arith.andi %[[KEPT]], %[[SAME]] : i1
// CHECK-NEXT:    %[[CORRECT:.*]] = arith.select %[[HIT]], %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    scf.if %[[KEPT]] {
// CHECK-NEXT:      %[[N:.*]] = memref.load %[[KSTATS]][%c1] : memref<6xf64>
// CHECK-NEXT:      %[[N32:.*]] = arith.truncf %[[N]] : f64 to f32
// CHECK-NEXT:      %[[PART:.*]] = arith.divf %[[CORRECT]], %[[N32]] : f32
// CHECK-NEXT:      %[[PART64:.*]] = arith.extf %[[PART]] : f32 to f64
// CHECK-NEXT:      memref.atomic_rmw addf %[[PART64]], %[[KSTATS]][%c4] : (f64, memref<6xf64>) -> f64
// The row that counts itself last writes the accuracy from its sum.
// CHECK:         memref.atomic_rmw addf %{{.*}}, %[[KSTATS]][%c5] : (f64, memref<6xf64>) -> f64
// CHECK:         %[[A:.*]] = memref.atomic_rmw addf %{{.*}}, %[[KSTATS]][%c4] : (f64, memref<6xf64>) -> f64
// CHECK-NEXT:    %[[A32:.*]] = arith.truncf %[[A]] : f64 to f32
// CHECK-NEXT:    memref.store %[[A32]], %[[KACC]][]
func.func @joint_accuracy(%g: tensor<f32>, %x: tensor<8x64xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>) {
  %l, %acc, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_accuracy} : (tensor<f32>, tensor<8x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<f32>, tensor<8x64xf32>)
  return %l, %acc, %d : tensor<f32>, tensor<f32>, tensor<8x64xf32>
}

// -----

// `none`: every output per element — argmax as i32 (the reduction's own
// type), accuracy rounded to bf16 — beside the z-loss and label smoothing
// (four reduction components: max, Σexp, Σ (x - r) for the smoothing's
// Σ (m - x), argmax).

// REMARK: remark: [Passed] kernel {{.*}}Function=per_element
// CHECK-LABEL: func.func @per_element
// CHECK:       gpu.func @xent_loss_0({{.*}}, %[[KL:.*]]: memref<?xf32, strided<[?], offset: ?>>, %[[KZ:.*]]: memref<?xf32, strided<[?], offset: ?>>, %[[KLSE:.*]]: memref<?xf32, strided<[?], offset: ?>>, %[[KAM:.*]]: memref<?xi32, strided<[?], offset: ?>>, %[[KACC:.*]]: memref<?xbf16, strided<[?], offset: ?>>, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32) workgroup(%{{.*}} : memref<4x32xf32, #gpu.address_space<workgroup>>)
// CHECK:         scf.for {{.*}} -> (f32, f32, f32, i32)
// CHECK:           memref.store %{{.*}}, %[[KLSE]][%{{.*}}] : memref<?xf32, strided<[?], offset: ?>>
// CHECK:           memref.store %[[AM:.*]], %[[KAM]][%{{.*}}] : memref<?xi32, strided<[?], offset: ?>>
// CHECK:           %[[C:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT:      memref.store %[[C]], %[[KACC]][%{{.*}}] : memref<?xbf16, strided<[?], offset: ?>>
func.func @per_element(%x: tensor<?x?xbf16>, %t: tensor<?xi32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xbf16>) {
  %l, %z, %lse, %am, %acc = xent.cross_entropy none %x, %t {label_smoothing = 0.1 : f32, z_loss_scale = 1.0e-4 : f32, return_lse, return_argmax, return_accuracy} : (tensor<?x?xbf16>, tensor<?xi32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xbf16>)
  return %l, %z, %lse, %am, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xbf16>
}

// -----

// A sum of accuracy in bf16: accumulated in the f64 scratch like the loss,
// both written in bf16 by the row kernel (no conversion kernel).

// REMARK: remark: [Passed] kernel {{.*}}Function=accuracy_sum{{.*}}Kernels="xent_prologue_0, xent_loss_0"
// CHECK-LABEL: func.func @accuracy_sum
// CHECK:       ^bb0({{.*}}, %[[LOSS:.*]]: memref<bf16, strided<[], offset: ?>>, %[[ACC:.*]]: memref<bf16, strided<[], offset: ?>>):
// CHECK:       %[[SCRATCH:.*]] = gpu.alloc () : memref<6xf64>
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_0 {{.*}} args({{.*}}, %[[SCRATCH]] : memref<6xf64>, %[[LOSS]] : memref<bf16, strided<[], offset: ?>>, %[[ACC]] : memref<bf16, strided<[], offset: ?>>, %{{.*}} : i64)
// CHECK-NOT:   gpu.launch_func
// CHECK:       gpu.dealloc %[[SCRATCH]]
func.func @accuracy_sum(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<bf16>, tensor<bf16>) {
  %l, %acc = xent.cross_entropy sum %x, %t {return_accuracy} : (tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<bf16>, tensor<bf16>)
  return %l, %acc : tensor<bf16>, tensor<bf16>
}

// -----

// On the resident path the argmax travels through the cluster exchange with
// the block's max and Σexp: a third slot per block, stored as the bits of an
// f32 into the other blocks' shared memory and read back as an i32.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=RESIDENT
// REMARK: remark: [Passed] kernel {{.*}}Function=resident
// RESIDENT-LABEL: gpu.func @xent_loss_grad_0
// RESIDENT:       nvvm.cluster.wait
// RESIDENT:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<7>
// RESIDENT:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<7>
// RESIDENT:       %[[REMOTE:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// RESIDENT-NEXT:  %[[BITS:.*]] = arith.bitcast %{{.*}} : i32 to f32
// RESIDENT-NEXT:  llvm.store %[[BITS]], %[[REMOTE]] : f32, !llvm.ptr<7>
// RESIDENT:       nvvm.cluster.arrive
// RESIDENT-NEXT:  nvvm.cluster.wait
// RESIDENT:       arith.bitcast %{{.*}} : f32 to i32
// RESIDENT:       memref.store %{{.*}}, %{{.*}} : memref<?xi64, strided<[?], offset: ?>>
func.func @resident(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?xi64>, tensor<?x?xbf16>) {
  %l, %am, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_argmax} : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?xi64>, tensor<?x?xbf16>)
  return %l, %am, %d : tensor<f32>, tensor<?xi64>, tensor<?x?xbf16>
}
