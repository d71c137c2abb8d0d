// The JAX corpus (utils/frontends: programs JAX itself exported to
// StableHLO, lowered by StableHLO's own stablehlo-legalize-to-linalg, then
// elementwise-fused; values.json holds JAX's numbers). What the recognizer
// raises today, and that it leaves the rest untouched; docs/recognition.md
// "Real frontend output" lists every program with why.

// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// ONEHOT-LABEL: func.func public @main(
// ONEHOT-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ONEHOT:       %[[L:.*]] = xent.cross_entropy mean %[[X]], %[[T]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32> decomposition
// ONEHOT:       return %[[L]] : tensor<f32>

// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ZLOSS
// ZLOSS-LABEL: func.func public @main(
// ZLOSS-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ZLOSS:       %[[L:.*]] = xent.cross_entropy mean %[[X]], %[[T]] {ignore_index = -9223372036854775808 : i64, z_loss_scale = 9.99999974E-5 : f32} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32> decomposition
// ZLOSS:       return %[[L]] : tensor<f32>

// Not raised yet (the gather's guards of take_along_axis, smoothing folded
// into the reduction, the unfused forms): the programs pass through
// unchanged.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=LEFT
// LEFT-LABEL: func.func public @main(
// LEFT-NOT:   xent.
// LEFT:       return
