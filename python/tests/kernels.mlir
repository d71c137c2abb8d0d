// Hand-written linalg kernels exercising xent.runtime.driver and the CPU lowering
// pipeline (static/dynamic shapes, f16/bf16/f32/f64/i32/i64, ranks 0-4).
#m2 = affine_map<(d0, d1) -> (d0, d1)>
#r2 = affine_map<(d0, d1) -> (d0)>
#m1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#m4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#r4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
module {
  // Per-row softcapped cross-entropy with ignore_index = -1 and its sum.
  func.func @ce_rows(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> (tensor<?xf32>, tensor<f32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = tensor.dim %x, %c0 : tensor<?x?xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %cap = arith.constant 30.0 : f32
    %ign = arith.constant -1 : i64
    %e = tensor.empty(%n) : tensor<?xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %m = linalg.generic {indexing_maps = [#m2, #r2], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x?xf32>) outs(%m0 : tensor<?xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %d = arith.divf %a, %cap : f32
        %th = math.tanh %d : f32
        %s = arith.mulf %th, %cap : f32
        %r = arith.maximumf %s, %acc : f32
        linalg.yield %r : f32
    } -> tensor<?xf32>
    %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %s = linalg.generic {indexing_maps = [#m2, #r2, #r2], iterator_types = ["parallel", "reduction"]}
        ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%s0 : tensor<?xf32>) {
      ^bb0(%a: f32, %mm: f32, %acc: f32):
        %d = arith.divf %a, %cap : f32
        %th = math.tanh %d : f32
        %sc = arith.mulf %th, %cap : f32
        %sub = arith.subf %sc, %mm : f32
        %ex = math.exp %sub : f32
        %r = arith.addf %ex, %acc : f32
        linalg.yield %r : f32
    } -> tensor<?xf32>
    %loss = linalg.generic {indexing_maps = [#m1, #m1, #m1, #m1], iterator_types = ["parallel"]}
        ins(%s, %m, %t : tensor<?xf32>, tensor<?xf32>, tensor<?xi64>) outs(%e : tensor<?xf32>) {
      ^bb0(%ss: f32, %mm: f32, %tt: i64, %o: f32):
        %i = linalg.index 0 : index
        %keep = arith.cmpi ne, %tt, %ign : i64
        %v = scf.if %keep -> f32 {
          %ti = arith.index_cast %tt : i64 to index
          %xt = tensor.extract %x[%i, %ti] : tensor<?x?xf32>
          %d = arith.divf %xt, %cap : f32
          %th = math.tanh %d : f32
          %sc = arith.mulf %th, %cap : f32
          %l = math.log %ss : f32
          %lse = arith.addf %l, %mm : f32
          %r = arith.subf %lse, %sc : f32
          scf.yield %r : f32
        } else {
          scf.yield %zero : f32
        }
        linalg.yield %v : f32
    } -> tensor<?xf32>
    %tot = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
      %v = tensor.extract %loss[%i] : tensor<?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    %res = tensor.from_elements %tot : tensor<f32>
    return %loss, %res : tensor<?xf32>, tensor<f32>
  }

  // Static rank-4 affine map y = 2x + 1.
  func.func @affine4d(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> attributes {llvm.emit_c_interface} {
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %e = tensor.empty() : tensor<2x3x4x5xf32>
    %r = linalg.generic {indexing_maps = [#m4, #m4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%x : tensor<2x3x4x5xf32>) outs(%e : tensor<2x3x4x5xf32>) {
      ^bb0(%a: f32, %o: f32):
        %m = arith.mulf %a, %two : f32
        %p = arith.addf %m, %one : f32
        linalg.yield %p : f32
    } -> tensor<2x3x4x5xf32>
    return %r : tensor<2x3x4x5xf32>
  }

  // Softmax over dim 1 of a dynamic rank-4 tensor, and its logsumexp (rank 3).
  func.func @softmax_dim1(%x: tensor<?x?x?x?xf32>) -> (tensor<?x?x?x?xf32>, tensor<?x?x?xf32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %d0 = tensor.dim %x, %c0 : tensor<?x?x?x?xf32>
    %d1 = tensor.dim %x, %c1 : tensor<?x?x?x?xf32>
    %d2 = tensor.dim %x, %c2 : tensor<?x?x?x?xf32>
    %d3 = tensor.dim %x, %c3 : tensor<?x?x?x?xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty(%d0, %d2, %d3) : tensor<?x?x?xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    %m = linalg.generic {indexing_maps = [#m4, #r4], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
        ins(%x : tensor<?x?x?x?xf32>) outs(%m0 : tensor<?x?x?xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %r = arith.maximumf %a, %acc : f32
        linalg.yield %r : f32
    } -> tensor<?x?x?xf32>
    %s0 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    %s = linalg.generic {indexing_maps = [#m4, #r4, #r4], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
        ins(%x, %m : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
      ^bb0(%a: f32, %mm: f32, %acc: f32):
        %d = arith.subf %a, %mm : f32
        %ex = math.exp %d : f32
        %r = arith.addf %ex, %acc : f32
        linalg.yield %r : f32
    } -> tensor<?x?x?xf32>
    %lse = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                           iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%s, %m : tensor<?x?x?xf32>, tensor<?x?x?xf32>) outs(%e3 : tensor<?x?x?xf32>) {
      ^bb0(%ss: f32, %mm: f32, %o: f32):
        %l = math.log %ss : f32
        %r = arith.addf %l, %mm : f32
        linalg.yield %r : f32
    } -> tensor<?x?x?xf32>
    %e4 = tensor.empty(%d0, %d1, %d2, %d3) : tensor<?x?x?x?xf32>
    %p = linalg.generic {indexing_maps = [#m4, #r4, #m4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%x, %lse : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>) outs(%e4 : tensor<?x?x?x?xf32>) {
      ^bb0(%a: f32, %l: f32, %o: f32):
        %d = arith.subf %a, %l : f32
        %r = math.exp %d : f32
        linalg.yield %r : f32
    } -> tensor<?x?x?x?xf32>
    return %p, %lse : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>
  }

  // f16 in, f32 exp and f16 square out.
  func.func @f16_ops(%x: tensor<?x?xf16>) -> (tensor<?x?xf32>, tensor<?x?xf16>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %d0 = tensor.dim %x, %c0 : tensor<?x?xf16>
    %d1 = tensor.dim %x, %c1 : tensor<?x?xf16>
    %e32 = tensor.empty(%d0, %d1) : tensor<?x?xf32>
    %e16 = tensor.empty(%d0, %d1) : tensor<?x?xf16>
    %r:2 = linalg.generic {indexing_maps = [#m2, #m2, #m2], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<?x?xf16>) outs(%e32, %e16 : tensor<?x?xf32>, tensor<?x?xf16>) {
      ^bb0(%a: f16, %o: f32, %o2: f16):
        %w = arith.extf %a : f16 to f32
        %ex = math.exp %w : f32
        %sq = arith.mulf %a, %a : f16
        linalg.yield %ex, %sq : f32, f16
    } -> (tensor<?x?xf32>, tensor<?x?xf16>)
    return %r#0, %r#1 : tensor<?x?xf32>, tensor<?x?xf16>
  }

  // bf16 in/out: truncf(tanh(extf(x)) * y) and bf16 arithmetic x + x * x.
  func.func @bf16_ops(%x: tensor<?xbf16>, %y: tensor<?xf32>) -> (tensor<?xbf16>, tensor<?xbf16>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xbf16>
    %e = tensor.empty(%n) : tensor<?xbf16>
    %r:2 = linalg.generic {indexing_maps = [#m1, #m1, #m1, #m1], iterator_types = ["parallel"]}
        ins(%x, %y : tensor<?xbf16>, tensor<?xf32>) outs(%e, %e : tensor<?xbf16>, tensor<?xbf16>) {
      ^bb0(%a: bf16, %b: f32, %o: bf16, %o2: bf16):
        %w = arith.extf %a : bf16 to f32
        %th = math.tanh %w : f32
        %p = arith.mulf %th, %b : f32
        %t = arith.truncf %p : f32 to bf16
        %sq = arith.mulf %a, %a : bf16
        %s = arith.addf %a, %sq : bf16
        linalg.yield %t, %s : bf16, bf16
    } -> (tensor<?xbf16>, tensor<?xbf16>)
    return %r#0, %r#1 : tensor<?xbf16>, tensor<?xbf16>
  }

  // i64 reduction to a rank-0 tensor and an elementwise multiply.
  func.func @i64_ops(%x: tensor<?xi64>) -> (tensor<i64>, tensor<?xi64>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xi64>
    %zero = arith.constant 0 : i64
    %three = arith.constant 3 : i64
    %e0 = tensor.empty() : tensor<i64>
    %z = linalg.fill ins(%zero : i64) outs(%e0 : tensor<i64>) -> tensor<i64>
    %sum = linalg.generic {indexing_maps = [#m1, #s1], iterator_types = ["reduction"]}
        ins(%x : tensor<?xi64>) outs(%z : tensor<i64>) {
      ^bb0(%a: i64, %acc: i64):
        %r = arith.addi %a, %acc : i64
        linalg.yield %r : i64
    } -> tensor<i64>
    %e = tensor.empty(%n) : tensor<?xi64>
    %m = linalg.generic {indexing_maps = [#m1, #m1], iterator_types = ["parallel"]}
        ins(%x : tensor<?xi64>) outs(%e : tensor<?xi64>) {
      ^bb0(%a: i64, %o: i64):
        %r = arith.muli %a, %three : i64
        linalg.yield %r : i64
    } -> tensor<?xi64>
    return %sum, %m : tensor<i64>, tensor<?xi64>
  }

  // i32 -> f32 conversion and f64 log.
  func.func @mixed(%x: tensor<?xi32>, %y: tensor<?xf64>) -> (tensor<?xf32>, tensor<?xf64>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xi32>
    %e32 = tensor.empty(%n) : tensor<?xf32>
    %e64 = tensor.empty(%n) : tensor<?xf64>
    %r:2 = linalg.generic {indexing_maps = [#m1, #m1, #m1, #m1], iterator_types = ["parallel"]}
        ins(%x, %y : tensor<?xi32>, tensor<?xf64>) outs(%e32, %e64 : tensor<?xf32>, tensor<?xf64>) {
      ^bb0(%a: i32, %b: f64, %o: f32, %o2: f64):
        %f = arith.sitofp %a : i32 to f32
        %l = math.log %b : f64
        linalg.yield %f, %l : f32, f64
    } -> (tensor<?xf32>, tensor<?xf64>)
    return %r#0, %r#1 : tensor<?xf32>, tensor<?xf64>
  }

  // tensor.from_elements of the first and last element.
  func.func @ends(%x: tensor<?xf32>) -> tensor<2xf32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = tensor.dim %x, %c0 : tensor<?xf32>
    %last = arith.subi %n, %c1 : index
    %a = tensor.extract %x[%c0] : tensor<?xf32>
    %b = tensor.extract %x[%last] : tensor<?xf32>
    %r = tensor.from_elements %a, %b : tensor<2xf32>
    return %r : tensor<2xf32>
  }

  // Column-by-column accumulation: scf.for with a tensor iter_arg (a new buffer per step).
  func.func @column_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = tensor.dim %x, %c0 : tensor<?x?xf32>
    %m = tensor.dim %x, %c1 : tensor<?x?xf32>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty(%n) : tensor<?xf32>
    %init = linalg.fill ins(%z : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %r = scf.for %j = %c0 to %m step %c1 iter_args(%acc = %init) -> tensor<?xf32> {
      %col = tensor.extract_slice %x[0, %j] [%n, 1] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
      %new = tensor.empty(%n) : tensor<?xf32>
      %s = linalg.generic {indexing_maps = [#m1, #m1, #m1], iterator_types = ["parallel"]}
          ins(%acc, %col : tensor<?xf32>, tensor<?xf32>) outs(%new : tensor<?xf32>) {
        ^bb0(%a: f32, %b: f32, %o: f32):
          %t = arith.addf %a, %b : f32
          linalg.yield %t : f32
      } -> tensor<?xf32>
      scf.yield %s : tensor<?xf32>
    }
    return %r : tensor<?xf32>
  }

  // Ownership corner cases: a constant, an argument, one buffer twice, an in-place update.
  func.func @constant() -> tensor<3xf32> attributes {llvm.emit_c_interface} {
    %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    return %c : tensor<3xf32>
  }
  func.func @identity(%x: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
    return %x : tensor<?xf32>
  }
  func.func @same_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {llvm.emit_c_interface} {
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {indexing_maps = [#m1, #m1], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
      ^bb0(%a: f32, %o: f32):
        %s = arith.addf %a, %a : f32
        linalg.yield %s : f32
    } -> tensor<4xf32>
    return %r, %r : tensor<4xf32>, tensor<4xf32>
  }
  func.func @double_in_place(%x: tensor<4xf32>) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
    %r = linalg.generic {indexing_maps = [#m1], iterator_types = ["parallel"]} outs(%x : tensor<4xf32>) {
      ^bb0(%o: f32):
        %s = arith.addf %o, %o : f32
        linalg.yield %s : f32
    } -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
