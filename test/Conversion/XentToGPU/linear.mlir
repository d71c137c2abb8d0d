// The linear family on the GPU: one xent.launch per op whose body loops over
// chunks of rows. Each chunk's f32 logits come from the runtime's cuBLASLt
// GEMM (hidden · weightᵀ + bias: transB = 1, beta 0), the row kernel
// computes the loss and writes dlogits (for bf16/f16 rounded to that type
// into a buffer of their own; for f32 over the logits: the same buffer is
// its x and its dlogits), and the gradients are GEMMs again: d_hidden
// rows (beta 0), d_weight and d_bias accumulated with beta 0 on the first
// chunk and 1 after it (into f32 scratch, rounded once after the loop, for
// bf16/f16; into the result itself for f32).

// RUN: xent-opt %s --convert-xent-to-gpu --cse | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu --remarks-filter=convert-xent-to-gpu --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: xent-opt %s --convert-xent-to-gpu=mode=inline | FileCheck %s --check-prefix=INLINE
// RUN: xent-opt %s --convert-xent-to-gpu --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUFFERS

// REMARK: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=joint | ChunkRows="auto (f32 logits <= 1024 MiB)", Gemms="xentGemmBias_bf16_f32, xentGemm_bf16_bf16, xentGemm_bf16_f32", Kernels="xent_linear_convert_0, xent_prologue_0, xent_loss_grad_0, xent_linear_convert_1, xent_convert_0", Reason="mode=auto, and the kernels take this op", Remark="lowered to row chunks: cuBLASLt GEMMs and the fused kernels in place over each chunk's logits"
// REMARK: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=per_row_f32 | ChunkRows="auto (f32 logits <= 1024 MiB)", Gemms=xentGemm_f32_f32, Kernels=xent_loss_grad_1
// REMARK: remark: [Passed] kernel | Category:convert-xent-to-gpu | Function=loss_only | ChunkRows="auto (f32 logits <= 1024 MiB)", Gemms=xentGemm_f16_f32, Kernels="xent_prologue_1, xent_loss_0, xent_convert_1"

// The runtime's GEMMs, declared once.
// CHECK-DAG: func.func private @xentGemm_bf16_f32(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32)
// CHECK-DAG: func.func private @xentGemm_bf16_bf16(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32, f32, f32)
// CHECK-DAG: func.func private @xentGemmBias_bf16_f32(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32, f32, f32)
// CHECK-DAG: func.func private @xentGemm_f32_f32(
// CHECK-DAG: func.func private @xentGemm_f16_f32(

