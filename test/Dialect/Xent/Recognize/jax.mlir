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
// The labels outside [0, 10) as -1, the op's ignore index.
// CHECK: %[[C:.*]] = arith.constant 10 : i32
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<8xi32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[GE:.*]] = arith.cmpi sge, %[[IN]], %{{.*}} : i32
// CHECK-NEXT: %[[LT:.*]] = arith.cmpi slt, %[[IN]], %[[C]] : i32
// CHECK-NEXT: %[[OK:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[OK]], %[[IN]], %{{.*}} : i32
// CHECK-NEXT: linalg.yield %[[SEL]] : i32
// The mean over all 8 elements (out-of-range ones included, as one_hot's
// zero rows are): the op's f32 sum divided by 8; no decomposition region
// (the chain computes the mean, not the op's sum).
// CHECK: %[[S:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[T]] {ignore_index = -1 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
// CHECK-NOT: decomposition
// CHECK: %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%[[S]] : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[Q:.*]] = arith.divf %[[IN]], %[[N]] : f32
// CHECK-NEXT: linalg.yield %[[Q]] : f32
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_mean_rank2_bf16(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x6x16xbf16>, %[[A1:[a-z0-9_]+]]: tensor<2x6xi32>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<2x6xi32>)
// CHECK: %[[S:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[T]] {axis = 2 : i64, ignore_index = -1 : i64} : (tensor<2x6x16xbf16>, tensor<2x6xi32>) -> tensor<f32>
// CHECK: %[[N:.*]] = arith.constant 1.200000e+01 : f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @jax_sum_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x12xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi32>)
// A sum: the op on the mapped labels, whose region is the chain (on them
// it computes what it does on the labels).
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<?xi32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[T]] {ignore_index = -1 : i64} : (tensor<?x12xf32>, tensor<?xi32>) -> tensor<f32> decomposition {
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
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[A1]] : tensor<?x?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[T]] {axis = 2 : i64, ignore_index = -1 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi64>) -> tensor<?x?xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<?x?xf32>
