// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu="resident-rows=false" --canonicalize --cse | FileCheck %s
// RUN: xent-opt %s --split-input-file --convert-xent-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=RESIDENT

// How the kernels form the loss and the exponents, so that neither is
// quantized to the spacing of the row maximum m:
// * every exponent is ex2((x - m) · log2 e): the difference is taken in f32
//   first, then scaled;
// * the loss is (m - x_t) + log Σ, never (m + log Σ) - x_t, with log Σ from
//   the accurate per-row log (an exponent/mantissa split; lg2.approx only
//   for inf / NaN / 0);
// * the gradient is exp(x - m) times the row's coefficient divided by Σ,
//   never exp(x - lse); without z-loss lse is not formed at all.

// CHECK-LABEL: gpu.func @xent_loss_grad_0
// CHECK-DAG:   %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// x_t first, before any thread may write the row (dlogits may be the logits'
// own buffer).
// CHECK:       %[[XT:.*]] = memref.load %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>
// Statistics: the running max, then ex2 of the scaled difference.
// CHECK:       scf.for
// CHECK:         %[[M:.*]] = arith.maximumf %arg{{[0-9]+}}, %{{.*}} : f32
// CHECK:         %[[D:.*]] = arith.subf %{{.*}}, %[[M]] : f32
// CHECK-NEXT:    %[[A:.*]] = arith.mulf %[[D]], %[[LOG2E]] : f32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[A]]) : (f32) -> f32
// log Σ, accurate: Σ split into 2^k · z, log1p of z - 1.
// CHECK:       %[[BITS:.*]] = arith.bitcast %[[SUM:.*]] : f32 to i32
// CHECK:       arith.shrsi
// CHECK:       arith.sitofp
// CHECK:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%[[SUM]]) : (f32) -> f32
// CHECK-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// CHECK-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// CHECK-NOT:   arith.addf %{{.*}}, %[[LOG]]
// The loss: (m - x_t) + log Σ.
// CHECK:       %[[GAP:.*]] = arith.subf %[[MAX:.*]], %[[XT]] : f32
// CHECK-NEXT:  %[[NLL:.*]] = arith.addf %[[GAP]], %[[LOG]] : f32
// The gradient's coefficient carries 1 / Σ ...
// CHECK:       %[[SCALE:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// ... and multiplies ex2((x - m) · log2 e) with the same m as the loss.
// CHECK:       scf.for
// CHECK:         %[[GD:.*]] = arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK-NEXT:    %[[GA:.*]] = arith.mulf %[[GD]], %[[LOG2E]] : f32
// CHECK-NEXT:    %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[GA]]) : (f32) -> f32
// CHECK-NEXT:    arith.mulf %[[SCALE]], %[[E]] : f32
// The target's own element, rewritten after the row: also from x_t - m,
// the x_t read first (no second load), and its term times p_t - 1 formed
// as (e - Σ) / Σ (exactly 0 for one class; a z-loss term is not lost to
// the cancellation of A p_t - T).
// CHECK:       gpu.barrier
// CHECK-NOT:   memref.load %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK:       %[[TD:.*]] = arith.subf %[[XT]], %[[MAX]] : f32
// CHECK-NEXT:  %[[TA:.*]] = arith.mulf %[[TD]], %[[LOG2E]] : f32
// CHECK-NEXT:  %[[TE:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[TA]]) : (f32) -> f32
// CHECK-NEXT:  %[[PM:.*]] = arith.subf %[[TE]], %[[SUM]] : f32
// CHECK-NEXT:  %[[PM1:.*]] = arith.divf %[[PM]], %[[SUM]] : f32
// CHECK-NEXT:  %[[TG:.*]] = arith.mulf %{{.*}}, %[[PM1]] : f32
// CHECK-NEXT:  memref.store %[[TG]]
// CHECK:       gpu.return

