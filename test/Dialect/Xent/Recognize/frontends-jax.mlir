// The JAX corpus (utils/frontends: programs JAX itself exported to
// StableHLO, lowered by StableHLO's own stablehlo-legalize-to-linalg, then
// elementwise-fused; values.json holds JAX's numbers). Every program is
// raised; this file checks each op with its attributes and what stays
// beside it; docs/recognition.md "Real frontend output" lists every
// program with how.

// python/tests/test_recognize_frontends.py runs every program on the CPU
// (as written, through the op's captured region, through the op's own
// decomposition) against JAX's numbers and JAX's conventions for labels
// outside [0, C).

// One-hot labels: jax.nn.one_hot gives a label outside [0, 10) an all-zero
// row, so that element's loss is 0 and the mean still counts it. The op
// takes those labels as ignored (-1) and sums; the mean is that sum divided
// by the 8 elements. Unfused, the one-hot is a tensor of its own: the same.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// RUN: xent-opt %S/Inputs/frontends/jax/optax_onehot_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=ONEHOT
// ONEHOT-LABEL: func.func public @main(
// ONEHOT-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ONEHOT:       %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// ONEHOT:       %[[S:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -1 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
// ONEHOT:       %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// ONEHOT:       arith.divf %{{.*}}, %{{.*}} : f32
// ONEHOT:       return %[[L]] : tensor<f32>

// optax's integer labels and take_along_axis of log_softmax: the label's
// logit (or log-probability) is read by JAX's guarded gather, at the label
// wrapped into [0, C) when negative (t < 0 ? t + 10 : t), NaN when the
// wrapped label is still outside [0, 10). The wrap stays a generic before
// the op, the op reads its result collapsed to the labels' shape (its
// region expands it back); the guarded read is the op's own convention for
// a target outside [0, C) (NaN), and without an ignore mask the op's
// ignore_index is the lowest i64, which no i32 label equals. optax's mean
// divides by N, the op's mean (nothing ignored) too.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=mean '-DTY=tensor<f32>'
// The raised program on a GPU, where the label wrap that stays around the op is
// a kernel too (xent-host-compute-to-device), in the same stream as the
// fused loss; no host loop over the device buffers, no host allocation.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.fused.mlir --xent-recognize --xent-gpu-pipeline=format=isa | FileCheck %s --check-prefix=GPU
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.linalg.mlir --xent-recognize --xent-gpu-pipeline=format=isa | FileCheck %s --check-prefix=GPU
// GPU-NOT:     llvm.call @malloc
// GPU:         gpu.launch_func <%[[S:.*]] : !llvm.ptr> @main_kernel{{(_[0-9]+)?}}::@main_kernel
// GPU-NOT:     llvm.call @malloc
// GPU:         gpu.launch_func <%[[S]] : !llvm.ptr> @xent_kernels::@xent_loss_0
// GPU-NOT:     llvm.call @malloc
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_sum.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=sum '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_none.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=none '-DTY=tensor<8xf32>'
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER3 -DRED=mean '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=mean '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_sum.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=sum '-DTY=tensor<f32>'
// RUN: xent-opt %S/Inputs/frontends/jax/optax_int_none.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=none '-DTY=tensor<8xf32>'
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefixes=GATHER,GATHER2 -DRED=mean '-DTY=tensor<f32>'
// GATHER-LABEL: func.func public @main(
// GATHER-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// GATHER-NOT:   xent.
// GATHER3:      %[[W:.*]] = linalg.generic
// GATHER3-NEXT:   ^bb0
// GATHER3-NEXT:     arith.addi
// GATHER3-NEXT:     arith.cmpi slt
// GATHER3-NEXT:     arith.select
// GATHER2:      arith.cmpi slt
// GATHER2:      arith.addi
// GATHER2:      %[[W:.*]] = linalg.generic
// GATHER2-NEXT:   ^bb0
// GATHER2-NEXT:     arith.select
// GATHER3:      %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1, 2]] : tensor<8x1x1xi32> into tensor<8xi32>
// GATHER2:      %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1]] : tensor<8x1xi32> into tensor<8xi32>
// GATHER-NEXT:  %[[L:.*]] = xent.cross_entropy [[RED]] %[[X]], %[[WC]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> [[TY]] decomposition {
// GATHER-NEXT:  ^bb0(%{{.*}}: tensor<8x10xf32>, %[[A:.*]]: tensor<8xi32>):
// GATHER-NEXT:    tensor.expand_shape %[[A]]
// GATHER:         0x7FC00000
// GATHER:         arith.maxsi
// GATHER:         arith.minsi
// GATHER:         tensor.extract
// GATHER:         xent.yield
// GATHER:       return %[[L]] : [[TY]]

