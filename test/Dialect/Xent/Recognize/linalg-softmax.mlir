// RUN: xent-opt %S/Inputs/linalg_softmax.mlir --xent-recognize | FileCheck %s

// Form 3: upstream linalg. linalg.softmax kept and followed by math.log;
// its decompositions by the stock mlir-opt 22 (maxnumf from NaN, exp(x - max)
// in one generic) and 19 (maxnumf from -FLT_MAX); the named-op form
// (linalg.reduce with maxnumf from +1.4e-45, linalg.broadcast, sub/exp/div
// written into the broadcast buffer, linalg.log); rank 3 with the class
// axis in the middle. A chain without an ignore mask gets the lowest i64 as
// ignore_index (no class index equals it).

// CHECK-LABEL: func.func @linalg_softmax_log_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: linalg.softmax
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @linalg_softmax_llvm22_sum_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -9223372036854775808 : i64} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @linalg_softmax_llvm19_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @linalg_named_mean(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: linalg.reduce
// CHECK: arith.maxnumf
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @linalg_softmax_rank3_axis1_none(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x5x6xf32>, %[[A1:[a-z0-9_]+]]: tensor<2x6xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<2x5x6xf32>, tensor<2x6xi64>) -> tensor<2x6xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: linalg.softmax
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<2x6xf32>
