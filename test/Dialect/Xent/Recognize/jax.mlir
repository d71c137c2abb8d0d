// RUN: xent-opt %S/Inputs/jax.mlir --xent-recognize | FileCheck %s

// Form 5: JAX (optax) through stablehlo -> linalg: logsumexp as
// select(isfinite(max), max, 0) + log(abs(sum(exp(x - max)))), logp = x - lse
// (operands in either order); one-hot by comparing an iota with the label,
// multiply and reduce; the mean as a division by the constant N; negation;
// i32 or i64 labels, bf16 logits widened, the class axis last of rank 3;
// and probability targets (optax.softmax_cross_entropy), which the op takes
// as float targets without ignore_index.

// CHECK-LABEL: func.func @jax_mean_rank1(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.absf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_mean_rank2_bf16(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x6x16xbf16>, %[[A1:[a-z0-9_]+]]: tensor<2x6xi32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {axis = 2 : i64, ignore_index = -9223372036854775808 : i64} : (tensor<2x6x16xbf16>, tensor<2x6xi32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_sum_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x12xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -9223372036854775808 : i64} : (tensor<?x12xf32>, tensor<?xi32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.absf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_probs_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8x10xf32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_none_rank2_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x?x8xf32>, %[[A1:[a-z0-9_]+]]: tensor<?x?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[A1]] {axis = 2 : i64, ignore_index = -9223372036854775808 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi64>) -> tensor<?x?xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<?x?xf32>
