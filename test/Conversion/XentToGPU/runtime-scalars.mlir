// The kernels do not take run-time scalars yet: under mode=auto such an op
// takes its decomposition (reading the operand), with a remark saying why;
// mode=kernel rules it out with that reason; an op with the attributes only
// still takes the kernels.

// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu | FileCheck %s
// RUN: xent-opt %s -split-input-file --convert-xent-to-gpu=mode=kernel -verify-diagnostics

// REMARK: remark: [Missed] decomposition {{.*}}Function=smoothing | Reason="mode=auto, and the kernels do not take run-time scalars (ignore_index, label_smoothing, z_loss_scale, softcap operands) yet"
// CHECK-LABEL: func.func @smoothing
// CHECK-SAME: %[[E:[^:]*]]: f32)
// CHECK-NOT:   xent.
// CHECK:       arith.divf %[[E]], %{{.*}} : f32
func.func @smoothing(%x: tensor<8x64xbf16>, %t: tensor<8xi64>, %e: f32) -> tensor<f32> {
  // expected-error @+1 {{'xent.cross_entropy' op cannot take the kernel (mode=kernel): the kernels do not take run-time scalars (ignore_index, label_smoothing, z_loss_scale, softcap operands) yet; use mode=auto or mode=inline to take its decomposition}}
  %l = xent.cross_entropy mean %x, %t label_smoothing %e : (tensor<8x64xbf16>, tensor<8xi64>, f32) -> tensor<f32>
  return %l : tensor<f32>
}
