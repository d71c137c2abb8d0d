// RUN: xent-opt %s --xent-recognize | FileCheck %s

// One row: unit dimensions carry no axis, so a per-element grad_output of
// shape [1] looks reduced; shaped like the per-element loss and not divided,
// it is the `none` gradient's (found by xent-fuzz-recognize; the loss of one
// row is the 0-d total, expanded back). Written by fuzz/ChainWriter.cpp
// (autograd's joint graph of F.cross_entropy(x, t, reduction='none')).

// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[G:.*]]: tensor<1xf32>, %[[X:.*]]: tensor<1x10xf32>, %[[T:.*]]: tensor<1xi64>)
// CHECK: %[[L:.*]] = xent.cross_entropy sum %[[X]], %[[T]] {ignore_index = -100 : i64} : (tensor<1x10xf32>, tensor<1xi64>) -> tensor<f32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[L]] [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[D:.*]] = xent.cross_entropy_grad none %[[G]], %[[X]], %[[T]] {ignore_index = -100 : i64} : (tensor<1xf32>, tensor<1x10xf32>, tensor<1xi64>) -> tensor<1x10xf32> decomposition {
// CHECK: return %[[E]], %[[D]] : tensor<1xf32>, tensor<1x10xf32>
func.func @chain(%g0: tensor<1xf32>, %x1: tensor<1x10xf32>, %t2: tensor<1xi64>) -> (tensor<1xf32>, tensor<1x10xf32>) {
  %c3 = arith.constant 0xFF800000 : f32
  %e4 = tensor.empty() : tensor<1xf32>
  %f5 = linalg.fill ins(%c3 : f32) outs(%e4 : tensor<1xf32>) -> tensor<1xf32>
  %g9 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x1 : tensor<1x10xf32>) outs(%f5 : tensor<1xf32>) {
  ^bb0(%a6: f32, %a7: f32):
    %b8 = arith.maximumf %a6, %a7 : f32
    linalg.yield %b8 : f32
  } -> tensor<1xf32>
  %e10 = tensor.empty() : tensor<1x10xf32>
  %g15 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x1, %g9 : tensor<1x10xf32>, tensor<1xf32>) outs(%e10 : tensor<1x10xf32>) {
  ^bb0(%a11: f32, %a12: f32, %a13: f32):
    %b14 = arith.subf %a11, %a12 : f32
    linalg.yield %b14 : f32
  } -> tensor<1x10xf32>
  %e16 = tensor.empty() : tensor<1x10xf32>
  %g20 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g15 : tensor<1x10xf32>) outs(%e16 : tensor<1x10xf32>) {
  ^bb0(%a17: f32, %a18: f32):
    %b19 = math.exp %a17 : f32
    linalg.yield %b19 : f32
  } -> tensor<1x10xf32>
  %c21 = arith.constant 0.000000e+00 : f32
  %e22 = tensor.empty() : tensor<1xf32>
  %f23 = linalg.fill ins(%c21 : f32) outs(%e22 : tensor<1xf32>) -> tensor<1xf32>
  %g27 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%g20 : tensor<1x10xf32>) outs(%f23 : tensor<1xf32>) {
  ^bb0(%a24: f32, %a25: f32):
    %b26 = arith.addf %a24, %a25 : f32
    linalg.yield %b26 : f32
  } -> tensor<1xf32>
  %e28 = tensor.empty() : tensor<1xf32>
  %g32 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g27 : tensor<1xf32>) outs(%e28 : tensor<1xf32>) {
  ^bb0(%a29: f32, %a30: f32):
    %b31 = math.log %a29 : f32
    linalg.yield %b31 : f32
  } -> tensor<1xf32>
  %e33 = tensor.empty() : tensor<1x10xf32>
  %g38 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g15, %g32 : tensor<1x10xf32>, tensor<1xf32>) outs(%e33 : tensor<1x10xf32>) {
  ^bb0(%a34: f32, %a35: f32, %a36: f32):
    %b37 = arith.subf %a34, %a35 : f32
    linalg.yield %b37 : f32
  } -> tensor<1x10xf32>
  %c39 = arith.constant -100 : i64
  %c40 = arith.constant 0.000000e+00 : f32
  %e41 = tensor.empty() : tensor<1xf32>
  %g50 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t2 : tensor<1xi64>) outs(%e41 : tensor<1xf32>) {
  ^bb0(%a42: i64, %a43: f32):
    %b44 = arith.index_cast %a42 : i64 to index
    %b45 = linalg.index 0 : index
    %b46 = tensor.extract %g38[%b45, %b44] : tensor<1x10xf32>
    %b47 = arith.negf %b46 : f32
    %b48 = arith.cmpi ne, %a42, %c39 : i64
    %b49 = arith.select %b48, %b47, %c40 : f32
    linalg.yield %b49 : f32
  } -> tensor<1xf32>
  %c51 = arith.constant 0xFF800000 : f32
  %e52 = tensor.empty() : tensor<1xf32>
  %f53 = linalg.fill ins(%c51 : f32) outs(%e52 : tensor<1xf32>) -> tensor<1xf32>
  %g57 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x1 : tensor<1x10xf32>) outs(%f53 : tensor<1xf32>) {
  ^bb0(%a54: f32, %a55: f32):
    %b56 = arith.maximumf %a54, %a55 : f32
    linalg.yield %b56 : f32
  } -> tensor<1xf32>
  %e58 = tensor.empty() : tensor<1x10xf32>
  %g63 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x1, %g57 : tensor<1x10xf32>, tensor<1xf32>) outs(%e58 : tensor<1x10xf32>) {
  ^bb0(%a59: f32, %a60: f32, %a61: f32):
    %b62 = arith.subf %a59, %a60 : f32
    linalg.yield %b62 : f32
  } -> tensor<1x10xf32>
  %e64 = tensor.empty() : tensor<1x10xf32>
  %g68 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g63 : tensor<1x10xf32>) outs(%e64 : tensor<1x10xf32>) {
  ^bb0(%a65: f32, %a66: f32):
    %b67 = math.exp %a65 : f32
    linalg.yield %b67 : f32
  } -> tensor<1x10xf32>
  %c69 = arith.constant 0.000000e+00 : f32
  %e70 = tensor.empty() : tensor<1xf32>
  %f71 = linalg.fill ins(%c69 : f32) outs(%e70 : tensor<1xf32>) -> tensor<1xf32>
  %g75 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%g68 : tensor<1x10xf32>) outs(%f71 : tensor<1xf32>) {
  ^bb0(%a72: f32, %a73: f32):
    %b74 = arith.addf %a72, %a73 : f32
    linalg.yield %b74 : f32
  } -> tensor<1xf32>
  %e76 = tensor.empty() : tensor<1xf32>
  %g80 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g75 : tensor<1xf32>) outs(%e76 : tensor<1xf32>) {
  ^bb0(%a77: f32, %a78: f32):
    %b79 = math.log %a77 : f32
    linalg.yield %b79 : f32
  } -> tensor<1xf32>
  %e81 = tensor.empty() : tensor<1x10xf32>
  %g86 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g63, %g80 : tensor<1x10xf32>, tensor<1xf32>) outs(%e81 : tensor<1x10xf32>) {
  ^bb0(%a82: f32, %a83: f32, %a84: f32):
    %b85 = arith.subf %a82, %a83 : f32
    linalg.yield %b85 : f32
  } -> tensor<1x10xf32>
  %c87 = arith.constant -100 : i64
  %i88 = arith.index_cast %c87 : i64 to index
  %c89 = arith.constant 0.000000e+00 : f32
  %e90 = tensor.empty() : tensor<1x10xf32>
  %g101 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g0, %t2 : tensor<1xf32>, tensor<1xi64>) outs(%e90 : tensor<1x10xf32>) {
  ^bb0(%a91: f32, %a92: i64, %a93: f32):
    %b94 = arith.negf %a91 : f32
    %b95 = arith.index_cast %a92 : i64 to index
    %b96 = linalg.index 1 : index
    %b97 = arith.cmpi ne, %b95, %b96 : index
    %b98 = arith.cmpi eq, %b95, %i88 : index
    %b99 = arith.ori %b97, %b98 : i1
    %b100 = arith.select %b99, %c89, %b94 : f32
    linalg.yield %b100 : f32
  } -> tensor<1x10xf32>
  %e102 = tensor.empty() : tensor<1x10xf32>
  %g106 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g86 : tensor<1x10xf32>) outs(%e102 : tensor<1x10xf32>) {
  ^bb0(%a103: f32, %a104: f32):
    %b105 = math.exp %a103 : f32
    linalg.yield %b105 : f32
  } -> tensor<1x10xf32>
  %c107 = arith.constant 0.000000e+00 : f32
  %e108 = tensor.empty() : tensor<1xf32>
  %f109 = linalg.fill ins(%c107 : f32) outs(%e108 : tensor<1xf32>) -> tensor<1xf32>
  %g113 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%g101 : tensor<1x10xf32>) outs(%f109 : tensor<1xf32>) {
  ^bb0(%a110: f32, %a111: f32):
    %b112 = arith.addf %a110, %a111 : f32
    linalg.yield %b112 : f32
  } -> tensor<1xf32>
  %e114 = tensor.empty() : tensor<1x10xf32>
  %g119 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g106, %g113 : tensor<1x10xf32>, tensor<1xf32>) outs(%e114 : tensor<1x10xf32>) {
  ^bb0(%a115: f32, %a116: f32, %a117: f32):
    %b118 = arith.mulf %a115, %a116 : f32
    linalg.yield %b118 : f32
  } -> tensor<1x10xf32>
  %e120 = tensor.empty() : tensor<1x10xf32>
  %g125 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g101, %g119 : tensor<1x10xf32>, tensor<1x10xf32>) outs(%e120 : tensor<1x10xf32>) {
  ^bb0(%a121: f32, %a122: f32, %a123: f32):
    %b124 = arith.subf %a121, %a122 : f32
    linalg.yield %b124 : f32
  } -> tensor<1x10xf32>
  return %g50, %g125 : tensor<1xf32>, tensor<1x10xf32>
}