// On the resident path the same: the loss from m - x_t, the gradient from the
// staged vectors as exp(x - m) · (coefficient / Σ).
// RESIDENT-LABEL: gpu.func @xent_loss_grad_0
// RESIDENT-DAG:   %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// RESIDENT:       nvvm.cluster.wait
// RESIDENT:       %[[BITS:.*]] = arith.bitcast %[[SUM:.*]] : f32 to i32
// RESIDENT:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// RESIDENT-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// RESIDENT-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// RESIDENT:       %[[GAP:.*]] = arith.subf %[[MAX:.*]], %{{.*}} : f32
// RESIDENT-NEXT:  arith.addf %[[GAP]], %[[LOG]] : f32
// RESIDENT:       %[[SCALE:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// RESIDENT:       vector.load
// RESIDENT:       %[[GD:.*]] = arith.subf %{{.*}}, %[[MAX]] : f32
// RESIDENT-NEXT:  %[[GA:.*]] = arith.mulf %[[GD]], %[[LOG2E]] : f32
// RESIDENT-NEXT:  %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[GA]]) : (f32) -> f32
// RESIDENT-NEXT:  arith.mulf %[[SCALE]], %[[E]] : f32
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>) {
  %l, %d = xent.cross_entropy_and_grad sum %g, %x, %t : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}

// -----

// Label smoothing: Σ w (m - x) is kept relative to the running max (each
// term max(m - x, 0) >= 0; the sum rebased by Σw · (m' - m) when the max
// grows), and the smoothing term is Σ w (m - x) + Σw · log Σ: no term of
// the size of the logits cancels.