// optax.smooth_labels, unfused: the smoothed one-hot 0.9 · one_hot + 0.01 is
// a tensor, which the op takes as probability targets (for a label outside
// [0, 10) the chain's row is 0.01 everywhere, and so is the op's target).
// Fused into the reduction's body, the smoothed labels are no tensor: the
// pass builds that tensor (a linalg.generic over the logits' dimensions,
// the one-hot's compare of the label with the class position) and the op
// takes it as above. Integer labels with label_smoothing would give a label
// outside [0, 10) NaN (or 0, ignored) where the chain gives 0.01 · Σ -logp.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=SMOOTH
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=SMOOTH
// SMOOTH-LABEL: func.func public @main(
// SMOOTH-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// SMOOTH:       arith.cmpi eq
// SMOOTH:       arith.uitofp
// SMOOTH:         arith.mulf
// SMOOTH:         arith.addf
// SMOOTH:       %[[L:.*]] = xent.cross_entropy mean %[[X]], %[[Q:.*]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
// SMOOTH-NOT:   xent.cross_entropy
// SMOOTH:       return %[[L]] : tensor<f32>
// The fused form's targets, built beside the op: the label read along the
// rows, the class position, 0.9 and 0.01 as JAX rounded them.
// RUN: xent-opt %S/Inputs/frontends/jax/optax_smoothed_mean.fused.mlir --xent-recognize | FileCheck %s --check-prefix=SMOOTHFUSED
// SMOOTHFUSED-DAG:   #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// SMOOTHFUSED-DAG:   #[[ALL:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// SMOOTHFUSED:       %[[Q:.*]] = linalg.generic {indexing_maps = [#[[ROWS]], #[[ALL]]], iterator_types = ["parallel", "parallel"]} ins(%[[T:.*]] : tensor<8xi32>) outs(%{{.*}} : tensor<8x10xf32>)
// SMOOTHFUSED-NEXT:  ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// SMOOTHFUSED-NEXT:    %[[C:.*]] = linalg.index 1 : index
// SMOOTHFUSED-NEXT:    %[[CI:.*]] = arith.index_cast %[[C]] : index to i32
// SMOOTHFUSED-NEXT:    %[[HOT:.*]] = arith.cmpi eq, %[[IN]], %[[CI]] : i32
// SMOOTHFUSED-NEXT:    %[[F:.*]] = arith.uitofp %[[HOT]] : i1 to f32
// SMOOTHFUSED-NEXT:    %[[K:.*]] = arith.constant 0.899999976 : f32
// SMOOTHFUSED-NEXT:    %[[M:.*]] = arith.mulf %[[F]], %[[K]] : f32
// SMOOTHFUSED-NEXT:    %[[E:.*]] = arith.constant 0.00999999977 : f32
// SMOOTHFUSED-NEXT:    %[[Y:.*]] = arith.addf %[[M]], %[[E]] : f32
// SMOOTHFUSED-NEXT:    linalg.yield %[[Y]] : f32
// SMOOTHFUSED:       xent.cross_entropy mean %{{.*}}, %[[Q]] : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>{{$}}

