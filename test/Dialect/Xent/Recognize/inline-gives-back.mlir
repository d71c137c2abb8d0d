// xent-recognize then xent-inline-decomposition gives back the original
// computation. Every corpus file is run twice, through canonicalize + cse
// alone and through recognize + inline-decomposition + canonicalize + cse,
// and the same checks hold for both outputs: per function, the first op that
// reads each argument, the max, exp and log of the log-softmax, and the last
// op with what the function returns, arguments and results wired by captured
// names. No xent op is left (--implicit-check-not).
//
// The torch-mlir inputs contain linalg.generic ops with cf.assert in their
// bodies, which cse may not merge: where such an op also serves another user
// (a dead total_weight still checked by asserts, the shared log-softmax of a
// joint function) the original stays beside the inlined copy; the checks
// hold whichever of the two they meet first.

// RUN: xent-opt %S/Inputs/jax.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefixes=JAX,JAX-ORIG --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/jax.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefixes=JAX,JAX-RAISED --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/linalg_softmax.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SOFTMAX --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/linalg_softmax.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SOFTMAX --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/tosa.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefixes=TOSA,TOSA-ORIG --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/tosa.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefixes=TOSA,TOSA-RAISED --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/near_misses.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=NEAR --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/near_misses.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=NEAR --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/torch_linalg.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=TORCH --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/torch_linalg.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=TORCH --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/torch_linalg_raw.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=RAW --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/torch_linalg_raw.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=RAW --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/torch_fx.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=FX --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/torch_fx.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=FX --implicit-check-not=xent.

// RUN: xent-opt %S/Inputs/torch_backward.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=BWD --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/torch_backward.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=BWD --implicit-check-not=xent.

// JAX (optax through stablehlo -> linalg). A one-hot pick reads nothing
// for a label outside [0, C); the raised op takes such labels as ignored
// (-1), so what it gives back first maps them (JAX-RAISED): the chain on the
// mapped labels for sum and none, and for a mean, whose chain divides by
// the element count the op's ignored labels are part of, the op's own
// decomposition of the sum, divided by N.

// JAX-LABEL: func.func @jax_mean_rank1(
// JAX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// JAX-RAISED: linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// JAX-RAISED: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// JAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// JAX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// JAX:      math.exp %{{.*}} : f32
// JAX:      math.log %{{.*}} : f32
// JAX-ORIG: linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// JAX-ORIG: %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// JAX-ORIG-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-ORIG-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// JAX-ORIG-NEXT: linalg.yield %{{.*}} : f32
// JAX-ORIG-NEXT: } -> tensor<f32>
// JAX-RAISED: %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// JAX-RAISED-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-RAISED-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// JAX-RAISED-NEXT: linalg.yield %{{.*}} : f32
// JAX-RAISED-NEXT: } -> tensor<f32>
// JAX-NEXT: return %[[LOSS]] : tensor<f32>

// JAX-LABEL: func.func @jax_mean_rank2_bf16(
// JAX-SAME: %[[X:[a-z0-9_]+]]: tensor<2x6x16xbf16>, %[[T:[a-z0-9_]+]]: tensor<2x6xi32>)
// JAX-RAISED: linalg.generic {{.*}} ins(%[[T]] : tensor<2x6xi32>)
// JAX-RAISED: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// JAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<2x6x16xbf16>)
// JAX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// JAX:      math.exp %{{.*}} : f32
// JAX:      math.log %{{.*}} : f32
// JAX-ORIG: linalg.generic {{.*}} ins(%[[T]] : tensor<2x6xi32>)
// JAX-ORIG: %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// JAX-ORIG-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-ORIG-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// JAX-ORIG-NEXT: linalg.yield %{{.*}} : f32
// JAX-ORIG-NEXT: } -> tensor<f32>
// JAX-RAISED: %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// JAX-RAISED-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-RAISED-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// JAX-RAISED-NEXT: linalg.yield %{{.*}} : f32
// JAX-RAISED-NEXT: } -> tensor<f32>
// JAX-NEXT: return %[[LOSS]] : tensor<f32>

// JAX-LABEL: func.func @jax_sum_dynamic(
// JAX-SAME: %[[X:[a-z0-9_]+]]: tensor<?x12xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi32>)
// JAX-RAISED: %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi32>)
// JAX-RAISED: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// JAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x12xf32>)
// JAX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// JAX:      math.exp %{{.*}} : f32
// JAX:      math.log %{{.*}} : f32
// JAX-ORIG: linalg.generic {{.*}} ins(%[[T]] : tensor<?xi32>)
// JAX-RAISED: linalg.generic {{.*}} ins(%[[TR]] : tensor<?xi32>)
// JAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// JAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// JAX-NEXT: linalg.yield %{{.*}} : f32
// JAX-NEXT: } -> tensor<f32>
// JAX-NEXT: return %[[LOSS]] : tensor<f32>

