// The loss of a PyTorch model as torch-mlir's TorchToLinalg hands it over:
// F.cross_entropy(x, t) (mean, ignore_index -100) over 8 rows of 10 classes,
// log_softmax decomposed into max / sub / exp / sum / log / sub and nll_loss
// lowered to an extract of logp[i, t[i]], the ignore mask and a mean. (From
// test/Dialect/Xent/Recognize/Inputs/torch_linalg.mlir.)
//
// The chain is raised to one xent.cross_entropy:
// RAISED-LABEL: func.func @loss(
// RAISED: xent.cross_entropy mean %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32> decomposition
// RAISED: xent.yield
// RAISED-NOT: linalg.generic
// RAISED: return
//
// and lowered by xent's CPU pipeline to the LLVM dialect, with a C entry point:
// LOWERED-NOT: xent.
// LOWERED: llvm.func @loss(
// LOWERED-NOT: xent.
// LOWERED: llvm.func @_mlir_ciface_loss(
// LOWERED-NOT: xent.
//
// or, with --gpu-mode, by convert-xent-to-gpu, which reports each op's path:
// the fused kernels (auto), or the decomposition (inline).
// GPU-AUTO: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=loss | Kernels="xent_prologue_0, xent_loss_0", Reason="mode=auto, and the kernels take this op"
// GPU-AUTO: xent.launch
// GPU-AUTO: gpu.module @xent_kernels
// GPU-INLINE: remark: [Missed] decomposition | Category:convert-xent-to-gpu | Function=loss | Reason=mode=inline
// GPU-INLINE-NOT: xent.
// GPU-INLINE-NOT: gpu.module

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0) -> (d0)>
#map4 = affine_map<(d0) -> ()>
#map5 = affine_map<(d0) -> (0)>
#map6 = affine_map<() -> ()>
#map7 = affine_map<(d0, d1) -> (0, d1)>
func.func @loss(%arg0: tensor<8x10xf32>, %arg1: tensor<8xi64>) -> tensor<f32> attributes {llvm.emit_c_interface} {
  %c-100 = arith.constant -100 : index
  %c0_i32 = arith.constant 0 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 0xFF800000 : f32
  %c0_i64 = arith.constant 0 : i64
  %0 = tensor.empty() : tensor<8xi64>
  %1 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<8xi64>) -> tensor<8xi64>
  %2 = tensor.empty() : tensor<8xf32>
  %3 = linalg.fill ins(%cst_0 : f32) outs(%2 : tensor<8xf32>) -> tensor<8xf32>
  %4:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x10xf32>) outs(%3, %1 : tensor<8xf32>, tensor<8xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %21 = linalg.index 1 : index
    %22 = arith.index_cast %21 : index to i64
    %23 = arith.maximumf %in, %out : f32
    %24 = arith.cmpf ogt, %in, %out : f32
    %25 = arith.select %24, %22, %out_1 : i64
    linalg.yield %23, %25 : f32, i64
  } -> (tensor<8xf32>, tensor<8xi64>)
  %expanded = tensor.expand_shape %4#0 [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
  %5 = tensor.empty() : tensor<8x10xf32>
  %6 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded : tensor<8x10xf32>, tensor<8x1xf32>) outs(%5 : tensor<8x10xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %21 = arith.subf %in, %in_1 : f32
    linalg.yield %21 : f32
  } -> tensor<8x10xf32>
  %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<8x10xf32>) outs(%5 : tensor<8x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %21 = math.exp %in : f32
    linalg.yield %21 : f32
  } -> tensor<8x10xf32>
  %8 = tensor.empty() : tensor<8x1xf32>
  %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %10 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%7 : tensor<8x10xf32>) outs(%9 : tensor<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %21 = arith.addf %in, %out : f32
    linalg.yield %21 : f32
  } -> tensor<8x1xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<8x1xf32>) outs(%8 : tensor<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %21 = math.log %in : f32
    linalg.yield %21 : f32
  } -> tensor<8x1xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%6, %11 : tensor<8x10xf32>, tensor<8x1xf32>) outs(%5 : tensor<8x10xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %21 = arith.subf %in, %in_1 : f32
    linalg.yield %21 : f32
  } -> tensor<8x10xf32>
  %13 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel"]} ins(%arg1 : tensor<8xi64>) outs(%2 : tensor<8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %21 = arith.index_cast %in : i64 to index
    %22 = arith.cmpi eq, %21, %c-100 : index
    %23 = linalg.index 0 : index
    %extracted_1 = tensor.extract %12[%23, %21] : tensor<8x10xf32>
    %24 = arith.negf %extracted_1 : f32
    %25 = arith.select %22, %cst, %24 : f32
    linalg.yield %25 : f32
  } -> tensor<8xf32>
  %14 = tensor.empty() : tensor<i32>
  %15 = linalg.fill ins(%c0_i32 : i32) outs(%14 : tensor<i32>) -> tensor<i32>
  %16 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["reduction"]} ins(%arg1 : tensor<8xi64>) outs(%15 : tensor<i32>) {
  ^bb0(%in: i64, %out: i32):
    %21 = arith.index_cast %in : i64 to index
    %22 = arith.cmpi ne, %21, %c-100 : index
    %23 = arith.extui %22 : i1 to i32
    %24 = arith.addi %out, %23 : i32
    linalg.yield %24 : i32
  } -> tensor<i32>
  %extracted = tensor.extract %16[] : tensor<i32>
  %17 = arith.sitofp %extracted : i32 to f32
  %18 = tensor.empty() : tensor<f32>
  %19 = linalg.fill ins(%cst : f32) outs(%18 : tensor<f32>) -> tensor<f32>
  %20 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["reduction"]} ins(%13 : tensor<8xf32>) outs(%19 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %21 = arith.divf %in, %17 : f32
    %22 = arith.addf %21, %out : f32
    linalg.yield %22 : f32
  } -> tensor<f32>
  return %20 : tensor<f32>
}