// CHECK-LABEL: func.func @joint
// CHECK:       xent.launch ins({{.*}}) dims({{.*}}) tied [-1, -1, -1, -1]
// CHECK-NEXT:  ^bb0(%[[G:.*]]: memref<f32, strided<[], offset: ?>>, %[[H:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[W:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[B:.*]]: memref<?xbf16, strided<[?], offset: ?>>, %[[T:.*]]: memref<?xi64, strided<[?], offset: ?>>, %[[L:.*]]: memref<f32, strided<[], offset: ?>>, %[[DH:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[DW:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[DB:.*]]: memref<?xbf16, strided<[?], offset: ?>>):
// The chunk: the most multiples of 128 rows whose f32 logits (rows padded
// to 16 bytes) fit in 1 GiB, at least 128.
// CHECK:         %[[V:.*]] = memref.dim %[[W]], %c0
// CHECK:         %[[LD:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK:         %[[ROWBYTES:.*]] = arith.muli %[[LD]], %c4 : index
// CHECK:         arith.divui %c1073741824, %{{.*}}
// CHECK:         %[[ROWS:.*]] = arith.maxui %{{.*}}, %c128 : index
// CHECK:         %[[CHUNK_ROWS:.*]] = arith.maxui %{{.*}}, %c1 : index
// CHECK:         %[[LOGITS:.*]] = gpu.alloc  (%[[CHUNK_ROWS]], %[[LD]]) : memref<?x?xf32>
// CHECK:         %[[LOW:.*]] = gpu.alloc  (%[[CHUNK_ROWS]], %{{.*}}) : memref<?x?xbf16>
// CHECK:         %[[DW32:.*]] = gpu.alloc  (%[[V]], %{{.*}}) : memref<?x?xf32>
// CHECK:         %[[DB32:.*]] = gpu.alloc  (%[[V]]) : memref<?xf32>
// CHECK:         %[[ONES:.*]] = gpu.alloc  (%{{.*}}) : memref<?xbf16>
// CHECK:         gpu.memset  %[[ONES]], %{{.*}} : memref<?xbf16>, bf16
// The bias in f32 for the GEMM's epilogue.
// CHECK:         %[[BIAS32:.*]] = gpu.alloc  (%[[V]]) : memref<?xf32>
// CHECK:         %[[BIAS:.*]] = memref.cast %[[BIAS32]]
// CHECK:         gpu.launch_func  @xent_kernels::@xent_linear_convert_0
// The mean's kept weight and count over all rows, and the loss's f64
// accumulator (the chunks' launches add to it; the loss is rounded from it
// after the last chunk).
// CHECK:         %[[STATS:.*]] = gpu.alloc  () : memref<6xf64>
// CHECK:         gpu.launch_func  @xent_kernels::@xent_prologue_0 {{.*}} args(%[[T]] : {{.*}}, %[[STATS]] : memref<6xf64>, %{{.*}} : i64)
// CHECK:         scf.for %[[I:.*]] = %c0{{.*}} to %{{.*}} step %[[ROWS]] {
// CHECK:           %[[R:.*]] = arith.minui %[[ROWS]],
// CHECK:           %[[HC:.*]] = memref.subview %[[H]][%[[I]], 0] [%[[R]], %{{.*}}] [1, 1]
// CHECK:           %[[TC:.*]] = memref.subview %[[T]][%[[I]]] [%[[R]]] [1]
// CHECK:           %[[CHUNK:.*]] = memref.subview %[[LOGITS]][0, 0] [%[[R]], %[[V]]] [1, 1]
// CHECK:           %[[X:.*]] = memref.cast %[[CHUNK]]
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[NOT:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[TRANS:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// logits = h · weightᵀ + bias
// CHECK:           func.call @xentGemmBias_bf16_f32(%[[HC]], %[[W]], %[[BIAS]], %[[X]], %[[NOT]], %[[TRANS]], %[[ONE]], %[[ZERO]])
// The loss from the f32 logits, and dlogits rounded to bf16 (the
// tensor-core GEMMs' operand) into a buffer of their own.
// CHECK:           %[[DLV:.*]] = memref.subview %[[LOW]][0, 0] [%[[R]], %[[V]]] [1, 1]
// CHECK:           %[[DL:.*]] = memref.cast %[[DLV]]
// The logits in a buffer apart from dlogits: the resident walk (one read of
// the logits) in clusters with the staging memory, where the row fits.
// CHECK:           %[[XA:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK-NEXT:      %[[DA:.*]] = memref.extract_aligned_pointer_as_index %[[DL]]
// CHECK-NEXT:      arith.cmpi ne, %[[XA]], %[[DA]]
// CHECK:           gpu.launch_func  @xent_kernels::@xent_loss_grad_0 clusters in (%{{.*}}, %c1, %c1) blocks in ({{.*}}) threads in (%c512, {{.*}}) dynamic_shared_memory_size %{{.*}} args(%[[X]] : memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[TC]] : {{.*}}, %[[STATS]] : memref<6xf64>, %[[G]] : {{.*}}, %[[DL]] : memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[II:.*]] : i64)
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[I]], %c0
// CHECK:           %[[BETA:.*]] = arith.select %[[FIRST]], %[[ZERO]], %[[ONE]] : f32
// CHECK-NOT:       xent_linear_convert
// d_hidden rows = dl · weight
// CHECK:           %[[DHC:.*]] = memref.subview %[[DH]][%[[I]], 0] [%[[R]], %{{.*}}] [1, 1]
// CHECK:           func.call @xentGemm_bf16_bf16(%[[DL]], %[[W]], %[[DHC]], %[[NOT]], %[[NOT]], %[[ONE]], %[[ZERO]])
// d_weight (f32) += dlᵀ · h
// CHECK:           %[[DWA:.*]] = memref.cast %[[DW32]]
// CHECK:           func.call @xentGemm_bf16_f32(%[[DL]], %[[HC]], %[[DWA]], %[[TRANS]], %[[NOT]], %[[ONE]], %[[BETA]])
// d_bias (f32, as 1 x V) += ones (1 x r) · dl: a GEMV
// CHECK:           %[[ONESR:.*]] = memref.reinterpret_cast {{.*}} sizes: [%c1, %[[R]]]
// CHECK:           %[[DBA:.*]] = memref.reinterpret_cast {{.*}} sizes: [%c1, %[[V]]]
// CHECK:           func.call @xentGemm_bf16_f32(%[[ONESR]], %[[DL]], %[[DBA]], %[[NOT]], %[[NOT]], %[[ONE]], %[[BETA]])
// CHECK:         }
// The f32 accumulators rounded once, the scratch freed.
// CHECK:         gpu.launch_func  @xent_kernels::@xent_linear_convert_1 {{.*}} args(%{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[DW]] :
// CHECK:         gpu.launch_func  @xent_kernels::@xent_linear_convert_1
// CHECK-DAG:     gpu.dealloc  %[[LOGITS]]
// CHECK-DAG:     gpu.dealloc  %[[LOW]]
// CHECK-DAG:     gpu.dealloc  %[[DW32]]
// CHECK-DAG:     gpu.dealloc  %[[DB32]]
// CHECK-DAG:     gpu.dealloc  %[[ONES]]
// CHECK-DAG:     gpu.dealloc  %[[BIAS32]]
// CHECK-DAG:     gpu.dealloc  %[[STATS]]
// CHECK-NOT:   xent.linear_cross_entropy
// mode=inline: the decomposition, the cross-entropy op in it too.
// INLINE-LABEL: func.func @joint
// INLINE:       linalg.matmul
// INLINE-NOT:   xent.
// INLINE-LABEL: func.func @per_row_f32
func.func @joint(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<?x64xbf16>, %b: tensor<?xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>) {
  %l, %dh, %dw, %db = xent.linear_cross_entropy_and_grad mean %g, %h, %w bias %b, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>)
  return %l, %dh, %dw, %db : tensor<f32>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?xbf16>
}