// JAX-LABEL: func.func @jax_probs_mean(
// JAX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8x10xf32>)
// JAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// JAX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// JAX:      math.exp %{{.*}} : f32
// JAX:      math.log %{{.*}} : f32
// JAX:      linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<8x10xf32>, tensor<8x10xf32>)
// JAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// JAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// JAX-NEXT: linalg.yield %{{.*}} : f32
// JAX-NEXT: } -> tensor<f32>
// JAX-NEXT: return %[[LOSS]] : tensor<f32>

// JAX-LABEL: func.func @jax_none_rank2_dynamic(
// JAX-SAME: %[[X:[a-z0-9_]+]]: tensor<?x?x8xf32>, %[[T:[a-z0-9_]+]]: tensor<?x?xi64>)
// JAX-RAISED: %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?x?xi64>)
// JAX-RAISED: arith.select %{{.*}}, %{{.*}}, %c-1_i64 : i64
// JAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x?x8xf32>)
// JAX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// JAX:      math.exp %{{.*}} : f32
// JAX:      math.log %{{.*}} : f32
// JAX-ORIG: linalg.generic {{.*}} ins(%[[T]] : tensor<?x?xi64>)
// JAX-RAISED: linalg.generic {{.*}} ins(%[[TR]] : tensor<?x?xi64>)
// JAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<?x?xf32>) outs(%{{.*}} : tensor<?x?xf32>)
// JAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// JAX-NEXT: arith.negf %{{.*}} : f32
// JAX-NEXT: linalg.yield %{{.*}} : f32
// JAX-NEXT: } -> tensor<?x?xf32>
// JAX-NEXT: return %[[LOSS]] : tensor<?x?xf32>

// Upstream linalg: linalg.softmax + math.log, its decompositions, the named-op form.

// SOFTMAX-LABEL: func.func @linalg_softmax_log_mean(
// SOFTMAX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// SOFTMAX:      linalg.softmax dimension(1) ins(%[[X]] : tensor<8x10xf32>)
// SOFTMAX:      math.log %{{.*}} : f32
// SOFTMAX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// SOFTMAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// SOFTMAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// SOFTMAX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// SOFTMAX-NEXT: linalg.yield %{{.*}} : f32
// SOFTMAX-NEXT: } -> tensor<f32>
// SOFTMAX-NEXT: return %[[LOSS]] : tensor<f32>

// SOFTMAX-LABEL: func.func @linalg_softmax_llvm22_sum_dynamic(
// SOFTMAX-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// SOFTMAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// SOFTMAX:      arith.maxnumf %{{.*}}, %{{.*}} : f32
// SOFTMAX:      math.exp %{{.*}} : f32
// SOFTMAX:      math.log %{{.*}} : f32
// SOFTMAX:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// SOFTMAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// SOFTMAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// SOFTMAX-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// SOFTMAX-NEXT: linalg.yield %{{.*}} : f32
// SOFTMAX-NEXT: } -> tensor<f32>
// SOFTMAX-NEXT: return %[[LOSS]] : tensor<f32>

// SOFTMAX-LABEL: func.func @linalg_softmax_llvm19_mean(
// SOFTMAX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// SOFTMAX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// SOFTMAX:      arith.maxnumf %{{.*}}, %{{.*}} : f32
// SOFTMAX:      math.exp %{{.*}} : f32
// SOFTMAX:      math.log %{{.*}} : f32
// SOFTMAX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// SOFTMAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// SOFTMAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// SOFTMAX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// SOFTMAX-NEXT: linalg.yield %{{.*}} : f32
// SOFTMAX-NEXT: } -> tensor<f32>
// SOFTMAX-NEXT: return %[[LOSS]] : tensor<f32>

// SOFTMAX-LABEL: func.func @linalg_named_mean(
// SOFTMAX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// SOFTMAX:      linalg.reduce ins(%[[X]] : tensor<8x10xf32>)
// SOFTMAX:      arith.maxnumf %{{.*}}, %{{.*}} : f32
// SOFTMAX:      linalg.log ins(%{{.*}} : tensor<8x10xf32>)
// SOFTMAX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// SOFTMAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// SOFTMAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// SOFTMAX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// SOFTMAX-NEXT: linalg.yield %{{.*}} : f32
// SOFTMAX-NEXT: } -> tensor<f32>
// SOFTMAX-NEXT: return %[[LOSS]] : tensor<f32>