// CHECK-LABEL: gpu.func @xent_loss_0
// CHECK:       %[[XT:.*]] = memref.load %{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK:       scf.for
// CHECK:         %[[M:.*]] = arith.maximumf %arg{{[0-9]+}}, %{{.*}} : f32
// CHECK:         %[[SAME:.*]] = arith.cmpf oeq, %[[MOLD:.*]], %[[M]] : f32
// CHECK:         %[[EMPTY:.*]] = arith.cmpf oeq, %[[MASS:.*]], %{{.*}} : f32
// CHECK:         %[[KEEP:.*]] = arith.ori %[[SAME]], %[[EMPTY]] : i1
// CHECK:         %[[SHIFT:.*]] = arith.subf %[[M]], %[[MOLD]] : f32
// CHECK-NEXT:    %[[BUMP:.*]] = arith.mulf %[[MASS]], %[[SHIFT]] : f32
// CHECK-NEXT:    %[[REBASED:.*]] = arith.addf %[[GAP0:.*]], %[[BUMP]] : f32
// CHECK-NEXT:    %[[GAP1:.*]] = arith.select %[[KEEP]], %[[GAP0]], %[[REBASED]] : f32
// CHECK:         %[[DIFF:.*]] = arith.subf %[[M]], %{{.*}} : f32
// CHECK-NEXT:    %[[POS:.*]] = arith.maxnumf %[[DIFF]], %{{.*}} : f32
// CHECK-NEXT:    %[[TERM:.*]] = arith.mulf %{{.*}}, %[[POS]] : f32
// CHECK-NEXT:    arith.addf %[[GAP1]], %[[TERM]] : f32
// CHECK:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// CHECK-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// CHECK:       %[[D:.*]] = arith.subf %{{.*}}, %[[XT]] : f32
// CHECK-NEXT:  arith.addf %[[D]], %[[LOG]] : f32
// CHECK:       %[[ML:.*]] = arith.mulf %[[WSUM:.*]], %[[LOG]] : f32
// CHECK-NEXT:  %[[SMOOTH:.*]] = arith.addf %[[WGAP:.*]], %[[ML]] : f32
// CHECK:       gpu.return
func.func @smoothing(%x: tensor<?x?xf32>, %t: tensor<?xi64>, %w: tensor<?xf32>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t weight %w {label_smoothing = 0.1 : f32} : (tensor<?x?xf32>, tensor<?xi64>, tensor<?xf32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// -----

// Probability targets: -Σ q (x - lse) = Σ q (m - x) + Σq · log Σ.

// CHECK-LABEL: gpu.func @xent_loss_0
// CHECK:       arith.maxnumf
// CHECK:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// CHECK-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// CHECK:       %[[ML:.*]] = arith.mulf %{{.*}}, %[[LOG]] : f32
// CHECK-NEXT:  arith.addf %{{.*}}, %[[ML]] : f32
// CHECK:       gpu.return
func.func @probabilities(%x: tensor<?x?xf32>, %t: tensor<?x?xf32>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// -----

// With z-loss, lse = m + log Σ is formed for z·lse² (and its gradient), not
// for the loss.

// CHECK-LABEL: gpu.func @xent_loss_0
// CHECK:       %[[LG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK-NEXT:  %[[LN:.*]] = arith.mulf %[[LG2]], %{{.*}} : f32
// CHECK-NEXT:  %[[LOG:.*]] = arith.select %{{.*}}, %{{.*}}, %[[LN]] : f32
// CHECK-NEXT:  %[[LSE:.*]] = arith.addf %[[MAX:.*]], %[[LOG]] : f32
// CHECK:       %[[D:.*]] = arith.subf %[[MAX]], %{{.*}} : f32
// CHECK-NEXT:  arith.addf %[[D]], %[[LOG]] : f32
// CHECK:       arith.mulf %[[LSE]], %[[LSE]] : f32
func.func @z_loss(%x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> tensor<?xf32> {
  %l = xent.cross_entropy none %x, %t {z_loss_scale = 1.0e-4 : f32} : (tensor<?x?xbf16>, tensor<?xi64>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// -----

// A gradient alone with label smoothing and weights needs Σ w (the smoothing
// term's ε/C Σ_k w_k p_c): the statistics carry it (four components), and no
// log Σ is taken.

// CHECK-LABEL: gpu.func @xent_grad_0
// CHECK:       scf.for {{.*}} -> (f32, f32, f32, f32)
// CHECK-NOT:   llvm.nvvm.lg2.approx
// CHECK:       gpu.return
func.func @grad_weighted_smoothing(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>, %w: tensor<?xf32>) -> tensor<?x?xf32> {
  %d = xent.cross_entropy_grad sum %g, %x, %t weight %w {label_smoothing = 0.1 : f32} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xf32>) -> tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}

// -----

// A z-loss with the gradient: the target's element adds Z p_t to T (p_t - 1)
// after that product is formed, so that with one class (p_t - 1 = 0
// exactly) its gradient is the z-loss term alone, not the difference of two
// nearly equal sums.
// CHECK-LABEL: gpu.func @xent_loss_grad_0
// The row's gradient loop (its scalar tail's stores), then the target.
// CHECK:       vector.store
// CHECK:       memref.store
// CHECK-NEXT:  }
// CHECK-NEXT:  }
// CHECK-NEXT:  gpu.barrier
// CHECK-NEXT:  scf.if
// CHECK-NEXT:  arith.subf
// CHECK-NEXT:  arith.mulf
// CHECK-NEXT:  %[[TE:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-NEXT:  %[[P:.*]] = arith.divf %[[TE]], %[[SUM:.*]] : f32
// CHECK-NEXT:  %[[PM:.*]] = arith.subf %[[TE]], %[[SUM]] : f32
// CHECK-NEXT:  %[[PM1:.*]] = arith.divf %[[PM]], %[[SUM]] : f32
// CHECK-NEXT:  %[[TG:.*]] = arith.mulf %{{.*}}, %[[PM1]] : f32
// CHECK-NEXT:  %[[ZG:.*]] = arith.mulf %{{.*}}, %[[P]] : f32
// CHECK-NEXT:  %[[G:.*]] = arith.addf %[[TG]], %[[ZG]] : f32
// CHECK-NEXT:  memref.store %[[G]]
func.func @joint_z_loss(%g: tensor<f32>, %x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>) {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {z_loss_scale = 1.0e-4 : f32} : (tensor<f32>, tensor<?x?xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xf32>)
  return %l, %d : tensor<f32>, tensor<?x?xf32>
}
