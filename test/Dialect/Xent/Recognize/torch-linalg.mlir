// RUN: xent-opt %S/Inputs/torch_linalg.mlir --xent-recognize | FileCheck %s
// RUN: xent-opt %S/Inputs/torch_linalg_raw.mlir --xent-recognize | FileCheck %s --check-prefix=RAW

// Form 1: torch-mlir's TorchToLinalg lowering of F.cross_entropy, as the
// backend pipeline delivers it (Inputs/torch_linalg.mlir, after canonicalize
// + cse) and raw, as the conversion emits it (Inputs/torch_linalg_raw.mlir:
// tensor.dim of static sizes, tensor.cast, sub's alpha, cf.assert checks).
// The max is a 2-result generic (value + index) from -inf, -FLT_MAX or the
// f16 lowest; keepdim through tensor.expand_shape or a (d0, 0) map; the nll
// picks the log-probability with tensor.extract at index_cast(target),
// masks ignore_index with cmpi eq + select; the mean divides per element
// or the total by the kept count. Each function becomes one xent op whose
// region holds the original ops, and the function returns its result.

// CHECK-LABEL: func.func @torch_linalg_mean_static_f32(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_linalg_sum_dynamic_finite(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x?xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_linalg_none_static(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<6x7xf32>, %[[A1:[a-z0-9_]+]]: tensor<6xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[A1]] {ignore_index = -1 : i64} : (tensor<6x7xf32>, tensor<6xi64>) -> tensor<6xf32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<6xf32>

// CHECK-LABEL: func.func @torch_linalg_mean_bf16(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x32xbf16>, tensor<?xi64>) -> tensor<bf16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<bf16>

// CHECK-LABEL: func.func @torch_linalg_mean_f16_finite(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x16xf16>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x16xf16>, tensor<8xi64>) -> tensor<f16> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f16>

// CHECK-LABEL: func.func @torch_linalg_mean_unbatched(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<9xf32>, %[[A1:[a-z0-9_]+]]: tensor<i64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<9xf32>, tensor<i64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_linalg_weighted_mean(
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

// CHECK-LABEL: func.func @torch_linalg_weighted_sum_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x12xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>, %[[A2:[a-z0-9_]+]]: tensor<12xf32>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] weight %[[A2]] {ignore_index = -100 : i64} : (tensor<?x12xf32>, tensor<?xi64>, tensor<12xf32>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_linalg_decomposed_mean_dynamic(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: cf.assert
// CHECK: tensor.extract
// CHECK: arith.uitofp
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// CHECK-LABEL: func.func @torch_linalg_flattened_rank3(
// CHECK-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x?x32xf32>, %[[A1:[a-z0-9_]+]]: tensor<2x?xi64>)
// CHECK-DAG: %[[X:[a-z0-9_]+]] = tensor.collapse_shape %[[A0]] {{\[}}[0, 1], [2]] : tensor<2x?x32xf32> into tensor<?x32xf32>
// CHECK-DAG: %[[T:[a-z0-9_]+]] = tensor.collapse_shape %[[A1]] {{\[}}[0, 1]] : tensor<2x?xi64> into tensor<?xi64>
// CHECK: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[X]], %[[T]] {ignore_index = -100 : i64} : (tensor<?x32xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_mean_static_f32(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_sum_dynamic_finite(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x?xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy sum %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_none_static(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<6x7xf32>, %[[A1:[a-z0-9_]+]]: tensor<6xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy none %[[A0]], %[[A1]] {ignore_index = -1 : i64} : (tensor<6x7xf32>, tensor<6xi64>) -> tensor<6xf32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<6xf32>

// RAW-LABEL: func.func @torch_linalg_raw_mean_bf16(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x32xbf16>, tensor<?xi64>) -> tensor<bf16> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<bf16>

// RAW-LABEL: func.func @torch_linalg_raw_mean_f16_finite(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x16xf16>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<8x16xf16>, tensor<8xi64>) -> tensor<f16> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f16>

// RAW-LABEL: func.func @torch_linalg_raw_mean_unbatched(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<9xf32>, %[[A1:[a-z0-9_]+]]: tensor<i64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<9xf32>, tensor<i64>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_weighted_mean(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<8x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<8xi64>, %[[A2:[a-z0-9_]+]]: tensor<10xf32>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] weight %[[A2]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: cf.assert
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_decomposed_mean_dynamic(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<?x10xf32>, %[[A1:[a-z0-9_]+]]: tensor<?xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %[[A0]], %[[A1]] {ignore_index = -100 : i64} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: cf.assert
// RAW: tensor.extract
// RAW: arith.uitofp
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_flattened_rank3(
// RAW-SAME: %[[A0:[a-z0-9_]+]]: tensor<2x?x32xf32>, %[[A1:[a-z0-9_]+]]: tensor<2x?xi64>)
// RAW: %[[L:[a-z0-9_]+]] = xent.cross_entropy mean %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<?x32xf32>, tensor<?xi64>) -> tensor<f32> decomposition {
// RAW-NEXT: ^bb0(
// RAW: arith.maximumf
// RAW: math.exp
// RAW: math.log
// RAW: tensor.extract
// RAW: xent.yield
// RAW: return %[[L]] : tensor<f32>