// SOFTMAX-LABEL: func.func @linalg_softmax_rank3_axis1_none(
// SOFTMAX-SAME: %[[X:[a-z0-9_]+]]: tensor<2x5x6xf32>, %[[T:[a-z0-9_]+]]: tensor<2x6xi64>)
// SOFTMAX:      linalg.softmax dimension(1) ins(%[[X]] : tensor<2x5x6xf32>)
// SOFTMAX:      math.log %{{.*}} : f32
// SOFTMAX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[T]] : tensor<2x6xi64>) outs(%{{.*}} : tensor<2x6xf32>)
// SOFTMAX-NEXT: ^bb0(%{{.*}}: i64, %{{.*}}: f32):
// SOFTMAX-NEXT: arith.index_cast %{{.*}} : i64 to index
// SOFTMAX-NEXT: linalg.index 0 : index
// SOFTMAX-NEXT: linalg.index 1 : index
// SOFTMAX-NEXT: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<2x5x6xf32>
// SOFTMAX-NEXT: arith.negf %{{.*}} : f32
// SOFTMAX-NEXT: arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// SOFTMAX-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// SOFTMAX-NEXT: linalg.yield %{{.*}} : f32
// SOFTMAX-NEXT: } -> tensor<2x6xf32>
// SOFTMAX-NEXT: return %[[LOSS]] : tensor<2x6xf32>

// TOSA with gather and one-hot picks; the unshifted form is not raised and
// stays as it is.

// TOSA-LABEL: func.func @tosa_gather_mean(
// TOSA-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// TOSA:      tosa.reduce_max %[[X]] {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
// TOSA:      tosa.exp %{{.*}} : (tensor<8x10xf32>) -> tensor<8x10xf32>
// TOSA:      tosa.log %{{.*}} : (tensor<8x1xf32>) -> tensor<8x1xf32>
// TOSA:      tosa.equal %[[T]], %{{.*}} : (tensor<8xi64>, tensor<1xi64>) -> tensor<8xi1>
// TOSA:      %[[LOSS:[a-z0-9_]+]] = tosa.mul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<1xi8>) -> tensor<f32>
// TOSA-NEXT: return %[[LOSS]] : tensor<f32>

// A one-hot pick (JAX above): the raised op's labels map those outside
// [0, C) to its ignore index, and what it gives back reads them.
// TOSA-LABEL: func.func @tosa_onehot_sum(
// TOSA-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// TOSA-RAISED: %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// TOSA-RAISED: arith.select %{{.*}}, %{{.*}}, %c-100_i32 : i32
// TOSA:      tosa.reduce_max %[[X]] {axis = 1 : i32} : (tensor<8x10xf32>) -> tensor<8x1xf32>
// TOSA:      tosa.exp %{{.*}} : (tensor<8x10xf32>) -> tensor<8x10xf32>
// TOSA:      tosa.log %{{.*}} : (tensor<8x1xf32>) -> tensor<8x1xf32>
// TOSA-ORIG: tosa.reshape %[[T]], %{{.*}} : (tensor<8xi32>, !tosa.shape<2>) -> tensor<8x1xi32>
// TOSA-RAISED: tosa.reshape %[[TR]], %{{.*}} : (tensor<8xi32>, !tosa.shape<2>) -> tensor<8x1xi32>
// TOSA:      %[[LOSS:[a-z0-9_]+]] = tosa.reshape %{{.*}}, %{{.*}} : (tensor<1xf32>, !tosa.shape<0>) -> tensor<f32>
// TOSA-NEXT: return %[[LOSS]] : tensor<f32>

// TOSA-LABEL: func.func @tosa_unshifted_mean(
// TOSA-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// TOSA:      tosa.exp %[[X]] : (tensor<8x10xf32>) -> tensor<8x10xf32>
// TOSA:      tosa.log %{{.*}} : (tensor<8x10xf32>) -> tensor<8x10xf32>
// TOSA:      tosa.reshape %[[T]], %{{.*}} : (tensor<8xi32>, !tosa.shape<2>) -> tensor<8x1xi32>
// TOSA:      %[[LOSS:[a-z0-9_]+]] = tosa.mul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<1xi8>) -> tensor<f32>
// TOSA-NEXT: return %[[LOSS]] : tensor<f32>