// f32, per row, [B, T, H]: the launch takes the tensors as they are and
// its body flattens the rows of each buffer; loss and grad_output sliced
// per chunk; nothing to round, so d_weight accumulates in its result and
// the chunk's dlogits feed the GEMMs as they are.
// CHECK-LABEL: func.func @per_row_f32
// CHECK:       xent.launch ins({{.*}} : tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>, tensor<2x?xi32>) dims({{.*}}) tied [-1, -1, -1] -> (tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>)
// CHECK-NEXT:  ^bb0(%[[G3:[^:]*]]: memref<?x?xf32, {{.*}}>, %[[H3:[^:]*]]: memref<?x?x?xf32, {{.*}}>, %[[W:[^:]*]]: memref<?x?xf32, {{.*}}>, %[[T3:[^:]*]]: memref<?x?xi32, {{.*}}>, %[[L3:[^:]*]]: memref<?x?xf32, {{.*}}>, %[[DH3:[^:]*]]: memref<?x?x?xf32, {{.*}}>, %[[DW:[^:]*]]: memref<?x?xf32, {{.*}}>):
// CHECK-NEXT:    %[[G:.*]] = memref.collapse_shape %[[G3]] {{\[\[}}0, 1]]
// CHECK-NEXT:    %[[H:.*]] = memref.collapse_shape %[[H3]] {{\[\[}}0, 1], [2]]
// CHECK-NEXT:    %[[T:.*]] = memref.collapse_shape %[[T3]] {{\[\[}}0, 1]]
// CHECK-NEXT:    %[[L:.*]] = memref.collapse_shape %[[L3]] {{\[\[}}0, 1]]
// CHECK-NEXT:    %[[DH:.*]] = memref.collapse_shape %[[DH3]] {{\[\[}}0, 1], [2]]
// CHECK-NOT:     gpu.launch_func {{.*}}xent_prologue
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[HC:.*]] = memref.subview %[[H]][%[[I]], 0]
// CHECK:           %[[X:.*]] = memref.cast
// CHECK:           func.call @xentGemm_f32_f32(%[[HC]], %[[W]], %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:           %[[GC:.*]] = memref.subview %[[G]][%[[I]]] [%[[R:.*]]] [1]
// CHECK:           %[[LC:.*]] = memref.subview %[[L]][%[[I]]] [%[[R]]] [1]
// CHECK:           gpu.launch_func  @xent_kernels::@xent_loss_grad_1 {{.*}} args(%[[X]] : {{.*}}, %{{.*}} : {{.*}}, %[[GC]] : {{.*}}, %[[LC]] : {{.*}}, %[[X]] :
// CHECK-NOT:       xent_linear_convert
// CHECK:           func.call @xentGemm_f32_f32(%[[X]], %[[W]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:           func.call @xentGemm_f32_f32(%[[X]], %[[HC]], %[[DW]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         }
// CHECK-NOT:     xent_linear_convert
// CHECK:       return %[[R:.*]]#0, %[[R]]#1, %[[R]]#2
func.func @per_row_f32(%g: tensor<2x?xf32>, %h: tensor<2x?x32xf32>, %w: tensor<?x32xf32>, %t: tensor<2x?xi32>)
    -> (tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad none %g, %h, %w, %t
      : (tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>, tensor<2x?xi32>)
      -> (tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>)
  return %l, %dh, %dw : tensor<2x?xf32>, tensor<2x?x32xf32>, tensor<?x32xf32>
}

