// What stays beside the raised op (docs/recognition.md, "Values built
// beside the op"): factors of the element's loss the op has no operand for,
// and a one-hot chain's z-loss of labels outside [0, C). Fused by hand as
// after --linalg-fuse-elementwise-ops; python/tests/test_recognize_beside.py
// runs each function on the CPU as written, through the raised program and
// through the op's own decomposition, and compares the numbers.
// RUN: xent-opt %s -split-input-file --xent-recognize | FileCheck %s
// RUN: xent-opt %s -split-input-file --xent-recognize=report-failures 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

#xc = affine_map<(d0, d1) -> (d0, d1)>
#xr = affine_map<(d0, d1) -> (d0)>
#r = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

// The loss of each row times a float of the row: the op's per-row loss,
// multiplied after it.
// CHECK-LABEL: func.func @scaled_none(
// CHECK-SAME:  %[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<8xf32>)
// CHECK:       %[[L:.*]] = xent.cross_entropy none %[[X]], %[[T]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>{{$}}
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[L]], %[[W]] : tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:  ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:    linalg.yield %[[P]] : f32
// CHECK:       return %[[R]] : tensor<8xf32>
func.func @scaled_none(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#xc, #xr], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x10xf32>) outs(%mi : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %v = arith.maximumf %acc, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#xc, #xr, #xr], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<8x10xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%a: f32, %mm: f32, %acc: f32):
    %d = arith.subf %a, %mm : f32
    %ex = math.exp %d : f32
    %v = arith.addf %acc, %ex : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %l = linalg.generic {indexing_maps = [#r, #r, #r, #r, #r], iterator_types = ["parallel"]} ins(%t, %m, %s, %w : tensor<8xi64>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%ti: i64, %mr: f32, %sr: f32, %wi: f32, %o: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %xt = tensor.extract %x[%i, %c] : tensor<8x10xf32>
    %ls = math.log %sr : f32
    %a = arith.subf %xt, %mr : f32
    %lp = arith.subf %a, %ls : f32
    %nl = arith.negf %lp : f32
    %v = arith.mulf %nl, %wi : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// -----

#xc = affine_map<(d0, d1) -> (d0, d1)>
#xr = affine_map<(d0, d1) -> (d0)>
#r = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>

// Ignored targets, a float weight per row, the total divided by the
// constant N: the op's per-row loss (ignore_index), weighed, summed and
// scaled by 1/8 after it.
// CHECK-LABEL: func.func @scaled_ignored_mean_by_n(
// CHECK-SAME:  %[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<8xf32>)
// CHECK:       %[[L:.*]] = xent.cross_entropy none %[[X]], %[[T]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>{{$}}
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[L]], %[[W]] : tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:  ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:    %[[K:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:    %[[Q:.*]] = arith.mulf %[[P]], %[[K]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[ACC]], %[[Q]] : f32
// CHECK:       return %[[R]] : tensor<f32>
func.func @scaled_ignored_mean_by_n(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f32
  %ig = arith.constant -100 : i64
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#xc, #xr], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x10xf32>) outs(%mi : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %v = arith.maximumf %acc, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#xc, #xr, #xr], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<8x10xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%a: f32, %mm: f32, %acc: f32):
    %d = arith.subf %a, %mm : f32
    %ex = math.exp %d : f32
    %v = arith.addf %acc, %ex : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %tot = linalg.generic {indexing_maps = [#r, #r, #r, #r, #s], iterator_types = ["reduction"]} ins(%t, %m, %s, %w : tensor<8xi64>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%ti: i64, %mr: f32, %sr: f32, %wi: f32, %acc: f32):
    %i = linalg.index 0 : index
    %keep = arith.cmpi ne, %ti, %ig : i64
    %safe = arith.select %keep, %ti, %c0 : i64
    %c = arith.index_cast %safe : i64 to index
    %xt = tensor.extract %x[%i, %c] : tensor<8x10xf32>
    %ls = math.log %sr : f32
    %a = arith.subf %xt, %mr : f32
    %lp = arith.subf %a, %ls : f32
    %nl = arith.negf %lp : f32
    %kept = arith.select %keep, %nl, %zero : f32
    %v = arith.mulf %kept, %wi : f32
    %sum = arith.addf %acc, %v : f32
    linalg.yield %sum : f32
  } -> tensor<f32>
  %mean = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%tot : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  return %mean : tensor<f32>
}

// -----

#xc = affine_map<(d0, d1) -> (d0, d1)>
#xr = affine_map<(d0, d1) -> (d0)>
#r = affine_map<(d0) -> (d0)>

// A factor the view cannot rebuild exactly (a max: maximumf, maxnumf and
// maxsi are one node): left whole, saying why.
// CHECK-LABEL: func.func @scaled_by_a_max(
// CHECK-NOT:   xent.
// CHECK:       return
// REMARK: remark: not raised: not a cross-entropy (the per-element loss is multiplied by a float value of the element that cannot be rebuilt after the op: it takes a max or a min, whose NaN convention the view does not keep)
func.func @scaled_by_a_max(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#xc, #xr], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x10xf32>) outs(%mi : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %v = arith.maximumf %acc, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#xc, #xr, #xr], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<8x10xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%a: f32, %mm: f32, %acc: f32):
    %d = arith.subf %a, %mm : f32
    %ex = math.exp %d : f32
    %v = arith.addf %acc, %ex : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %l = linalg.generic {indexing_maps = [#r, #r, #r, #r, #r], iterator_types = ["parallel"]} ins(%t, %m, %s, %w : tensor<8xi64>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%ti: i64, %mr: f32, %sr: f32, %wi: f32, %o: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %xt = tensor.extract %x[%i, %c] : tensor<8x10xf32>
    %ls = math.log %sr : f32
    %a = arith.subf %xt, %mr : f32
    %lp = arith.subf %a, %ls : f32
    %nl = arith.negf %lp : f32
    %pos = arith.maximumf %wi, %zero : f32
    %v = arith.mulf %nl, %pos : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %l : tensor<8xf32>
}

// -----

#xc = affine_map<(d0, d1) -> (d0, d1)>
#xr = affine_map<(d0, d1) -> (d0)>
#r = affine_map<(d0) -> (d0)>

// One-hot labels with an ignore mask and a z-loss, per row (t5x's loss
// with a padding label): for a label outside [0, 10) other than -100 the
// chain keeps z · lse², added after the op from its lse; -100 is ignored
// by both.
// CHECK-LABEL: func.func @one_hot_z_loss_none(
// CHECK-SAME:  %[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8xi64>)
// CHECK:       %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// CHECK:       %[[L:.*]], %[[LSE:.*]] = xent.cross_entropy none %[[X]], %[[TR]] {ignore_index = -100 : i64, return_lse, z_loss_scale = 1.000000e-03 : f32} : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[LSE]], %[[T]], %[[L]] : tensor<8xf32>, tensor<8xi64>, tensor<8xf32>)
// CHECK-NEXT:  ^bb0(%[[LS:.*]]: f32, %[[LAB:.*]]: i64, %[[LOSS:.*]]: f32, %{{.*}}: f32):
// CHECK:         %[[OUT:.*]] = arith.ori
// CHECK:         %[[NI:.*]] = arith.cmpi ne, %[[LAB]], %{{.*}} : i64
// CHECK:         %[[FIX:.*]] = arith.andi %[[OUT]], %[[NI]] : i1
// CHECK:         %[[SQ:.*]] = arith.mulf %[[LS]], %[[LS]] : f32
// CHECK:         %[[ZL:.*]] = arith.mulf %[[SQ]], %{{.*}} : f32
// CHECK:         %[[V:.*]] = arith.select %[[FIX]], %[[ZL]], %{{.*}} : f32
// CHECK:         %[[SUM:.*]] = arith.addf %[[LOSS]], %[[V]] : f32
// CHECK:         linalg.yield %[[SUM]] : f32
// CHECK:       return %[[R]] : tensor<8xf32>
func.func @one_hot_z_loss_none(%x: tensor<8x10xf32>, %t: tensor<8xi64>) -> tensor<8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %z = arith.constant 1.0e-3 : f32
  %ig = arith.constant -100 : i64
  %e = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#xc, #xr], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x10xf32>) outs(%mi : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %v = arith.maximumf %acc, %a : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#xc, #xr, #xr], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<8x10xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%a: f32, %mm: f32, %acc: f32):
    %d = arith.subf %a, %mm : f32
    %ex = math.exp %d : f32
    %v = arith.addf %acc, %ex : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %lse = linalg.generic {indexing_maps = [#r, #r, #r], iterator_types = ["parallel"]} ins(%m, %s : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%mr: f32, %sr: f32, %o: f32):
    %ls = math.log %sr : f32
    %v = arith.addf %ls, %mr : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %pick = linalg.generic {indexing_maps = [#xr, #xc, #xr, #xr], iterator_types = ["parallel", "reduction"]} ins(%t, %x, %lse : tensor<8xi64>, tensor<8x10xf32>, tensor<8xf32>) outs(%si : tensor<8xf32>) {
  ^bb0(%ti: i64, %a: f32, %lr: f32, %acc: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %hot = arith.cmpi eq, %ti, %ci : i64
    %f = arith.uitofp %hot : i1 to f32
    %lp = arith.subf %a, %lr : f32
    %v = arith.mulf %f, %lp : f32
    %sum = arith.addf %acc, %v : f32
    linalg.yield %sum : f32
  } -> tensor<8xf32>
  %l = linalg.generic {indexing_maps = [#r, #r, #r, #r], iterator_types = ["parallel"]} ins(%t, %pick, %lse : tensor<8xi64>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%ti: i64, %p: f32, %lr: f32, %o: f32):
    %keep = arith.cmpi ne, %ti, %ig : i64
    %nl = arith.negf %p : f32
    %sq = arith.mulf %lr, %lr : f32
    %zl = arith.mulf %sq, %z : f32
    %kn = arith.select %keep, %nl, %zero : f32
    %kz = arith.select %keep, %zl, %zero : f32
    %k = arith.addf %kn, %kz : f32
    linalg.yield %k : f32
  } -> tensor<8xf32>
  return %l : tensor<8xf32>
}