// t5x's z-loss on one-hot labels, mean(nll + 1e-4 · lse²): for a label
// outside [0, 10) the chain keeps the element's z · lse², which the op,
// ignoring the label, leaves out. The op sums (labels outside ignored as
// -1, z_loss_scale, its lse returned); a generic adds z · lse² of the labels
// outside [0, 10) to that sum, from the op's lse; the mean divides by the 8
// elements.
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.fused.mlir --xent-recognize | FileCheck %s --check-prefix=ZLOSS
// RUN: xent-opt %S/Inputs/frontends/jax/t5x_z_loss.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=ZLOSS
// ZLOSS-LABEL: func.func public @main(
// ZLOSS-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>)
// ZLOSS-DAG:   %[[C10:.*]] = arith.constant 10 : i32
// ZLOSS-DAG:   %[[C0:.*]] = arith.constant 0 : i32
// ZLOSS:       %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<8xi32>)
// ZLOSS:       %[[S:.*]], %[[LSE:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -1 : i64, return_lse, z_loss_scale = 9.99999974E-5 : f32} : (tensor<8x10xf32>, tensor<8xi32>) -> (tensor<f32>, tensor<8xf32>)
// ZLOSS:       %[[Z:.*]] = arith.constant 9.99999974E-5 : f32
// ZLOSS:       %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// ZLOSS:       %[[TOT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[LSE]], %[[T]] : tensor<8xf32>, tensor<8xi32>) outs(%[[S]] : tensor<f32>)
// ZLOSS-NEXT:  ^bb0(%[[L:.*]]: f32, %[[LAB:.*]]: i32, %[[ACC:.*]]: f32):
// ZLOSS-DAG:     %[[HI:.*]] = arith.cmpi sge, %[[LAB]], %{{.*}} : i32
// ZLOSS-DAG:     %[[LO:.*]] = arith.cmpi slt, %[[LAB]], %{{.*}} : i32
// ZLOSS:         %[[OUT:.*]] = arith.ori
// ZLOSS:         %[[SQ:.*]] = arith.mulf %[[L]], %[[L]] : f32
// ZLOSS:         %[[ZL:.*]] = arith.mulf %[[SQ]], %[[Z]] : f32
// ZLOSS:         %[[V:.*]] = arith.select %[[OUT]], %[[ZL]], %[[ZERO]] : f32
// ZLOSS:         %[[NEW:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// ZLOSS:         linalg.yield %[[NEW]] : f32
// ZLOSS:       %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[TOT]] : tensor<f32>)
// ZLOSS:         arith.divf %{{.*}}, %{{.*}} : f32
// ZLOSS:       return %[[MEAN]] : tensor<f32>

// take_along_axis with a float mask, (nll · mask).sum() / mask.sum(): the
// op has no operand for a float per element (it weighs classes and ignores
// by target; even a 0/1 mask differs where the loss is NaN: 0 · NaN is NaN,
// an ignored element is not). The op computes the loss per element (none,
// JAX's guarded gather as its NaN for labels outside [0, C)); a generic
// multiplies it by the mask and sums; the division by the mask's sum stays
// as JAX wrote it.
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.fused.mlir --xent-recognize | FileCheck %s --check-prefix=MASKED
// RUN: xent-opt %S/Inputs/frontends/jax/take_along_axis_masked.linalg.mlir --xent-recognize | FileCheck %s --check-prefix=MASKED
// MASKED-LABEL: func.func public @main(
// MASKED-SAME:  %[[X:[a-z0-9_]+]]: tensor<8x10xf32>, %[[T:[a-z0-9_]+]]: tensor<8xi32>, %[[M:[a-z0-9_]+]]: tensor<8xf32>)
// MASKED:       %[[WC:.*]] = tensor.collapse_shape
// MASKED:       %[[L:.*]] = xent.cross_entropy none %[[X]], %[[WC]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<8xf32>{{$}}
// MASKED:       %[[NUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[L]], %[[M]] : tensor<8xf32>, tensor<8xf32>)
// MASKED-NEXT:  ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f32):
// MASKED-NEXT:    %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// MASKED-NEXT:    %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// MASKED-NEXT:    linalg.yield %[[S]] : f32
// MASKED:       %[[DEN:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<8xf32>)
// MASKED:       %[[R:.*]] = linalg.generic {{.*}} ins(%[[NUM]], %[[DEN]] : tensor<f32>, tensor<f32>)
// MASKED:         arith.divf
// MASKED:       return %[[R]] : tensor<f32>