// The loss alone: one GEMM per chunk, the loss kernel (no gradient), the f64
// sum converted to f16 after the loop.
// CHECK-LABEL: func.func @loss_only
// CHECK:       scf.for
// CHECK:         func.call @xentGemm_f16_f32(
// CHECK:         gpu.launch_func  @xent_kernels::@xent_loss_0
// CHECK-NOT:     func.call
// CHECK:       }
// CHECK:       gpu.launch_func  @xent_kernels::@xent_convert_1 {{.*}} args(%{{.*}} : memref<6xf64>, %{{.*}} : memref<f16, strided<[], offset: ?>>)
func.func @loss_only(%h: tensor<?x64xf16>, %w: tensor<50257x64xf16>, %t: tensor<?xi64>) -> tensor<f16> {
  %l = xent.linear_cross_entropy sum %h, %w, %t {ignore_index = 0 : i64}
      : (tensor<?x64xf16>, tensor<50257x64xf16>, tensor<?xi64>) -> tensor<f16>
  return %l : tensor<f16>
}

// Results materialized into the caller's buffers are written there: the
// launch's inits; after bufferization the only device memory the op
// allocates is its scratch, and nothing is copied.
// CHECK-LABEL: func.func @destinations
// CHECK:       xent.launch ins({{.*}} : tensor<f32>, tensor<2x?x64xbf16>, tensor<?x64xbf16>, tensor<2x?xi64>) outs({{.*}} : tensor<f32>, tensor<2x?x64xbf16>, tensor<?x64xbf16>) dims({{.*}}) tied [4, 5, 6]
// CHECK-NOT:   bufferization.materialize_in_destination
// BUFFERS-LABEL: func.func @destinations(
// BUFFERS-SAME:    %[[LOSS:[^:]*]]: memref<f32>, %[[DH:[^:]*]]: memref<2x?x64xbf16>, %[[DW:[^:]*]]: memref<?x64xbf16, strided<[?, ?], offset: ?>>)
// BUFFERS-DAG:   %[[LOSSC:.*]] = memref.cast %[[LOSS]] : memref<f32> to memref<f32, strided<[], offset: ?>>
// BUFFERS-DAG:   %[[DHC:.*]] = memref.cast %[[DH]] : memref<2x?x64xbf16> to memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>
// BUFFERS-DAG:   %[[DWC:.*]] = memref.cast %[[DW]] : memref<?x64xbf16, strided<[?, ?], offset: ?>> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// BUFFERS:       %[[DHROWS:.*]] = memref.collapse_shape %[[DHC]] {{\[\[}}0, 1], [2]]
// BUFFERS-NOT:   memref.copy
// BUFFERS:       %[[DHCHUNK:.*]] = memref.subview %[[DHROWS]][
// BUFFERS:       func.call @xentGemm_bf16_bf16(%{{.*}}, %{{.*}}, %[[DHCHUNK]],
// BUFFERS:       gpu.launch_func  @xent_kernels::@xent_linear_convert_{{.*}} args(%{{.*}} : memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[DWC]] :
// BUFFERS:       gpu.launch_func  @xent_kernels::@xent_convert_{{.*}} args(%{{.*}} : memref<6xf64>, %[[LOSSC]] : memref<f32, strided<[], offset: ?>>)
// BUFFERS-NOT:   memref.copy
// BUFFERS:       return
func.func @destinations(%g: tensor<f32>, %h: tensor<2x?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<2x?xi64>,
    %loss: memref<f32>, %dh: memref<2x?x64xbf16>, %dw: memref<?x64xbf16, strided<[?, ?], offset: ?>>) {
  %l, %a, %b = xent.linear_cross_entropy_and_grad sum %g, %h, %w, %t
      : (tensor<f32>, tensor<2x?x64xbf16>, tensor<?x64xbf16>, tensor<2x?xi64>)
      -> (tensor<f32>, tensor<2x?x64xbf16>, tensor<?x64xbf16>)
  bufferization.materialize_in_destination %l in restrict writable %loss : (tensor<f32>, memref<f32>) -> ()
  bufferization.materialize_in_destination %a in restrict writable %dh : (tensor<2x?x64xbf16>, memref<2x?x64xbf16>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %dw : (tensor<?x64xbf16>, memref<?x64xbf16, strided<[?, ?], offset: ?>>) -> ()
  return
}
