// RUN: xent-opt %S/Inputs/torch_fx.mlir --xent-recognize | FileCheck %s

// Form 2: PyTorch's own decompositions (FX / AOT autograd) lowered to
// linalg: bf16/f16 logits widened with arith.extf for the log-softmax and
// rounded back, amax, shifted - log(sum(exp(shifted))), the gather at a safe
// target select(t != ignore, t, 0), neg, the masked select, and the total
// weight as a count (extui/addi + sitofp) or as a sum of gathered class
// weights (weight.view(1, C) multiplied into the log-probabilities before
// the gather). The op takes the logits before widening.

// CHECK-LABEL: func.func @torch_fx_mean_bf16(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x32xbf16>, tensor<?xi64>) -> tensor<bf16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<bf16>

// CHECK-LABEL: func.func @torch_fx_sum_f16_weighted(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x16xf16>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>, %[[A2:[a-z0-9_]+]]: tensor<16xf16>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] weight %[[A2]] {ignore_index = -100 : i64} : (tensor<8x16xf16>, tensor<8xi64>, tensor<16xf16>) -> tensor<f16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f16>

// CHECK-LABEL: func.func @torch_fx_mean_weighted_f32(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>, %[[A2:[a-z0-9_]+]]: tensor<10xf32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] weight %[[A2]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_fx_none_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<?xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<?xf32>

// CHECK-LABEL: func.func @torch_fx_mean_ignore_valid_class(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = 3 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>