// A one-hot mean by the element count: the op's sum (its own
// decomposition) divided by N.
// TOSA-LABEL: func.func @tosa_rank3_axis2_mean(
// TOSA-SAME: %[[X:[a-z0-9_]+]]: tensor<2x4x10xf32>, %[[T:[a-z0-9_]+]]: tensor<2x4xi32>)
// TOSA-ORIG: tosa.reduce_max %[[X]] {axis = 2 : i32} : (tensor<2x4x10xf32>) -> tensor<2x4x1xf32>
// TOSA-ORIG: tosa.exp %{{.*}} : (tensor<2x4x10xf32>) -> tensor<2x4x10xf32>
// TOSA-ORIG: tosa.log %{{.*}} : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
// TOSA-ORIG: tosa.reshape %[[T]], %{{.*}} : (tensor<2x4xi32>, !tosa.shape<3>) -> tensor<2x4x1xi32>
// TOSA-ORIG: %[[LOSS:[a-z0-9_]+]] = tosa.mul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<1xi8>) -> tensor<f32>
// TOSA-RAISED: linalg.generic {{.*}} ins(%[[T]] : tensor<2x4xi32>)
// TOSA-RAISED: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// TOSA-RAISED: linalg.generic {{.*}} ins(%[[X]] : tensor<2x4x10xf32>)
// TOSA-RAISED: arith.maximumf %{{.*}}, %{{.*}} : f32
// TOSA-RAISED: math.exp %{{.*}} : f32
// TOSA-RAISED: math.log %{{.*}} : f32
// TOSA-RAISED: %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// TOSA-RAISED: arith.divf %{{.*}}, %{{.*}} : f32
// TOSA-RAISED-NEXT: linalg.yield
// TOSA-RAISED-NEXT: } -> tensor<f32>
// TOSA-NEXT: return %[[LOSS]] : tensor<f32>

// Near misses: nothing is raised, nothing changes.

// NEAR-LABEL: func.func @nm_softmax(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      %[[PROBS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<8x10xf32>, tensor<8x1xf32>) outs(%{{.*}} : tensor<8x10xf32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<8x10xf32>
// NEAR-NEXT: return %[[PROBS]] : tensor<8x10xf32>

// NEAR-LABEL: func.func @nm_log_softmax(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      math.log %{{.*}} : f32
// NEAR:      %[[LOGP:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<?x10xf32>, tensor<?x1xf32>) outs(%{{.*}} : tensor<?x10xf32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<?x10xf32>
// NEAR-NEXT: return %[[LOGP]] : tensor<?x10xf32>

// NEAR-LABEL: func.func @nm_axes_mismatch(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      math.log %{{.*}} : f32
// NEAR:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// NEAR:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<f32>
// NEAR-NEXT: return %[[LOSS]] : tensor<f32>

// NEAR-LABEL: func.func @nm_unshifted_exp(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      math.log %{{.*}} : f32
// NEAR:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// NEAR:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<f32>
// NEAR-NEXT: return %[[LOSS]] : tensor<f32>

// NEAR-LABEL: func.func @nm_gather_raw_logits(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// NEAR:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// NEAR:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<f32>
// NEAR-NEXT: return %[[LOSS]] : tensor<f32>

// NEAR-LABEL: func.func @nm_pick_other_tensor(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[O:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      math.log %{{.*}} : f32
// NEAR:      %[[LOGP:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x10xf32>, tensor<8x1xf32>)
// NEAR:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// NEAR:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<f32>
// NEAR-NEXT: return %[[LOSS]], %[[LOGP]] : tensor<f32>, tensor<8x10xf32>

// NEAR-LABEL: func.func @nm_mean_wrong_count(
// NEAR-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// NEAR:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// NEAR:      arith.maximumf %{{.*}}, %{{.*}} : f32
// NEAR:      math.exp %{{.*}} : f32
// NEAR:      math.log %{{.*}} : f32
// NEAR:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// NEAR:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// NEAR-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// NEAR-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// NEAR-NEXT: linalg.yield %{{.*}} : f32
// NEAR-NEXT: } -> tensor<f32>
// NEAR-NEXT: return %[[LOSS]] : tensor<f32>

// torch-mlir TorchToLinalg, as the backend pipeline delivers it.

// TORCH-LABEL: func.func @torch_linalg_mean_static_f32(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_sum_dynamic_finite(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<?x?xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x?xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_none_static(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<6x7xf32>, %[[T:[a-z0-9_]+]]: tensor<6xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<6x7xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[T]] : tensor<6xi64>) outs(%{{.*}} : tensor<6xf32>)
// TORCH-NEXT: ^bb0(%{{.*}}: i64, %{{.*}}: f32):
// TORCH-NEXT: arith.index_cast %{{.*}} : i64 to index
// TORCH-NEXT: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// TORCH-NEXT: linalg.index 0 : index
// TORCH-NEXT: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<6x7xf32>
// TORCH-NEXT: arith.negf %{{.*}} : f32
// TORCH-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<6xf32>
// TORCH-NEXT: return %[[LOSS]] : tensor<6xf32>

