// RUN: xent-opt %S/Inputs/saved_logp.mlir --xent-recognize=assume-normalized-log-probs | FileCheck %s
// RUN: xent-opt %S/Inputs/saved_logp.mlir --xent-recognize 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %S/Inputs/saved_logp.mlir --xent-recognize | FileCheck %s --check-prefix=DEFAULT
// RUN: xent-opt %s -split-input-file -verify-diagnostics --xent-recognize | FileCheck %s --check-prefix=HAND

// The backward graph alone (aot_autograd's: it reads the forward's saved
// log-probabilities, not the logits). g - exp(logp) · Σ_c g after the nll
// backward is cross_entropy_grad applied to logp only when logp is
// normalized (softmax(logp) = exp(logp)). Nothing in these functions proves
// it: by default each is left with a remark saying why, and
// assume-normalized-log-probs raises it with logp as the logits operand.
// A mean dividing by a total_weight argument stays in both cases: the region
// cannot read it and the op computes the kept weight itself.

// CHECK-LABEL: func.func @saved_logp_mean(
// CHECK-NOT: xent.
// CHECK: return

// CHECK-LABEL: func.func @saved_logp_sum_dynamic(
// CHECK-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[LP:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad sum %[[G]], %[[LP]], %[[T]] {ignore_index = -100 : i64} : (tensor<f32>, tensor<?x10xf32>, tensor<?xi64>) -> tensor<?x10xf32> decomposition {
// CHECK: math.exp
// CHECK: xent.yield
// CHECK: return %[[D]] : tensor<?x10xf32>

// CHECK-LABEL: func.func @saved_logp_none(
// CHECK-SAME: %[[G:[a-z0-9_]+]]: tensor<6xf32>, %[[LP:[a-z0-9_]+]]: tensor<6x7xf32>, %[[T:[a-z0-9_]+]]: tensor<6xi64>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad none %[[G]], %[[LP]], %[[T]] {ignore_index = -1 : i64}
// CHECK: return %[[D]] : tensor<6x7xf32>

// CHECK-LABEL: func.func @saved_logp_mean_recomputed(
// CHECK-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[LP:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// CHECK: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad mean %[[G]], %[[LP]], %[[T]] {ignore_index = -100 : i64}
// CHECK: return %[[D]] : tensor<8x10xf32>

// (The remarks come in reverse program order; none for the mean by a
// total_weight argument, which is not a complete chain.)
// REMARK: remark: not raised: the log-softmax backward exponentiates argument #1, which nothing in the function proves to be normalized log-probabilities (the gradient is cross_entropy_grad of them only if their log-sum-exp is 0); assume-normalized-log-probs raises it
// REMARK: remark: not raised: the log-softmax backward exponentiates argument #1
// REMARK: remark: not raised: the log-softmax backward exponentiates argument #1
// REMARK-NOT: remark

// DEFAULT-NOT: xent.

// -----

// The bare argument, by hand: a sum-reduced nll backward (no ignore mask)
// and the log-softmax backward on %logp.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
// HAND-LABEL: func.func @saved_argument(
// HAND-NOT: xent.
// HAND: return
func.func @saved_argument(%g: tensor<f32>, %logp: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %gn = linalg.generic {indexing_maps = [#scalar, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %t : tensor<f32>, tensor<4xi64>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%gi: f32, %ti: i64, %o: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %ti, %ci : i64
    %ng = arith.negf %gi : f32
    %r = arith.select %eq, %ng, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%gn : tensor<4x5xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  // expected-remark @+1 {{not raised: the log-softmax backward exponentiates argument #1, which nothing in the function proves to be normalized log-probabilities}}
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%gn, %logp, %s : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %lp: f32, %sm: f32, %o: f32):
    %ex = math.exp %lp : f32
    %m = arith.mulf %ex, %sm : f32
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  return %dx : tensor<4x5xf32>
}

// -----

// The same backward with the log-softmax in the function: %logp is proven
// normalized, and the gradient is raised with respect to the logits %x.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
// HAND-LABEL: func.func @proven_normalized(
// HAND-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[X:[a-z0-9_]+]]: tensor<4x5xf32>, %[[T:[a-z0-9_]+]]: tensor<4xi64>)
// HAND: %[[D:[a-z0-9_]+]] = xent.cross_entropy_grad sum %[[G]], %[[X]], %[[T]] {ignore_index = -9223372036854775808 : i64}
// HAND: return %[[D]] : tensor<4x5xf32>
func.func @proven_normalized(%g: tensor<f32>, %x: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x5xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %se = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x5xf32>, tensor<4xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %mi: f32, %acc: f32):
    %d = arith.subf %a, %mi : f32
    %ex = math.exp %d : f32
    %r = arith.addf %ex, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %logp = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %se : tensor<4x5xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %mi: f32, %si: f32, %o: f32):
    %d = arith.subf %a, %mi : f32
    %l = math.log %si : f32
    %r = arith.subf %d, %l : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  %gn = linalg.generic {indexing_maps = [#scalar, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %t : tensor<f32>, tensor<4xi64>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%gi: f32, %ti: i64, %o: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %ti, %ci : i64
    %ng = arith.negf %gi : f32
    %r = arith.select %eq, %ng, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%gn : tensor<4x5xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %dx = linalg.generic {indexing_maps = [#id, #id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%gn, %logp, %s : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %lp: f32, %sm: f32, %o: f32):
    %ex = math.exp %lp : f32
    %mm = arith.mulf %ex, %sm : f32
    %r = arith.subf %a, %mm : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  return %dx : tensor<4x5xf32>
}
