// The linear family with run-time scalars: ignore_index, label smoothing,
// z-loss scale and softcap are operands of the op, which the launch takes
// after the tensors and hands to the prologue and the chunks' row kernel as
// the kernels' scalar arguments, so one compiled function serves every
// value. A label smoothing or a softcap of 0 (the op without the feature,
// exactly) launches the row kernel without it: the host compares each
// value with 0 (NaN takes the feature's kernel) and launches one of four
// kernels, none of which compares the softcap with 0 itself.

// RUN: xent-opt %s --convert-xent-to-gpu --cse | FileCheck %s
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90" -o /dev/null

func.func private @xentGemm_bf16_f32(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32)

// CHECK-LABEL: func.func @joint
// CHECK-SAME:    %[[I:[a-z0-9]+]]: i64, %[[E:[a-z0-9]+]]: f32, %[[Z:[a-z0-9]+]]: f32, %[[S:[a-z0-9]+]]: f32
// CHECK:       xent.launch ins({{.*}}, %[[I]], %[[E]], %[[Z]], %[[S]] : {{.*}}, i64, f32, f32, f32)
// CHECK-NEXT:  ^bb0({{.*}}: memref<?xi64, strided<[?], offset: ?>>, %[[BI:[a-z0-9]+]]: i64, %[[BE:[a-z0-9]+]]: f32, %[[BZ:[a-z0-9]+]]: f32, %[[BS:[a-z0-9]+]]: f32, {{.*}}: memref<f32, strided<[], offset: ?>>
// The prologue counts the rows kept under the run-time ignore_index.
// CHECK:       gpu.launch_func @xent_kernels::@xent_prologue_0 {{.*}} args({{.*}}, %[[BI]] : i64)
// CHECK:       scf.for
// CHECK:       func.call @xentGemm_bf16_f32
// CHECK:       %[[SMOOTH:.*]] = arith.cmpf une, %[[BE]], %[[ZERO:.*]] : f32
// CHECK-NEXT:  scf.if %[[SMOOTH]] {
// CHECK-NEXT:    %[[CAPPED:.*]] = arith.cmpf une, %[[BS]], %[[ZERO]] : f32
// CHECK-NEXT:    scf.if %[[CAPPED]] {
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_0 {{.*}} args({{.*}}, %[[BI]] : i64, %[[BE]] : f32, %[[BZ]] : f32, %[[BS]] : f32)
// CHECK-NEXT:    } else {
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_1 {{.*}} args({{.*}}, %[[BI]] : i64, %[[BE]] : f32, %[[BZ]] : f32)
// CHECK-NEXT:    }
// CHECK-NEXT:  } else {
// CHECK-NEXT:    %[[CAPPED2:.*]] = arith.cmpf une, %[[BS]], %[[ZERO]] : f32
// CHECK-NEXT:    scf.if %[[CAPPED2]] {
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_2 {{.*}} args({{.*}}, %[[BI]] : i64, %[[BZ]] : f32, %[[BS]] : f32)
// CHECK-NEXT:    } else {
// CHECK:           gpu.launch_func @xent_kernels::@xent_loss_grad_3 {{.*}} args({{.*}}, %[[BI]] : i64, %[[BZ]] : f32)
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @joint(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<?xi64>, %i: i64, %e: f32, %z: f32, %s: f32) -> (tensor<f32>, tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %l, %zl, %dh, %dw = xent.linear_cross_entropy_and_grad mean %g, %h, %w, %t ignore_index %i label_smoothing %e z_loss_scale %z softcap %s : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi64>, i64, f32, f32, f32) -> (tensor<f32>, tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>)
  return %l, %zl, %dh, %dw : tensor<f32>, tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>
}

// The loss alone, with only some values given at run time: the others are
// the attributes' constants.
// CHECK-LABEL: func.func @loss_only
// CHECK-SAME:    %[[E2:[a-z0-9]+]]: f32)
// CHECK:       xent.launch ins({{.*}}, %[[E2]] : {{.*}}, f32)
// CHECK:       ^bb0({{.*}}, %[[BE2:[a-z0-9]+]]: f32, {{.*}}: memref<?xf32, strided<[?], offset: ?>>):
// CHECK-DAG:   %[[II:.*]] = arith.constant 7 : i64
// CHECK:       arith.cmpf une, %[[BE2]]
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_0 {{.*}} args({{.*}}, %[[II]] : i64, %[[BE2]] : f32)
// CHECK:       gpu.launch_func @xent_kernels::@xent_loss_1 {{.*}} args({{.*}}, %[[II]] : i64)
func.func @loss_only(%h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<?xi64>, %e: f32) -> tensor<?xf32> {
  %l = xent.linear_cross_entropy none %h, %w, %t label_smoothing %e {ignore_index = 7 : i64} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xi64>, f32) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// The kernels, after the functions: the softcap's kernel takes it as not 0.
// CHECK-LABEL: gpu.func @xent_loss_grad_0(
// CHECK-SAME:    {{.*}}, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %[[CAP:[a-z0-9]+]]: f32)
// CHECK-NOT:   arith.cmpf oeq, %[[CAP]]
// CHECK:       arith.divf %{{.*}}, %[[CAP]] : f32
// CHECK-NOT:   arith.cmpf oeq, %[[CAP]]
// CHECK:       arith.mulf %[[CAP]], %{{.*}} : f32
// CHECK-NOT:   arith.cmpf oeq, %[[CAP]]
// CHECK-LABEL: gpu.func @xent_loss_grad_1(