// TORCH-LABEL: func.func @torch_linalg_mean_bf16(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x32xbf16>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : bf16
// TORCH:      math.exp %{{.*}} : bf16
// TORCH:      math.log %{{.*}} : bf16
// TORCH:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xbf16>) outs(%{{.*}} : tensor<bf16>)
// TORCH-NEXT: ^bb0(%{{.*}}: bf16, %{{.*}}: bf16):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : bf16
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : bf16
// TORCH-NEXT: linalg.yield %{{.*}} : bf16
// TORCH-NEXT: } -> tensor<bf16>
// TORCH-NEXT: return %[[LOSS]] : tensor<bf16>

// TORCH-LABEL: func.func @torch_linalg_mean_f16_finite(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf16>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf16>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f16
// TORCH:      math.exp %{{.*}} : f16
// TORCH:      math.log %{{.*}} : f16
// TORCH:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf16>) outs(%{{.*}} : tensor<f16>)
// TORCH-NEXT: ^bb0(%{{.*}}: f16, %{{.*}}: f16):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f16
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f16
// TORCH-NEXT: linalg.yield %{{.*}} : f16
// TORCH-NEXT: } -> tensor<f16>
// TORCH-NEXT: return %[[LOSS]] : tensor<f16>

// TORCH-LABEL: func.func @torch_linalg_mean_unbatched(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<9xf32>, %[[T:[a-z0-9_]+]]: tensor<i64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<9xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<i64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%[[NLL]] : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_weighted_mean(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>, %[[W:[a-z0-9_]+]]: tensor<10xf32>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
// TORCH:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_weighted_sum_dynamic(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<?x12xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>, %[[W:[a-z0-9_]+]]: tensor<12xf32>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x12xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 12] : tensor<12xf32> into tensor<1x12xf32>
// TORCH:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_decomposed_mean_dynamic(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// TORCH:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// TORCH-LABEL: func.func @torch_linalg_flattened_rank3(
// TORCH-SAME: %[[X:[a-z0-9_]+]]: tensor<2x?x32xf32>, %[[T:[a-z0-9_]+]]: tensor<2x?xi64>)
// TORCH:      tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x?x32xf32> into tensor<?x32xf32>
// TORCH:      tensor.collapse_shape %[[T]] {{\[}}[0, 1]] : tensor<2x?xi64> into tensor<?xi64>
// TORCH:      arith.maximumf %{{.*}}, %{{.*}} : f32
// TORCH:      math.exp %{{.*}} : f32
// TORCH:      math.log %{{.*}} : f32
// TORCH:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// TORCH-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// TORCH-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// TORCH-NEXT: linalg.yield %{{.*}} : f32
// TORCH-NEXT: } -> tensor<f32>
// TORCH-NEXT: return %[[LOSS]] : tensor<f32>

// torch-mlir TorchToLinalg, raw (tensor.dim, tensor.cast, cf.assert checks).

// RAW-LABEL: func.func @torch_linalg_raw_mean_static_f32(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_sum_dynamic_finite(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<?x?xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x?xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_none_static(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<6x7xf32>, %[[T:[a-z0-9_]+]]: tensor<6xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<6x7xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[T]] : tensor<6xi64>) outs(%{{.*}} : tensor<6xf32>)
// RAW-NEXT: ^bb0(%{{.*}}: i64, %{{.*}}: f32):
// RAW-NEXT: arith.index_cast %{{.*}} : i64 to index
// RAW-NEXT: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// RAW-NEXT: linalg.index 0 : index
// RAW-NEXT: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<6x7xf32>
// RAW-NEXT: arith.negf %{{.*}} : f32
// RAW-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<6xf32>
// RAW-NEXT: return %[[LOSS]] : tensor<6xf32>

// RAW-LABEL: func.func @torch_linalg_raw_mean_bf16(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x32xbf16>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : bf16
// RAW:      math.exp %{{.*}} : bf16
// RAW:      math.log %{{.*}} : bf16
// RAW:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<?xbf16>) outs(%{{.*}} : tensor<bf16>)
// RAW-NEXT: ^bb0(%{{.*}}: bf16, %{{.*}}: bf16):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : bf16
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : bf16
// RAW-NEXT: linalg.yield %{{.*}} : bf16
// RAW-NEXT: } -> tensor<bf16>
// RAW-NEXT: return %[[LOSS]] : tensor<bf16>

