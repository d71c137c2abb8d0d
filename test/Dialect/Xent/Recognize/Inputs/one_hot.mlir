// One-hot losses whose labels may lie outside [0, C) (a one-hot pick reads
// nothing there): the lit test one-hot.mlir checks what xent-recognize
// makes of them, python/tests/test_recognize.py their numbers with such
// labels against the chain's.

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>

// Masked mean by the kept count: Σ_kept -Σ_c onehot · logp / #(t != -100).
func.func @masked_mean(%x: tensor<6x5xf32>, %t: tensor<6xi64>) -> tensor<f32> attributes {llvm.emit_c_interface} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ig = arith.constant -100 : i64
  %e6 = tensor.empty() : tensor<6xf32>
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
    %l = math.log %sum : f32
    %r = arith.addf %mx, %l : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %picked = linalg.generic {indexing_maps = [#map, #row, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %lse, %t : tensor<6x5xf32>, tensor<6xf32>, tensor<6xi64>) outs(%sinit : tensor<6xf32>) {
  ^bb0(%in: f32, %l: f32, %label: i64, %acc: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %hot = arith.cmpi eq, %label, %ci : i64
    %hf = arith.uitofp %hot : i1 to f32
    %lp = arith.subf %in, %l : f32
    %p = arith.mulf %lp, %hf : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %tinit = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %total, %count = linalg.generic {indexing_maps = [#vec, #vec, #sc, #sc], iterator_types = ["reduction"]}
      ins(%picked, %t : tensor<6xf32>, tensor<6xi64>) outs(%tinit, %tinit : tensor<f32>, tensor<f32>) {
  ^bb0(%p: f32, %label: i64, %acc: f32, %n: f32):
    %kept = arith.cmpi ne, %label, %ig : i64
    %neg = arith.negf %p : f32
    %v = arith.select %kept, %neg, %zero : f32
    %r = arith.addf %acc, %v : f32
    %k = arith.uitofp %kept : i1 to f32
    %n2 = arith.addf %n, %k : f32
    linalg.yield %r, %n2 : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %mean = linalg.generic {indexing_maps = [#s0, #s0, #s0], iterator_types = []}
      ins(%total, %count : tensor<f32>, tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  return %mean : tensor<f32>
}
