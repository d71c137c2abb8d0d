// RUN: xent-opt %s --convert-xent-to-gpu="threads=256" --one-shot-bufferize --canonicalize | FileCheck %s

// Host side of a mean: the kept weight and count are summed on the device by
// a one-block prologue into the f64 scratch (which also initializes the
// accumulators and the loss), then one block of `threads` threads per row
// (at least one block: blocks past the last row do nothing), with no
// host-side branch between launches and no conversion kernel after them.
// Buffers are taken with any strides (a view is never copied on the host)
// and passed as they are: the kernels read them through their strides.

// CHECK-LABEL: func @mean
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xbf16>, %[[T:.*]]: tensor<?xi64>)
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:   %[[II:.*]] = arith.constant -100 : i64
// CHECK-DAG:   %[[XB:.*]] = bufferization.to_buffer %[[X]] : tensor<?x?xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK-DAG:   %[[TB:.*]] = bufferization.to_buffer %[[T]] : tensor<?xi64> to memref<?xi64, strided<[?], offset: ?>>
// CHECK:       %[[LOSS:.*]] = gpu.alloc () : memref<f32>
// CHECK:       %[[LOSSV:.*]] = memref.cast %[[LOSS]] : memref<f32> to memref<f32, strided<[], offset: ?>>
// CHECK:       %[[N:.*]] = tensor.dim %[[X]], %{{.*}}
// CHECK:       %[[STATS:.*]] = gpu.alloc () : memref<6xf64>
// CHECK:       gpu.launch_func @xent_kernels::@[[PROLOGUE:xent_prologue_[0-9]+]] blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[TB]] : memref<?xi64, strided<[?], offset: ?>>, %[[STATS]] : memref<6xf64>, %[[LOSSV]] : memref<f32, strided<[], offset: ?>>, %[[II]] : i64)
// CHECK:       %[[GRID:.*]] = arith.maxui %[[N]], %[[C1]] : index
// CHECK:       gpu.launch_func @xent_kernels::@[[ROW:xent_loss_[0-9]+]] blocks in (%[[GRID]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[XB]] : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[TB]] : memref<?xi64, strided<[?], offset: ?>>, %[[STATS]] : memref<6xf64>, %[[LOSSV]] : memref<f32, strided<[], offset: ?>>, %[[II]] : i64)
// CHECK-NOT:   gpu.launch_func
// CHECK:       gpu.dealloc %[[STATS]]
// CHECK:       %[[R:.*]] = bufferization.to_tensor %[[LOSS]] : memref<f32> to tensor<f32>
// CHECK:       return %[[R]]
func.func @mean(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The prologue: the kept weight and count (f32 sums, widened), the loss's
// accumulator (NaN for a mean over no kept row, else 0) and the rows-done
// counter, and the loss itself, which stands when there is no row.
// The row kernel: online max / sum-exp over classes tid, tid + 256, ...,
// xor butterflies over 16..1 lanes, one exchange through workgroup memory,
// the row's share of the loss (divided by the kept weight) added atomically
// to the f64 accumulator by thread 0 of kept rows; then thread 0
// of every row counts it done, and the row that counts last writes the
// loss from the accumulator.

// CHECK: gpu.module @xent_kernels
// CHECK: gpu.func @[[PROLOGUE]](%{{.*}}: memref<?xi64, strided<[?], offset: ?>>, %[[PS:.*]]: memref<6xf64>, %[[PL:.*]]: memref<f32, strided<[], offset: ?>>, %{{.*}}: i64)
// CHECK:   scf.for
// CHECK:   %[[W64:.*]] = arith.extf %[[W:.*]] : f32 to f64
// CHECK:   memref.store %[[W64]], %[[PS]][%c0] : memref<6xf64>
// CHECK:   memref.store %{{.*}}, %[[PS]][%c1] : memref<6xf64>
// CHECK:   %[[NONE:.*]] = arith.cmpf oeq, %[[W]], %{{.*}} : f32
// CHECK:   %[[INIT:.*]] = arith.select %[[NONE]], %{{.*}}, %{{.*}} : f64
// CHECK:   memref.store %[[INIT]], %[[PS]][%c2] : memref<6xf64>
// CHECK:   memref.store %{{.*}}, %[[PS]][%c5] : memref<6xf64>
// CHECK:   %[[INIT32:.*]] = arith.truncf %[[INIT]] : f64 to f32
// CHECK:   memref.store %[[INIT32]], %[[PL]][] : memref<f32, strided<[], offset: ?>>
// CHECK:   gpu.return
// CHECK: gpu.func @[[ROW]](%[[KX:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[KT:.*]]: memref<?xi64, strided<[?], offset: ?>>, %[[KS:.*]]: memref<6xf64>, %[[KL:.*]]: memref<f32, strided<[], offset: ?>>, %[[KII:.*]]: i64) workgroup(%[[SHM:.*]] : memref<4x32xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK:   %[[TID:.*]] = gpu.thread_id x
// CHECK:   %[[ROWID:.*]] = gpu.block_id x
// CHECK:   %[[INSIDE:.*]] = arith.cmpi ult, %[[ROWID]], %{{.*}} : index
// CHECK:   scf.if %[[INSIDE]] {
// CHECK:   %[[TGT:.*]] = memref.load %[[KT]][%[[ROWID]]]
// CHECK:   %[[KEPT:.*]] = arith.cmpi ne, %[[TGT]], %[[KII]] : i64
// The class axis is last here: when C is a multiple of 8, the class stride 1
// and the row 16-byte aligned (checked at run time: a row of a padded
// vocabulary may not be), each thread reads 8 logits per 16-byte vector
// load from a 1-D view of the row; otherwise one logit at a time.
// CHECK:   %{{.*}}, %{{.*}}, %{{.*}}:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[KX]]
// CHECK:   arith.cmpi eq, %[[STRIDES]]#1, %{{.*}} : index
// CHECK:   memref.extract_aligned_pointer_as_index %[[KX]]
// CHECK:   %[[STATS:.*]]:2 = scf.if %{{.*}} -> (f32, f32) {
// CHECK:     %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %[[ST:.*]]:2 = memref.extract_strided_metadata %[[KX]]
// CHECK:     %[[ROWOFF:.*]] = arith.muli %[[ROWID]], %[[ST]]#0 : index
// CHECK:     %[[START:.*]] = arith.addi %[[OFF]], %[[ROWOFF]] : index
// CHECK:     %[[ROW1D:.*]] = memref.reinterpret_cast %[[KX]] to offset: [%[[START]]], sizes: [%{{.*}}], strides: [1] : memref<?x?xbf16, strided<[?, ?], offset: ?>> to memref<?xbf16, strided<[1], offset: ?>>
// CHECK:     scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
// CHECK:       vector.load %[[ROW1D]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16, strided<[1], offset: ?>>, vector<8xbf16>
// CHECK:       arith.extf %{{.*}} : bf16 to f32
// CHECK:       arith.maximumf
// CHECK:       llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:   } else {
// CHECK:     scf.for %{{.*}} = %[[TID]] to %{{.*}} step %{{.*}} iter_args
// CHECK:       memref.load %[[KX]]
// CHECK:   gpu.shuffle xor %[[STATS]]#0, %{{.*}}, %{{.*}} : f32
// CHECK:   gpu.shuffle xor
// CHECK:   memref.store %{{.*}}, %[[SHM]]
// CHECK:   gpu.barrier
// CHECK:   memref.load %[[SHM]]
// CHECK:   gpu.shuffle xor
// CHECK:   gpu.barrier
// CHECK:   llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK:   scf.if
// CHECK:     %[[WT:.*]] = memref.load %[[KS]][%c0] : memref<6xf64>
// CHECK:     %[[WT32:.*]] = arith.truncf %[[WT]] : f64 to f32
// CHECK:     %[[SHARE:.*]] = arith.divf %{{.*}}, %[[WT32]] : f32
// CHECK:     %[[SHARE64:.*]] = arith.extf %[[SHARE]] : f32 to f64
// CHECK:     memref.atomic_rmw addf %[[SHARE64]], %[[KS]][%c2] : (f64, memref<6xf64>) -> f64
// CHECK:   scf.if
// CHECK:     nvvm.memory.barrier <gpu>
// CHECK:     %[[BEFORE:.*]] = memref.atomic_rmw addf %{{.*}}, %[[KS]][%c5] : (f64, memref<6xf64>) -> f64
// CHECK:     %[[DONE:.*]] = arith.addf %[[BEFORE]], %{{.*}} : f64
// CHECK:     %[[LAST:.*]] = arith.cmpf oeq, %[[DONE]], %{{.*}} : f64
// CHECK:     scf.if %[[LAST]] {
// CHECK:       nvvm.memory.barrier <gpu>
// CHECK:       %[[SUM:.*]] = memref.atomic_rmw addf %{{.*}}, %[[KS]][%c2] : (f64, memref<6xf64>) -> f64
// CHECK:       %[[SUM32:.*]] = arith.truncf %[[SUM]] : f64 to f32
// CHECK:       memref.store %[[SUM32]], %[[KL]][] : memref<f32, strided<[], offset: ?>>
// CHECK-NOT: memref.atomic_rmw
// CHECK:   gpu.return
