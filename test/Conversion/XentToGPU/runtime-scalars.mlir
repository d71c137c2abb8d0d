// RUN: xent-opt %s --convert-xent-to-gpu="threads=256" --one-shot-bufferize --canonicalize | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s --convert-xent-to-gpu=mode=kernel | FileCheck %s --check-prefix=LAUNCH

// The loss's scalars are kernel arguments: the row kernel takes
// ignore_index (i64, class indices) and ε, z, softcap (f32, when the op has
// the feature) last, the prologue ignore_index where it counts kept rows.
// The host passes an arith.constant of the attribute, or the op's run-time
// operand, which xent.launch takes as a scalar input. The kernels read each
// value once per thread (1/s, 1-ε, ε/C computed once).

// REMARK: remark: [Passed] kernel {{.*}}Function=attributes
// REMARK: remark: [Passed] kernel {{.*}}Function=operands
// REMARK: remark: [Passed] kernel {{.*}}Function=probs

// CHECK-LABEL: func.func @attributes
// CHECK-DAG:   %[[SC:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-DAG:   %[[ZS:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:   %[[LS:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG:   %[[II:.*]] = arith.constant -1 : i64
// CHECK:       gpu.launch_func @xent_kernels::@[[P0:xent_prologue_0]] {{.*}} args({{.*}}, %{{.*}} : memref<f32, strided<[], offset: ?>>, %[[II]] : i64)
// CHECK:       gpu.launch_func @xent_kernels::@[[K0:xent_loss_grad_0]] {{.*}} args({{.*}}, %{{.*}} : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[II]] : i64, %[[LS]] : f32, %[[ZS]] : f32, %[[SC]] : f32)
func.func @attributes(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t
      {ignore_index = -1 : i64, label_smoothing = 0.125 : f32, z_loss_scale = 0.5 : f32, softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

// The same op with every value at run time: the launch takes the operands
// beside the tensors and passes them on as they are.
// LAUNCH-LABEL: func.func @operands
// LAUNCH-SAME:  %[[II:[^:]*]]: i64, %[[LS:[^:]*]]: f32, %[[ZS:[^:]*]]: f32, %[[SC:[^:]*]]: f32)
// LAUNCH:       xent.launch ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[II]], %[[LS]], %[[ZS]], %[[SC]] : tensor<?x?xbf16>, tensor<?xi64>, tensor<f32>, i64, f32, f32, f32)
// LAUNCH-NEXT:  ^bb0({{.*}}, %[[BII:[^:]*]]: i64, %[[BLS:[^:]*]]: f32, %[[BZS:[^:]*]]: f32, %[[BSC:[^:]*]]: f32, {{.*}}):
// LAUNCH:       gpu.launch_func @xent_kernels::@xent_loss_grad_1 {{.*}}, %[[BII]] : i64, %[[BLS]] : f32, %[[BZS]] : f32, %[[BSC]] : f32)

// CHECK-LABEL: func.func @operands
// CHECK-SAME:  %[[II:[^:]*]]: i64, %[[LS:[^:]*]]: f32, %[[ZS:[^:]*]]: f32, %[[SC:[^:]*]]: f32)
// The prologue is @attributes' (the same kernel, not built twice).
// CHECK:       gpu.launch_func @xent_kernels::@[[P0]] {{.*}} args({{.*}}, %{{.*}} : memref<f32, strided<[], offset: ?>>, %[[II]] : i64)
// CHECK:       gpu.launch_func @xent_kernels::@[[K1:xent_loss_grad_1]] {{.*}} args({{.*}}, %{{.*}} : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[II]] : i64, %[[LS]] : f32, %[[ZS]] : f32, %[[SC]] : f32)
func.func @operands(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>, %ii: i64, %ls: f32, %zs: f32, %sc: f32)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t ignore_index %ii label_smoothing %ls z_loss_scale %zs softcap %sc
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>, i64, f32, f32, f32) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

// Probability targets: no ignore_index (the prologue takes no scalar), a
// run-time ε.
// CHECK-LABEL: func.func @probs
// CHECK-SAME:  %[[E:[^:]*]]: f32)
// CHECK:       gpu.launch_func @xent_kernels::@xent_prologue_1 {{.*}} args(%{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>, %{{.*}} : memref<f32, strided<[], offset: ?>>)
// CHECK:       gpu.launch_func @xent_kernels::@[[K2:xent_loss_0]] {{.*}} args({{.*}}, %{{.*}} : memref<f32, strided<[], offset: ?>>, %[[E]] : f32)
func.func @probs(%x: tensor<?x?xf32>, %q: tensor<?x?xf32>, %ls: f32) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %q label_smoothing %ls : (tensor<?x?xf32>, tensor<?x?xf32>, f32) -> tensor<f32>
  return %l : tensor<f32>
}

// The kernels of the attributes and of the operands have the same
// signature: what the host passes decides the values.
// CHECK:       gpu.module @xent_kernels
// CHECK:       gpu.func @[[P0]]({{.*}}, %[[PII:.*]]: i64) workgroup
// CHECK:         arith.cmpi ne, %{{.*}}, %[[PII]] : i64
// CHECK:       gpu.func @[[K0]]({{.*}}: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) workgroup
// CHECK:       gpu.func @[[K1]]({{.*}}: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[KII:.*]]: i64, %[[KLS:.*]]: f32, %[[KZS:.*]]: f32, %[[KSC:.*]]: f32) workgroup
// Once per thread: 1/s, 1-ε, ε/C.
// CHECK:         %[[INV:.*]] = arith.divf %{{.*}}, %[[KSC]] : f32
// CHECK-NEXT:    arith.subf %{{.*}}, %[[KLS]] : f32
// CHECK-NEXT:    arith.divf %[[KLS]], %{{.*}} : f32
// CHECK:         arith.cmpi ne, %{{.*}}, %[[KII]] : i64
// The softcap s·tanh(x/s) of each logit, then the z-loss z·lse² and its
// gradient's 2z.
// CHECK:         arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:         arith.mulf %[[KSC]], %{{.*}} : f32
// CHECK:         arith.mulf %[[KZS]], %{{.*}} : f32
// CHECK:         arith.mulf %[[KZS]], %{{.*}} : f32
// CHECK:       gpu.func @[[K2]]({{.*}}, %[[PLS:.*]]: f32) workgroup
// CHECK:         arith.subf %{{.*}}, %[[PLS]] : f32
// CHECK-NEXT:    arith.divf %[[PLS]], %{{.*}} : f32