// RAW-LABEL: func.func @torch_linalg_raw_mean_f16_finite(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf16>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf16>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f16
// RAW:      math.exp %{{.*}} : f16
// RAW:      math.log %{{.*}} : f16
// RAW:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[NLL]] : tensor<8xf16>) outs(%{{.*}} : tensor<f16>)
// RAW-NEXT: ^bb0(%{{.*}}: f16, %{{.*}}: f16):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f16
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : f16
// RAW-NEXT: linalg.yield %{{.*}} : f16
// RAW-NEXT: } -> tensor<f16>
// RAW-NEXT: return %[[LOSS]] : tensor<f16>

// RAW-LABEL: func.func @torch_linalg_raw_mean_unbatched(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<9xf32>, %[[T:[a-z0-9_]+]]: tensor<i64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<9xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<i64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%[[NLL]] : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_weighted_mean(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>, %[[W:[a-z0-9_]+]]: tensor<10xf32>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
// RAW:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_decomposed_mean_dynamic(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// RAW:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// RAW-LABEL: func.func @torch_linalg_raw_flattened_rank3(
// RAW-SAME: %[[X:[a-z0-9_]+]]: tensor<2x?x32xf32>, %[[T:[a-z0-9_]+]]: tensor<2x?xi64>)
// RAW:      tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x?x32xf32> into tensor<?x32xf32>
// RAW:      tensor.collapse_shape %[[T]] {{\[}}[0, 1]] : tensor<2x?xi64> into tensor<?xi64>
// RAW:      arith.maximumf %{{.*}}, %{{.*}} : f32
// RAW:      math.exp %{{.*}} : f32
// RAW:      math.log %{{.*}} : f32
// RAW:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<?xf32>) outs(%{{.*}} : tensor<f32>)
// RAW-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// RAW-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: arith.addf %{{.*}}, %{{.*}} : f32
// RAW-NEXT: linalg.yield %{{.*}} : f32
// RAW-NEXT: } -> tensor<f32>
// RAW-NEXT: return %[[LOSS]] : tensor<f32>

// PyTorch's FX / AOT autograd decompositions.

// FX-LABEL: func.func @torch_fx_mean_bf16(
// FX-SAME: %[[X:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// FX:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x32xbf16>)
// FX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// FX:      math.exp %{{.*}} : f32
// FX:      math.log %{{.*}} : f32
// FX:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// FX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<bf16>, tensor<bf16>) outs(%{{.*}} : tensor<bf16>)
// FX-NEXT: ^bb0(%{{.*}}: bf16, %{{.*}}: bf16, %{{.*}}: bf16):
// FX-NEXT: arith.divf %{{.*}}, %{{.*}} : bf16
// FX-NEXT: linalg.yield %{{.*}} : bf16
// FX-NEXT: } -> tensor<bf16>
// FX-NEXT: return %[[LOSS]] : tensor<bf16>

// FX-LABEL: func.func @torch_fx_sum_f16_weighted(
// FX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf16>, %[[T:[a-z0-9_]+]]: tensor<8xi64>, %[[W:[a-z0-9_]+]]: tensor<16xf16>)
// FX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf16>)
// FX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// FX:      math.exp %{{.*}} : f32
// FX:      math.log %{{.*}} : f32
// FX:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 16] : tensor<16xf16> into tensor<1x16xf16>
// FX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// FX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<8xf16>) outs(%{{.*}} : tensor<f16>)
// FX-NEXT: ^bb0(%{{.*}}: f16, %{{.*}}: f16):
// FX-NEXT: arith.addf %{{.*}}, %{{.*}} : f16
// FX-NEXT: linalg.yield %{{.*}} : f16
// FX-NEXT: } -> tensor<f16>
// FX-NEXT: return %[[LOSS]] : tensor<f16>

// FX-LABEL: func.func @torch_fx_mean_weighted_f32(
// FX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>, %[[W:[a-z0-9_]+]]: tensor<10xf32>)
// FX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// FX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// FX:      math.exp %{{.*}} : f32
// FX:      math.log %{{.*}} : f32
// FX:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
// FX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// FX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// FX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// FX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// FX-NEXT: linalg.yield %{{.*}} : f32
// FX-NEXT: } -> tensor<f32>
// FX-NEXT: return %[[LOSS]] : tensor<f32>

