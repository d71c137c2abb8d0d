// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu --one-shot-bufferize --canonicalize | FileCheck %s

// A destination with strides (a slice of a larger buffer) is written through
// them as well.

// CHECK-LABEL: func @into_strided_destination
// CHECK-SAME: %[[SD:[^:]*]]: memref<4x100xf32, strided<[128, 1], offset: ?>>)
// CHECK-NOT: gpu.alloc (
// CHECK:     %[[SDV:.*]] = memref.cast %[[SD]] : memref<4x100xf32, strided<[128, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK:     gpu.launch_func @xent_kernels::@{{xent_grad_[0-9]+}} {{.*}} args({{.*}}, %[[SDV]] : memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}} : i64)
// CHECK-NOT: materialize_in_destination
func.func @into_strided_destination(%x: tensor<4x100xf32>, %t: tensor<4xi64>, %g: tensor<f32>,
                                    %dx: memref<4x100xf32, strided<[128, 1], offset: ?>>) {
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x100xf32>, tensor<4xi64>) -> tensor<4x100xf32>
  bufferization.materialize_in_destination %d in restrict writable %dx : (tensor<4x100xf32>, memref<4x100xf32, strided<[128, 1], offset: ?>>) -> ()
  return
}

// -----

// Results materialized into writable buffers (how a framework passes its own
// output tensors) are written there by the kernels: no device allocation
// for them, and the materialization is gone. The gradient kernel reads
// grad_output and writes dlogits in a second walk over the row.

// CHECK-LABEL: func @into_destinations
// CHECK-SAME: (%[[X:.*]]: memref<8x1000xf16>, %[[T:.*]]: memref<8xi32>, %[[G:.*]]: memref<8xf32>, %[[L:.*]]: memref<8xf32>, %[[D:.*]]: memref<8x1000xf16>)
// CHECK-NOT: gpu.alloc
// CHECK:     %[[LV:.*]] = memref.cast %[[L]] : memref<8xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK:     gpu.launch_func @xent_kernels::@[[LOSS:xent_loss_[0-9]+]] {{.*}} args({{.*}}, %[[LV]] : memref<?xf32, strided<[?], offset: ?>>, %{{.*}} : i64, %{{.*}} : f32)
// CHECK:     %[[DV:.*]] = memref.cast %[[D]] : memref<8x1000xf16> to memref<?x?xf16, strided<[?, ?], offset: ?>>
// CHECK:     gpu.launch_func @xent_kernels::@[[GRAD:xent_grad_[0-9]+]] {{.*}} args({{.*}}, %[[DV]] : memref<?x?xf16, strided<[?, ?], offset: ?>>, %{{.*}} : i64, %{{.*}} : f32)
// CHECK-NOT: gpu.alloc
// CHECK-NOT: materialize_in_destination
// CHECK:     return

// CHECK: gpu.func @[[LOSS]]
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return
// CHECK: gpu.func @[[GRAD]]
// CHECK:   scf.for
// CHECK:   scf.for
// CHECK:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:     arith.cmpi eq
// CHECK:     arith.truncf %{{.*}} : f32 to f16
// CHECK:     memref.store
func.func @into_destinations(%x: memref<8x1000xf16>, %t: memref<8xi32>, %g: memref<8xf32>,
                             %loss: memref<8xf32>, %dx: memref<8x1000xf16>) {
  %xt = bufferization.to_tensor %x restrict : memref<8x1000xf16> to tensor<8x1000xf16>
  %tt = bufferization.to_tensor %t restrict : memref<8xi32> to tensor<8xi32>
  %gt = bufferization.to_tensor %g restrict : memref<8xf32> to tensor<8xf32>
  %l = xent.cross_entropy none %xt, %tt {label_smoothing = 0.1 : f32} : (tensor<8x1000xf16>, tensor<8xi32>) -> tensor<8xf32>
  %d = xent.cross_entropy_grad none %gt, %xt, %tt {label_smoothing = 0.1 : f32} : (tensor<8xf32>, tensor<8x1000xf16>, tensor<8xi32>) -> tensor<8x1000xf16>
  bufferization.materialize_in_destination %l in restrict writable %loss : (tensor<8xf32>, memref<8xf32>) -> ()
  bufferization.materialize_in_destination %d in restrict writable %dx : (tensor<8x1000xf16>, memref<8x1000xf16>) -> ()
  return
}

