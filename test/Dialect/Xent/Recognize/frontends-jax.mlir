// The JAX corpus (utils/frontends: programs JAX itself exported to
// StableHLO, lowered by StableHLO's own stablehlo-legalize-to-linalg, then
// elementwise-fused; values.json holds JAX's numbers). What the recognizer
// raises today, and that it leaves the rest untouched; docs/recognition.md
// "Real frontend output" lists every program with why.

// python/tests/test_recognize_frontends.py runs every program on the CPU
// (as written, through the op's captured region, through the op's own
// decomposition) against JAX's numbers and JAX's conventions for labels
// outside [0, C).

// One-hot labels: jax.nn.one_hot gives a label outside [0, 10) an all-zero
// row, so that element's loss is 0 and the mean still counts it. The op
// takes those labels as ignored (-1) and sums; the mean is that sum divided
// by the 8 elements. Unfused, the one-hot is a tensor of its own: the same.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// ONEHOT-LABEL: func.func public @main(
// ONEHOT-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ONEHOT:       %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// ONEHOT:       %[[S:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -1 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
// ONEHOT:       %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// ONEHOT:       arith.divf %{{.*}}, %{{.*}} : f32
// ONEHOT:       return %[[L]] : tensor<f32>

// optax's integer labels and take_along_axis of log_softmax: the label's
// logit (or log-probability) is read by JAX's guarded gather, at the label
// wrapped into [0, C) when negative (t < 0 ? t + 10 : t), NaN when the
// wrapped label is still outside [0, 10). The wrap stays a generic before
// the op, the op reads its result collapsed to the labels' shape (its
// region expands it back); the guarded read is the op's own convention for
// a target outside [0, C) (NaN), and without an ignore mask the op's
// ignore_index is the lowest i64, which no i32 label equals. optax's mean
// divides by N, the op's mean (nothing ignored) too.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=mean '-DTY=tensor<f32>'
// The raised program on a GPU, where the label wrap that stays around the op is
// a kernel too (xent-host-compute-to-device), in the same stream as the
// fused loss; no host loop over the device buffers, no host allocation.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize --xent-gpu-pipeline=format=isa | FileCheck %s --check-prefix=GPU
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.linalg.mlir --xent-recognize --xent-gpu-pipeline=format=isa | FileCheck %s --check-prefix=GPU
// GPU-NOT:     llvm.call @malloc
// GPU:         gpu.launch_func <%[[S:.*]] : !llvm.ptr> @main_kernel{{(_[0-9]+)?}}::@main_kernel
// GPU-NOT:     llvm.call @malloc
// GPU:         gpu.launch_func <%[[S]] : !llvm.ptr> @xent_kernels::@xent_loss_0
// GPU-NOT:     llvm.call @malloc
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_sum.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=sum '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_none.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=none '-DTY=tensor<8xf32>'
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=mean '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=mean '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_sum.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=sum '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_none.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=none '-DTY=tensor<8xf32>'
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=mean '-DTY=tensor<f32>'
// GATHER-LABEL: func.func public @main(
// GATHER-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// GATHER-NOT:   xent.
// GATHER3:      %[[W:.*]] = linalg.generic
// GATHER3-NEXT:   ^bb0
// GATHER3-NEXT:     arith.addi
// GATHER3-NEXT:     arith.cmpi slt
// GATHER3-NEXT:     arith.select
// GATHER2:      arith.cmpi slt
// GATHER2:      arith.addi
// GATHER2:      %[[W:.*]] = linalg.generic
// GATHER2-NEXT:   ^bb0
// GATHER2-NEXT:     arith.select
// GATHER3:      %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1, 2]] : tensor<8x1x1xi32> into tensor<8xi32>
// GATHER2:      %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1]] : tensor<8x1xi32> into tensor<8xi32>
// GATHER-NEXT:  %[[L:.*]] = xent.cross_entropy [[RED]] %[[X]], %[[WC]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> [[TY]] decomposition {
// GATHER-NEXT:  ^bb0(%{{.*}}: tensor<8x10xf32>, %[[A:.*]]: tensor<8xi32>):
// GATHER-NEXT:    tensor.expand_shape %[[A]]
// GATHER:         0x7FC00000
// GATHER:         arith.maxsi
// GATHER:         arith.minsi
// GATHER:         tensor.extract
// GATHER:         xent.yield
// GATHER:       return %[[L]] : [[TY]]

// optax.smooth_labels, unfused: the smoothed one-hot 0.9 · one_hot + 0.01 is
// a tensor, which the op takes as probability targets (for a label outside
// [0, 10) the chain's row is 0.01 everywhere, and so is the op's target);
// fused into the reduction's body, the smoothed labels are no tensor the op
// could take, and with integer labels and label_smoothing the op would give
// such a label NaN (or 0, ignored) where the chain gives 0.01 · Σ -logp: left.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=SMOOTH
// SMOOTH-LABEL: func.func public @main(
// SMOOTH-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// SMOOTH:       arith.cmpi eq
// SMOOTH:       arith.uitofp
// SMOOTH:         arith.mulf
// SMOOTH:       %[[Q:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x10xf32>, tensor<8x10xf32>)
// SMOOTH-NEXT:  ^bb0
// SMOOTH-NEXT:    arith.addf
// SMOOTH:       %[[L:.*]] = xent.cross_entropy mean %[[X]], %[[Q]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32> decomposition {
// SMOOTH:       return %[[L]] : tensor<f32>
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=SMOOTHFUSED
// SMOOTHFUSED: remark: not raised: not a cross-entropy (the probabilities are computed inside the reduction, not a tensor value the op could take)

// t5x's z-loss on one-hot labels: for a label outside [0, C) the chain
// keeps the element's z · lse², which the op, ignoring it, would drop: not
// raised.
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=ZLOSS
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.linalg.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=ZLOSS
// ZLOSS: remark: not raised: not a cross-entropy (a one-hot pick with a z-loss: for a label outside [0, C) the chain keeps that term, which the op, ignoring the element, would not)

// take_along_axis with a float mask, (nll · mask).sum() / mask.sum(): the
// mask weighs each element by a float the op has no operand for (it weighs
// classes and ignores by target; even a 0/1 mask differs where the loss is
// NaN: 0 · NaN is NaN). Left whole, no piece of it raised.
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.fused.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=MASKED
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.linalg.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=MASKED
// MASKED: remark: not raised: not a cross-entropy (the per-element loss is multiplied by a float value of the element (a float mask or a weight per element), which the op cannot take: it weighs classes, and ignores elements by their target)

// LEFT-LABEL: func.func public @main(
// LEFT-NOT:   xent.
// LEFT:       return