// FX-LABEL: func.func @torch_fx_none_dynamic(
// FX-SAME: %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>)
// FX:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// FX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// FX:      math.exp %{{.*}} : f32
// FX:      math.log %{{.*}} : f32
// FX:      %[[NLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// FX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[NLL]], %{{.*}}, %{{.*}} : tensor<?xi1>, tensor<?xf32>, tensor<i64>) outs(%{{.*}} : tensor<?xf32>)
// FX-NEXT: ^bb0(%{{.*}}: i1, %{{.*}}: f32, %{{.*}}: i64, %{{.*}}: f32):
// FX-NEXT: arith.sitofp %{{.*}} : i64 to f32
// FX-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// FX-NEXT: linalg.yield %{{.*}} : f32
// FX-NEXT: } -> tensor<?xf32>
// FX-NEXT: return %[[LOSS]] : tensor<?xf32>

// FX-LABEL: func.func @torch_fx_mean_ignore_valid_class(
// FX-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// FX:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// FX:      arith.maximumf %{{.*}}, %{{.*}} : f32
// FX:      math.exp %{{.*}} : f32
// FX:      math.log %{{.*}} : f32
// FX:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// FX:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// FX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// FX-NEXT: arith.divf %{{.*}}, %{{.*}} : f32
// FX-NEXT: linalg.yield %{{.*}} : f32
// FX-NEXT: } -> tensor<f32>
// FX-NEXT: return %[[LOSS]] : tensor<f32>

// torch-mlir backward chains, alone and beside their forward (joint); the
// backward from saved log-probabilities is not raised and stays as it is.

// BWD-LABEL: func.func @torch_bwd_mean(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : f32
// BWD:      math.exp %{{.*}} : f32
// BWD:      math.log %{{.*}} : f32
// BWD:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %{{.*}} : tensor<f32>, tensor<8xi64>, tensor<f32>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<8x10xf32>, tensor<8x10xf32>) outs(%{{.*}} : tensor<8x10xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<8x10xf32>
// BWD-NEXT: return %[[DX]] : tensor<8x10xf32>

// BWD-LABEL: func.func @torch_bwd_weighted_sum_dynamic(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[X:[a-z0-9_]+]]: tensor<?x10xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>, %[[W:[a-z0-9_]+]]: tensor<10xf32>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x10xf32>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : f32
// BWD:      math.exp %{{.*}} : f32
// BWD:      math.log %{{.*}} : f32
// BWD:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
// BWD:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %{{.*}} : tensor<f32>, tensor<?xi64>, tensor<f32>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<?x10xf32>, tensor<?x10xf32>) outs(%{{.*}} : tensor<?x10xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<?x10xf32>
// BWD-NEXT: return %[[DX]] : tensor<?x10xf32>

// BWD-LABEL: func.func @torch_bwd_none(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<6xf32>, %[[X:[a-z0-9_]+]]: tensor<6x7xf32>, %[[T:[a-z0-9_]+]]: tensor<6xi64>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<6x7xf32>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : f32
// BWD:      math.exp %{{.*}} : f32
// BWD:      math.log %{{.*}} : f32
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %{{.*}} : tensor<6xf32>, tensor<6xi64>, tensor<f32>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<6x7xf32>, tensor<6x7xf32>) outs(%{{.*}} : tensor<6x7xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<6x7xf32>
// BWD-NEXT: return %[[DX]] : tensor<6x7xf32>

// BWD-LABEL: func.func @torch_joint_mean_seed(
// BWD-SAME: %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x10xf32>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : f32
// BWD:      math.exp %{{.*}} : f32
// BWD:      math.log %{{.*}} : f32
// BWD:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// BWD:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[T]], %{{.*}} : tensor<f32>, tensor<8xi64>, tensor<f32>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<8x10xf32>, tensor<8x10xf32>) outs(%{{.*}} : tensor<8x10xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<8x10xf32>
// BWD-NEXT: return %[[LOSS]], %[[DX]] : tensor<f32>, tensor<8x10xf32>

// BWD-LABEL: func.func @torch_joint_weighted_mean_dynamic(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[X:[a-z0-9_]+]]: tensor<?x12xf32>, %[[T:[a-z0-9_]+]]: tensor<?xi64>, %[[W:[a-z0-9_]+]]: tensor<12xf32>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<?x12xf32>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : f32
// BWD:      math.exp %{{.*}} : f32
// BWD:      math.log %{{.*}} : f32
// BWD:      tensor.expand_shape %[[W]] {{\[}}[0, 1]] output_shape [1, 12] : tensor<12xf32> into tensor<1x12xf32>
// BWD:      linalg.generic {{.*}} ins(%[[T]] : tensor<?xi64>)
// BWD:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %{{.*}} : tensor<f32>, tensor<?xi64>, tensor<f32>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<?x12xf32>, tensor<?x12xf32>) outs(%{{.*}} : tensor<?x12xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<?x12xf32>
// BWD-NEXT: return %[[LOSS]], %[[DX]] : tensor<f32>, tensor<?x12xf32>

// BWD-LABEL: func.func @torch_joint_mean_bf16(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<bf16>, %[[X:[a-z0-9_]+]]: tensor<8x32xbf16>, %[[T:[a-z0-9_]+]]: tensor<8xi64>)
// BWD:      linalg.generic {{.*}} ins(%[[X]] : tensor<8x32xbf16>)
// BWD:      arith.maximumf %{{.*}}, %{{.*}} : bf16
// BWD:      math.exp %{{.*}} : bf16
// BWD:      math.log %{{.*}} : bf16
// BWD:      linalg.generic {{.*}} ins(%[[T]] : tensor<8xi64>)
// BWD:      %[[LOSS:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8xbf16>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %{{.*}} : tensor<bf16>, tensor<8xi64>, tensor<bf16>)
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<8x32xbf16>, tensor<8x32xbf16>) outs(%{{.*}} : tensor<8x32xbf16>)
// BWD-NEXT: ^bb0(%{{.*}}: bf16, %{{.*}}: bf16, %{{.*}}: bf16):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : bf16
// BWD-NEXT: linalg.yield %{{.*}} : bf16
// BWD-NEXT: } -> tensor<8x32xbf16>
// BWD-NEXT: return %[[LOSS]], %[[DX]] : tensor<bf16>, tensor<8x32xbf16>

