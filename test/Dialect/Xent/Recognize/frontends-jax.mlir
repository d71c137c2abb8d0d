// The JAX corpus (utils/frontends: programs JAX itself exported to
// StableHLO, lowered by StableHLO's own stablehlo-legalize-to-linalg, then
// elementwise-fused; values.json holds JAX's numbers). What the recognizer
// raises today, and that it leaves the rest untouched; docs/recognition.md
// "Real frontend output" lists every program with why.

// One-hot labels: jax.nn.one_hot gives a label outside [0, 10) an all-zero
// row, so that element's loss is 0 and the mean still counts it. The op
// takes those labels as ignored (-1) and sums; the mean is that sum divided
// by the 8 elements.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// ONEHOT-LABEL: func.func public @main(
// ONEHOT-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ONEHOT:       %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// ONEHOT:       %[[S:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -1 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
// ONEHOT:       %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// ONEHOT:       arith.divf %{{.*}}, %{{.*}} : f32
// ONEHOT:       return %[[L]] : tensor<f32>

// t5x's z-loss on one-hot labels: for a label outside [0, C) the chain
// keeps the element's z · lse², which the op, ignoring it, would drop: not
// raised.
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=ZLOSS
// ZLOSS: remark: not raised: not a cross-entropy (a one-hot pick with a z-loss: for a label outside [0, C) the chain keeps that term, which the op, ignoring the element, would not)

// Not raised yet (the gather's guards of take_along_axis, smoothing folded
// into the reduction, the unfused forms): the programs pass through
// unchanged.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// LEFT-LABEL: func.func public @main(
// LEFT-NOT:   xent.
// LEFT:       return
