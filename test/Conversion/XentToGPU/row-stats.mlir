// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel | FileCheck %s
// RUN: xent-opt %s -split-input-file --xent-gpu-pipeline="runtime-dispatch=true format=isa" | FileCheck %s --check-prefix=PIPELINE

// The kernels of a class slice (docs/scale-out.md): the forward writes the
// row's statistics, the gradient reads the merged ones instead of walking
// the row for them. The slice's offset and C are i64 arguments of the
// kernels: the op's operands, or a constant of the num_classes attribute.

// The whole GPU pipeline takes them (allow-decomposition=false): kernels,
// nothing left of the ops.
// PIPELINE-LABEL: llvm.func @forward(
// PIPELINE-NOT: xent.
// PIPELINE: gpu.launch_func {{.*}} @xent_kernels::@xent_loss_0

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %{{[^:]*}}: tensor<4x10xf32>, %{{[^:]*}}: tensor<4xi64>, %[[O:[^:]*]]: i64)
// CHECK:         xent.launch ins(%{{.*}}, %{{.*}}, %[[O]] : tensor<4x10xf32>, tensor<4xi64>, i64)
// CHECK-NEXT:    ^bb0({{.*}}, %[[OA:[^:]*]]: i64, %[[L:[^:]*]]: memref<f32, {{.*}}>, %[[S:[^:]*]]: memref<?x?xf32, {{.*}}>):
// CHECK:           %[[C:.*]] = arith.constant 20 : i64
// CHECK:           gpu.launch_func @xent_kernels::@[[FWD:xent_loss_[0-9]+]] {{.*}} args({{.*}}, %[[L]] : {{.*}}, %[[S]] : memref<?x?xf32, {{.*}}>, %{{.*}} : i64, %[[OA]] : i64, %[[C]] : i64)
// CHECK:       gpu.func @[[FWD]]({{.*}}, %[[KS:[^:]*]]: memref<?x?xf32, {{.*}}>, %[[II:[^:]*]]: i64, %[[KO:[^:]*]]: i64, %[[KC:[^:]*]]: i64)
// The target in range of the whole row's C, then local to the slice.
// CHECK:         arith.cmpi slt, %{{.*}}, %[[KC]] : i64
// CHECK:         arith.subi %{{.*}}, %[[KO]] : i64
// CHECK:         gpu.shuffle
// m, Σ exp(x - m), and x_t (-inf where the slice does not hold the target).
// CHECK:         memref.store %{{.*}}, %[[KS]][%{{.*}}, %c0{{.*}}]
// CHECK-NEXT:    arith.constant 1 : index
// CHECK-NEXT:    memref.store %{{.*}}, %[[KS]][%{{.*}}, %c1{{.*}}]
// CHECK-NEXT:    arith.constant 2 : index
// CHECK-NEXT:    memref.store %{{.*}}, %[[KS]][%{{.*}}, %c2{{.*}}]
// CHECK:         gpu.return
func.func @forward(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) -> tensor<4x3xf32> {
  %l, %s = xent.cross_entropy sum %x, %t class_offset %o {num_classes = 20 : i64, return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>, i64) -> (tensor<f32>, tensor<4x3xf32>)
  return %s : tensor<4x3xf32>
}

// -----

// With weights and label smoothing: K = 6 (m, s, x_t, w_t, Σ w (m - x), Σ w).

// CHECK-LABEL: func.func @forward_weighted_smoothing
// CHECK:         gpu.launch_func @xent_kernels::@[[FWD:xent_loss_[0-9]+]]
// CHECK:       gpu.func @[[FWD]]
// CHECK:         memref.store %{{.*}}, %[[KS:arg[0-9]+]][%{{.*}}, %c3{{.*}}]
// CHECK:         memref.store %{{.*}}, %[[KS]][%{{.*}}, %c4{{.*}}]
// CHECK:         memref.store %{{.*}}, %[[KS]][%{{.*}}, %c5{{.*}}]
func.func @forward_weighted_smoothing(%x: tensor<4x10xbf16>, %t: tensor<4xi64>, %w: tensor<10xf32>, %o: i64, %n: i64) -> tensor<4x6xf32> {
  %l, %s = xent.cross_entropy mean %x, %t weight %w class_offset %o num_classes %n {return_row_stats, label_smoothing = 0.1 : f32}
      : (tensor<4x10xbf16>, tensor<4xi64>, tensor<10xf32>, i64, i64) -> (tensor<f32>, tensor<4x6xf32>)
  return %s : tensor<4x6xf32>
}

// -----

// The gradient from merged statistics: no reduction over the row (no
// shuffle), m and Σ loaded; w_t from the statistics of a weighted op (the
// prologue's kept weight too); a barrier between the reads of x_t and the
// writes (the gradient may be written over the logits: tied [0]).

// PIPELINE-LABEL: llvm.func @gradient(
// PIPELINE-NOT: xent.
// PIPELINE: gpu.launch_func {{.*}} @xent_kernels::@xent_prologue_0
// PIPELINE: gpu.launch_func {{.*}} @xent_kernels::@xent_grad_0

// CHECK-LABEL: func.func @gradient(
// CHECK:         xent.launch ins({{.*}}, %[[ST:[^,]*]], %[[O:[^,]*]], %[[N:[^ ]*]] : tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>, tensor<f32>, tensor<4x4xf32>, i64, i64) tied [0]
// CHECK:           gpu.launch_func @xent_kernels::@[[PRO:xent_prologue_[0-9]+]] {{.*}} args(%{{.*}} : memref<?xi64, {{.*}}>, %{{.*}} : memref<?xf32, {{.*}}>, %[[SA:[^ ]*]] : memref<?x?xf32, {{.*}}>, %{{.*}} : memref<6xf64>, %{{.*}} : i64)
// CHECK:           gpu.launch_func @xent_kernels::@[[GRAD:xent_grad_[0-9]+]] {{.*}} args({{.*}}, %[[SA]] : memref<?x?xf32, {{.*}}>, {{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK:       gpu.func @[[PRO]]({{.*}}, %[[PS:[^:]*]]: memref<?x?xf32, {{.*}}>,
// CHECK:         memref.load %[[PS]][%{{.*}}, %c3{{.*}}]
// CHECK:       gpu.func @[[GRAD]]({{.*}}, %[[GS:[^:]*]]: memref<?x?xf32, {{.*}}>, %{{[^:]*}}: memref<?x?xf32, {{.*}}>, %{{[^:]*}}: i64, %{{[^:]*}}: i64, %{{[^:]*}}: i64)
// CHECK-NOT:     gpu.shuffle
// CHECK:         memref.load %[[GS]][%{{.*}}, %c0{{.*}}]
// CHECK-NEXT:    %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:    memref.load %[[GS]][%{{.*}}, %c1{{.*}}]
// CHECK-NOT:     gpu.shuffle
// CHECK:         memref.load %[[GS]][%{{.*}}, %c3{{.*}}]
// CHECK-NOT:     gpu.shuffle
// CHECK:         gpu.barrier
// CHECK-NOT:     gpu.shuffle
// CHECK:         gpu.return
func.func @gradient(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<10xf32>, %s: tensor<4x4xf32>, %o: i64, %n: i64) -> tensor<4x10xf32> {
  %d = xent.cross_entropy_grad mean %g, %x, %t weight %w row_stats %s class_offset %o num_classes %n
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>, tensor<4x4xf32>, i64, i64) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}