// BWD-LABEL: func.func @torch_bwd_saved_mean(
// BWD-SAME: %[[G:[a-z0-9_]+]]: tensor<f32>, %[[LOGP:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi64>, %[[TW:[a-z0-9_]+]]: tensor<f32>)
// BWD:      %[[DNLL:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[G]], %[[T]], %[[TW]] : tensor<f32>, tensor<8xi64>, tensor<f32>)
// BWD:      linalg.generic {{.*}} ins(%[[LOGP]] : tensor<8x10xf32>)
// BWD:      math.exp %{{.*}} : f32
// BWD:      %[[DX:[a-z0-9_]+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DNLL]], %{{.*}} : tensor<8x10xf32>, tensor<8x10xf32>) outs(%{{.*}} : tensor<8x10xf32>)
// BWD-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// BWD-NEXT: arith.subf %{{.*}}, %{{.*}} : f32
// BWD-NEXT: linalg.yield %{{.*}} : f32
// BWD-NEXT: } -> tensor<8x10xf32>
// BWD-NEXT: return %[[DX]] : tensor<8x10xf32>

// Label smoothing, z-loss / optax (forms 8 and 9): per function the
// log-softmax's max, exp and log and the returned types, no xent op left
// (python/tests/test_recognize.py checks the numbers are bitwise the same).
// RUN: xent-opt %S/Inputs/label_smoothing.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SMOOTH --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/label_smoothing.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SMOOTH --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/z_loss.mlir --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=ZLOSS --implicit-check-not=xent.
// RUN: xent-opt %S/Inputs/z_loss.mlir --xent-recognize --xent-inline-decomposition --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=ZLOSS --implicit-check-not=xent.

// SMOOTH-LABEL: func.func @torch_smoothing_mean(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<f32>

// SMOOTH-LABEL: func.func @torch_fx_smoothing_mean_dynamic(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<f32>

// SMOOTH-LABEL: func.func @torch_smoothing_sum_dynamic(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<f32>

// SMOOTH-LABEL: func.func @torch_smoothing_none(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<6xf32>

// SMOOTH-LABEL: func.func @torch_smoothing_weighted_mean(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<f32>

// SMOOTH-LABEL: func.func @torch_smoothing_joint_mean_seed(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}}, %{{.*}} : tensor<f32>, tensor<8x10xf32>

// SMOOTH-LABEL: func.func @torch_smoothing_joint_weighted_sum(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}}, %{{.*}} : tensor<f32>, tensor<8x10xf32>

// SMOOTH-LABEL: func.func @torch_nm_smoothing_scale(
// SMOOTH:      arith.maximumf
// SMOOTH:      math.exp
// SMOOTH:      math.log
// SMOOTH:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_zloss_mean(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_zloss_weighted_mean(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_zloss_sum(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_zloss_none(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<6xf32>

// ZLOSS-LABEL: func.func @torch_zloss_softcap_mean(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @optax_integer_labels_mean(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @optax_zloss_mean(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @optax_zloss_sum_dynamic(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_nm_zloss_other_lse(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>

// ZLOSS-LABEL: func.func @torch_nm_zloss_unmasked(
// ZLOSS:      arith.maximumf
// ZLOSS:      math.exp
// ZLOSS:      math.log
// ZLOSS:      return %{{.*}} : tensor<f32>
