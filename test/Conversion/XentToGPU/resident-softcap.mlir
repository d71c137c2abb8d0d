// The softcap on bf16 / f16 logits keeps rows on chip: tanh is the
// hardware's tanh.approx.f32 (llvm.tanh with afn), one MUFU op per element,
// so the resident kernel's registers hold (no spill, see the ptxas run
// below). f32 logits keep the accurate tanh (ex2 and a reciprocal, with a
// series near 0) and the two-pass kernel: that form spills in the resident
// one. With split-exponentials=2 the narrow gradient walk forms every second
// exponential on the FMA pipe (checked below with ptxas); without it, none.
// RUN: xent-opt %s --convert-xent-to-gpu="split-exponentials=2" --canonicalize --cse | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DEFAULT
// REQUIRES: ptxas
// RUN: xent-opt %s --xent-gpu-pipeline="chip=sm_90 format=isa threads=256 split-exponentials=2" \
// RUN:   | %python %xent_src/utils/extract_ptx.py > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ptx

// DEFAULT-NOT: arith.constant 0x4B400000 : f32
// DEFAULT-NOT: llvm.intr.fma
// DEFAULT:     gpu.module

// CHECK-LABEL: func.func @narrow
// CHECK:       gpu.launch_func @xent_kernels::@[[K:xent_loss_grad_[0-9]+]] clusters in
// CHECK-LABEL: func.func @wide
// CHECK-NOT:   clusters in
// CHECK:       gpu.launch_func @xent_kernels::@[[W:xent_loss_grad_[0-9]+]] blocks
// CHECK-NOT:   clusters in
// CHECK:       return

// CHECK:       gpu.func @[[K]](
// CHECK:       %[[SHIFT:.*]] = arith.constant 0x4B400000 : f32
// CHECK:       %[[LOW:.*]] = arith.constant -1.270000e+02 : f32
// CHECK-NOT:   gpu.return
// CHECK:       llvm.intr.tanh({{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// The gradient walk keeps each logit's tanh t: x - m = fma(s, t, -m), the
// slope fma(-t, t, 1); lane 0's exponential on the MUFU (ex2.approx),
// lane 1's on the FMA pipe: z clamped at -127 (NaN kept), j = round(z) by
// the 1.5·2^23 shift, 2^(z - j) by five fma, 2^j from the shifted sum's
// bits.
// CHECK:       %[[D0:.*]] = llvm.intr.fma(%[[S:.*]], %[[T0:.*]], %[[NM:.*]]) :
// CHECK-NEXT:  %[[Z0:.*]] = arith.mulf %[[D0]], %[[LOG2E:.*]] : f32
// CHECK-NEXT:  llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[Z0]])
// CHECK-NEXT:  arith.mulf
// CHECK-NEXT:  %[[N0:.*]] = arith.negf %[[T0]]
// CHECK-NEXT:  llvm.intr.fma(%[[N0]], %[[T0]], %{{.*}}) :
// CHECK-NEXT:  arith.mulf
// CHECK-NEXT:  arith.truncf
// CHECK-NEXT:  %[[D1:.*]] = llvm.intr.fma(%[[S]], %[[T1:.*]], %[[NM]]) :
// CHECK-NEXT:  %[[Z1:.*]] = arith.mulf %[[D1]], %[[LOG2E]] : f32
// CHECK-NEXT:  %[[C1:.*]] = arith.maximumf %[[Z1]], %[[LOW]] : f32
// CHECK-NEXT:  %[[H1:.*]] = arith.addf %[[C1]], %[[SHIFT]] : f32
// CHECK-NEXT:  %[[J1:.*]] = arith.subf %[[H1]], %[[SHIFT]] : f32
// CHECK-NEXT:  %[[F1:.*]] = arith.subf %[[C1]], %[[J1]] : f32
// CHECK-NEXT:  %[[P5:.*]] = llvm.intr.fma(%{{.*}}, %[[F1]], %{{.*}}) :
// CHECK-NEXT:  %[[P4:.*]] = llvm.intr.fma(%[[P5]], %[[F1]], %{{.*}}) :
// CHECK-NEXT:  %[[P3:.*]] = llvm.intr.fma(%[[P4]], %[[F1]], %{{.*}}) :
// CHECK-NEXT:  %[[P2:.*]] = llvm.intr.fma(%[[P3]], %[[F1]], %{{.*}}) :
// CHECK-NEXT:  %[[P1:.*]] = llvm.intr.fma(%[[P2]], %[[F1]], %{{.*}}) :
// CHECK-NEXT:  %[[B1:.*]] = arith.bitcast %[[H1]] : f32 to i32
// CHECK-NEXT:  %[[E1:.*]] = arith.addi %[[B1]], %c-1262485377_i32 : i32
// CHECK-NEXT:  %[[Q1:.*]] = arith.shli %[[E1]], %c23_i32 : i32
// CHECK-NEXT:  %[[SC1:.*]] = arith.bitcast %[[Q1]] : i32 to f32
// CHECK-NEXT:  arith.mulf %[[P1]], %[[SC1]] : f32
// CHECK:       gpu.return
// CHECK:       gpu.func @[[W]](
// CHECK-NOT:   llvm.intr.tanh
// CHECK:       llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT:   llvm.intr.tanh
// f32 logits keep every exponential on the MUFU.
// CHECK-NOT:   arith.constant 0x4B400000 : f32
// CHECK:       gpu.return

// PTX:         .entry xent_loss_grad_0
// PTX:         tanh.approx.f32
// PTX:         max.NaN.f32 {{.*}}, 0fC2FE0000;
// PTX-NEXT:    add.rn.f32 {{.*}}, 0f4B400000;
// PTX:         .entry xent_loss_grad_1
// PTX-NOT:     tanh.approx
// PTX:         ex2.approx
// PTX-NOT:     tanh.approx
// The resident kernel's registers hold with the tanh in them.
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log
func.func @narrow(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xbf16>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}

func.func @wide(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {softcap = 30.0 : f32}
      : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}
