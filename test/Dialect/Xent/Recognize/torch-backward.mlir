// RUN: xent-opt %S/Inputs/torch_backward.mlir --xent-recognize | FileCheck %s

// Form 6: the backward chain of torch-mlir: nll_loss_backward (one-hot of
// the target times -grad_output · w / total_weight, ignored rows zeroed)
// then log_softmax_backward (g - exp(logp) · Σ_c g), alone and beside its
// forward in a joint function (then both ops appear, each region with its
// own copy of the shared log-softmax). loss.backward() seeds grad_output
// with a constant 1.0, which becomes the op's grad_output operand. The
// backward that reads saved log-probabilities and a total_weight argument
// is no function of the logits and is left alone (saved-logp.mlir: what
// assume-normalized-log-probs raises).

// CHECK-LABEL: func.func @torch_bwd_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<f32>, %[[A1:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A2:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad mean %[[A0]], %[[A1]], %[[A2]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[D]] : tensor<8x10xf32>

// CHECK-LABEL: func.func @torch_bwd_weighted_sum_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<f32>, %[[A1:[a-z0-9_]+]]: tensor<?x10xf32>, %[[A2:[a-z0-9_]+]]: tensor<?xi64>, %[[A3:[a-z0-9_]+]]: tensor<10xf32>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad sum %[[A0]], %[[A1]], %[[A2]] weight %[[A3]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<?x10xf32>, tensor<?xi64>, tensor<10xf32>) -> tensor<?x10xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[D]] : tensor<?x10xf32>

// CHECK-LABEL: func.func @torch_bwd_none(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<6xf32>, %[[A1:[a-z0-9_]+]]: tensor<6x7xf32>, %[[A2:[a-z0-9_]+]]: tensor<6xi64>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad none %[[A0]], %[[A1]], %[[A2]] {ignore_index = -1 : i64} : (tensor<6xf32>, tensor<6x7xf32>, tensor<6xi64>) -> tensor<6x7xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: xent.yield
// CHECK: return %[[D]] : tensor<6x7xf32>

// CHECK-LABEL: func.func @torch_joint_mean_seed(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: %[[SEED:[a-z0-9_]+]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad mean %[[SEED]], %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]], %[[D]] : tensor<f32>, tensor<8x10xf32>

// CHECK-LABEL: func.func @torch_joint_weighted_mean_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<f32>, %[[A1:[a-z0-9_]+]]: tensor<?x12xf32>, %[[A2:[a-z0-9_]+]]: tensor<?xi64>, %[[A3:[a-z0-9_]+]]: tensor<12xf32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A1]], %[[A2]] weight %[[A3]] {ignore_index = -100 : i64} : (tensor<?x12xf32>, tensor<?xi64>, tensor<12xf32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad mean %[[A0]], %[[A1]], %[[A2]] weight %[[A3]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<?x12xf32>, tensor<?xi64>, tensor<12xf32>) -> tensor<?x12xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]], %[[D]] : tensor<f32>, tensor<?x12xf32>

// CHECK-LABEL: func.func @torch_joint_mean_bf16(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<bf16>, %[[A1:[a-z0-9_]+]]: tensor<8x32xbf16>, %[[A2:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A1]], %[[A2]] {ignore_index = -100 : i64} : (tensor<8x32xbf16>, tensor<8xi64>) -> tensor<bf16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad mean %[[A0]], %[[A1]], %[[A2]] {ignore_index = -100 : i64} : (tensor<bf16>, tensor<8x32xbf16>, tensor<8xi64>) -> tensor<8x32xbf16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]], %[[D]] : tensor<bf16>, tensor<8x32xbf16>

// CHECK-LABEL: func.func @torch_bwd_saved_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<f32>, %[[A1:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A2:[a-z0-9_]+]]: tensor<8xi64>, %[[A3:[a-z0-9_]+]]: tensor<f32>)
// CHECK-NOT: xent.
