// RUN: xent-opt %s --xent-recognize --split-input-file | FileCheck %s

// What xent-recognize tolerates, on small hand-written chains: named linalg
// ops and arith/math on tensors instead of linalg.generic, widening casts,
// odd max inits, maxnumf, commuted operands, log(abs(sum)), the class axis
// in the middle, other users of intermediate values, a softcap in named ops.

// Named ops and arith/math on tensors; f16 logits widened at the tensor
// level (the op takes the f16 logits); a max starting from the f16 lowest
// value with maxnumf; the pick, mask and sum in one generic, the mean as a
// division of the total by the kept count.

// CHECK-LABEL: func.func @named_ops_mean_f16
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf16>, %[[T:.*]]: tensor<4xi64>)
// CHECK: %[[L:.*]] = xent.cross_entropy mean %[[X]], %[[T]] {ignore_index = -100 : i64} : (tensor<4x10xf16>, tensor<4xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x10xf16>, %[[B:.*]]: tensor<4xi64>):
// CHECK: arith.extf %[[A]] : tensor<4x10xf16> to tensor<4x10xf32>
// CHECK: linalg.reduce
// CHECK: arith.maxnumf
// CHECK: linalg.broadcast
// CHECK: math.exp
// CHECK: math.log
// CHECK: tensor.extract
// CHECK: arith.divf
// CHECK: xent.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[L]] : tensor<f32>
#id1 = affine_map<(d0) -> (d0)>
#scalar1 = affine_map<(d0) -> ()>
func.func @named_ops_mean_f16(%x: tensor<4x10xf16>, %t: tensor<4xi64>) -> tensor<f32> {
  %xf = arith.extf %x : tensor<4x10xf16> to tensor<4x10xf32>
  %lowest = arith.constant -6.550400e+04 : f32
  %zero = arith.constant 0.0 : f32
  %ignore = arith.constant -100 : i64
  %e4 = tensor.empty() : tensor<4xf32>
  %minit = linalg.fill ins(%lowest : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%xf : tensor<4x10xf32>) outs(%minit : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maxnumf %acc, %in : f32
      linalg.yield %r : f32
    }
  %e = tensor.empty() : tensor<4x10xf32>
  %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e : tensor<4x10xf32>) dimensions = [1]
  %sh = arith.subf %xf, %mb : tensor<4x10xf32>
  %ex = math.exp %sh : tensor<4x10xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce ins(%ex : tensor<4x10xf32>) outs(%sinit : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %ls = math.log %s : tensor<4xf32>
  %lsb = linalg.broadcast ins(%ls : tensor<4xf32>) outs(%e : tensor<4x10xf32>) dimensions = [1]
  %logp = arith.subf %sh, %lsb : tensor<4x10xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %total, %count = linalg.generic {indexing_maps = [#id1, #scalar1, #scalar1], iterator_types = ["reduction"]}
      ins(%t : tensor<4xi64>) outs(%init, %init : tensor<f32>, tensor<f32>) {
  ^bb0(%ti: i64, %acc: f32, %cnt: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %kept = arith.cmpi ne, %ti, %ignore : i64
    %lp = tensor.extract %logp[%i, %c] : tensor<4x10xf32>
    %nll = arith.negf %lp : f32
    %v = arith.select %kept, %nll, %zero : f32
    %one = arith.uitofp %kept : i1 to f32
    %a = arith.addf %acc, %v : f32
    %n = arith.addf %cnt, %one : f32
    linalg.yield %a, %n : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %mean = arith.divf %total, %count : tensor<f32>
  return %mean : tensor<f32>
}

// -----

// JAX style with every commutative operand swapped: lse = log(abs(sum)) +
// max, one-hot as label == iota, logp * one-hot, the mean as a
// multiplication by 1/N; i32 labels; no ignore mask. A one-hot pick: the
// labels outside [0, 5) become -1, the op's ignore index, and the mean over
// all 6 elements the op's sum divided by 6.

// CHECK-LABEL: func.func @commuted_jax_mean
// CHECK-SAME: (%[[X:.*]]: tensor<6x5xf32>, %[[T:.*]]: tensor<6xi32>)
// CHECK: %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<6xi32>)
// CHECK: %[[S:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -1 : i64} : (tensor<6x5xf32>, tensor<6xi32>) -> tensor<f32>
// CHECK: %[[N:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: return %[[L]] : tensor<f32>
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#cls = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @commuted_jax_mean(%x: tensor<6x5xf32>, %t: tensor<6xi32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.166666672 : f32
  %e6 = tensor.empty() : tensor<6xf32>
  %e = tensor.empty() : tensor<6x5xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e6 : tensor<6xf32>) -> tensor<6xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<6x5xf32>) outs(%minit : tensor<6xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e6 : tensor<6xf32>) -> tensor<6xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<6x5xf32>, tensor<6xf32>) outs(%sinit : tensor<6xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %ex = math.exp %d : f32
    %r = arith.addf %ex, %acc : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %lse = linalg.generic {indexing_maps = [#vec, #vec, #vec], iterator_types = ["parallel"]}
      ins(%s, %m : tensor<6xf32>, tensor<6xf32>) outs(%e6 : tensor<6xf32>) {
  ^bb0(%sum: f32, %mx: f32, %o: f32):
    %a = math.absf %sum : f32
    %l = math.log %a : f32
    %r = arith.addf %mx, %l : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %picked = linalg.generic {indexing_maps = [#map, #row, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %lse, %t : tensor<6x5xf32>, tensor<6xf32>, tensor<6xi32>) outs(%sinit : tensor<6xf32>) {
  ^bb0(%in: f32, %l: f32, %label: i32, %acc: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i32
    %hot = arith.cmpi eq, %label, %ci : i32
    %hf = arith.uitofp %hot : i1 to f32
    %lp = arith.subf %in, %l : f32
    %p = arith.mulf %lp, %hf : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %tinit = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %total = linalg.generic {indexing_maps = [#vec, #sc], iterator_types = ["reduction"]}
      ins(%picked : tensor<6xf32>) outs(%tinit : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %scale = arith.constant dense<0.166666672> : tensor<f32>
  %scaled = arith.mulf %scale, %total : tensor<f32>
  %neg = arith.negf %scaled : tensor<f32>
  return %neg : tensor<f32>
}

// -----

// The class axis in the middle of rank-3 logits (N, C, L); linalg.softmax
// followed by math.log; per-element losses; the log-probabilities have
// another user, which keeps them.

// CHECK-LABEL: func.func @softmax_axis1_none_other_user
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x3xf32>, %[[T:.*]]: tensor<2x3xi64>)
// CHECK: %[[SM:.*]] = linalg.softmax dimension(1) ins(%[[X]]
// CHECK: %[[LOGP:.*]] = math.log %[[SM]]
// CHECK: %[[L:.*]] = xent.cross_entropy none %[[X]], %[[T]] {ignore_index = 7 : i64} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32> decomposition {
// CHECK: linalg.softmax dimension(1)
// CHECK: xent.yield
// CHECK: return %[[L]], %[[LOGP]] : tensor<2x3xf32>, tensor<2x5x3xf32>
#m3 = affine_map<(d0, d1) -> (d0, d1)>
func.func @softmax_axis1_none_other_user(%x: tensor<2x5x3xf32>, %t: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x5x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %ignore = arith.constant 7 : i64
  %e = tensor.empty() : tensor<2x5x3xf32>
  %sm = linalg.softmax dimension(1) ins(%x : tensor<2x5x3xf32>) outs(%e : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %logp = math.log %sm : tensor<2x5x3xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %nll = linalg.generic {indexing_maps = [#m3, #m3], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<2x3xi64>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%ti: i64, %o: f32):
    %n = linalg.index 0 : index
    %l = linalg.index 1 : index
    %eq = arith.cmpi eq, %ti, %ignore : i64
    %zi = arith.constant 0 : i64
    %safe = arith.select %eq, %zi, %ti : i64
    %c = arith.index_cast %safe : i64 to index
    %lp = tensor.extract %logp[%n, %c, %l] : tensor<2x5x3xf32>
    %neg = arith.negf %lp : f32
    %v = arith.select %eq, %zero, %neg : f32
    linalg.yield %v : f32
  } -> tensor<2x3xf32>
  return %nll, %logp : tensor<2x3xf32>, tensor<2x5x3xf32>
}

// -----

// The softcap with linalg named ops and math on tensors: linalg.div by a
// filled tensor, math.tanh, linalg.mul with the cap first; the op takes the
// uncapped logits with softcap = 30.

// CHECK-LABEL: func.func @named_ops_softcap_sum
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>, %[[T:.*]]: tensor<4xi64>)
// CHECK: %[[L:.*]] = xent.cross_entropy sum %[[X]], %[[T]] {ignore_index = -100 : i64, softcap = 3.000000e+01 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x10xf32>, %[[B:.*]]: tensor<4xi64>):
// CHECK: linalg.div ins(%[[A]],
// CHECK: math.tanh
// CHECK: linalg.mul
// CHECK: xent.yield
// CHECK: return %[[L]] : tensor<f32>
#id1 = affine_map<(d0) -> (d0)>
#scalar1 = affine_map<(d0) -> ()>
func.func @named_ops_softcap_sum(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %capv = arith.constant 30.0 : f32
  %ignore = arith.constant -100 : i64
  %e = tensor.empty() : tensor<4x10xf32>
  %cap = linalg.fill ins(%capv : f32) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %d = linalg.div ins(%x, %cap : tensor<4x10xf32>, tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %th = math.tanh %d : tensor<4x10xf32>
  %xc = linalg.mul ins(%cap, %th : tensor<4x10xf32>, tensor<4x10xf32>) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%xc : tensor<4x10xf32>) outs(%minit : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %acc, %in : f32
      linalg.yield %r : f32
    }
  %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e : tensor<4x10xf32>) dimensions = [1]
  %sh = arith.subf %xc, %mb : tensor<4x10xf32>
  %ex = math.exp %sh : tensor<4x10xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce ins(%ex : tensor<4x10xf32>) outs(%sinit : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %ls = math.log %s : tensor<4xf32>
  %lsb = linalg.broadcast ins(%ls : tensor<4xf32>) outs(%e : tensor<4x10xf32>) dimensions = [1]
  %logp = arith.subf %sh, %lsb : tensor<4x10xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %total = linalg.generic {indexing_maps = [#id1, #scalar1], iterator_types = ["reduction"]}
      ins(%t : tensor<4xi64>) outs(%init : tensor<f32>) {
  ^bb0(%ti: i64, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %kept = arith.cmpi ne, %ti, %ignore : i64
    %lp = tensor.extract %logp[%i, %c] : tensor<4x10xf32>
    %nll = arith.negf %lp : f32
    %v = arith.select %kept, %nll, %zero : f32
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %total : tensor<f32>
}
