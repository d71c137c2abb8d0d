// RUN: xent-opt %s --split-input-file --xent-recognize --mlir-print-ir-after-all \
// RUN:   --mlir-print-ir-after-change -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNCHANGED --allow-empty
// RUN: xent-opt %s --split-input-file --xent-recognize=report-failures -verify-diagnostics -o /dev/null

// Chains that look like a cross-entropy but are not one the ops can
// compute: the IR stays exactly as it was, and with report-failures each
// returned value says why it was left alone (a remark at the op that
// computes it, -verify-diagnostics).

// --mlir-print-ir-after-change dumps the IR after xent-recognize only if the
// pass changed it: nothing is dumped.
// UNCHANGED-NOT: IR Dump After

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>

// A max that starts from 1.0 is not the row max: exp(x - max(1, m)) is no
// longer the max-shifted sum (the pass does not guess that 1.0 is harmless).
func.func @max_init_one(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %minit = linalg.fill ins(%one : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x10xf32>) outs(%minit : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x10xf32>, tensor<4xf32>) outs(%sinit : tensor<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %ex = math.exp %d : f32
    %r = arith.addf %ex, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %tinit = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @+2 {{not raised: not a cross-entropy (no target pick: the pick reads a value that is not a log-softmax: the max starts from 1, not from the lowest value)}}
  // expected-note @+1 {{seen as}}
  %loss = linalg.generic {indexing_maps = [#vec, #vec, #vec, #sc], iterator_types = ["reduction"]}
      ins(%t, %m, %s : tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) outs(%tinit : tensor<f32>) {
  ^bb0(%ti: i64, %mx: f32, %sum: f32, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %xt = tensor.extract %x[%i, %c] : tensor<4x10xf32>
    %ls = math.log %sum : f32
    %lp1 = arith.subf %xt, %mx : f32
    %lp = arith.subf %lp1, %ls : f32
    %r = arith.subf %acc, %lp : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// f64 logits: the ops take f16, bf16 or f32 logits only.
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @f64_logits(%x: tensor<4x10xf64>, %t: tensor<4xi64>) -> tensor<4xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e4 = tensor.empty() : tensor<4xf64>
  %minit = linalg.fill ins(%ninf : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x10xf64>) outs(%minit : tensor<4xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %r = arith.maximumf %in, %acc : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %sinit = linalg.fill ins(%zero : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x10xf64>, tensor<4xf64>) outs(%sinit : tensor<4xf64>) {
  ^bb0(%in: f64, %mx: f64, %acc: f64):
    %d = arith.subf %in, %mx : f64
    %ex = math.exp %d : f64
    %r = arith.addf %ex, %acc : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %e = tensor.empty() : tensor<4x10xf64>
  %logp = linalg.generic {indexing_maps = [#map, #row, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %s : tensor<4x10xf64>, tensor<4xf64>, tensor<4xf64>) outs(%e : tensor<4x10xf64>) {
  ^bb0(%in: f64, %mx: f64, %sum: f64, %o: f64):
    %ls = math.log %sum : f64
    %d = arith.subf %in, %mx : f64
    %r = arith.subf %d, %ls : f64
    linalg.yield %r : f64
  } -> tensor<4x10xf64>
  // expected-remark @+2 {{not raised: not a cross-entropy (logits of element type f64 are not supported (f16, bf16 or f32))}}
  // expected-note @+1 {{seen as}}
  %nll = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xf64>) {
  ^bb0(%ti: i64, %o: f64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i64 to index
    %lp = tensor.extract %logp[%i, %c] : tensor<4x10xf64>
    %r = arith.negf %lp : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  return %nll : tensor<4xf64>
}

// -----

// The sum of an unmasked loss divided by 3 for 4 elements is no mean.
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @mean_by_wrong_constant(%x: tensor<4x10xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x10xf32>) outs(%minit : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x10xf32>, tensor<4xf32>) outs(%sinit : tensor<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %ex = math.exp %d : f32
    %r = arith.addf %ex, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %tinit = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @+2 {{not raised: not a cross-entropy (the loss is scaled by 0.333333, which is neither 1 (sum) nor one over the element count (mean))}}
  // expected-note @+1 {{seen as}}
  %total = linalg.generic {indexing_maps = [#vec, #vec, #vec, #sc], iterator_types = ["reduction"]}
      ins(%t, %m, %s : tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) outs(%tinit : tensor<f32>) {
  ^bb0(%ti: i32, %mx: f32, %sum: f32, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %ti : i32 to index
    %xt = tensor.extract %x[%i, %c] : tensor<4x10xf32>
    %ls = math.log %sum : f32
    %lse = arith.addf %mx, %ls : f32
    %nll = arith.subf %lse, %xt : f32
    %third = arith.constant 3.0 : f32
    %v = arith.divf %nll, %third : f32
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %total : tensor<f32>
}
