// The chunk size of the linear lowering: linear-chunk-rows fixes it;
// otherwise it is the most multiples of 128 rows whose f32 logits fit in
// linear-chunk-mib (V = 1000: rows of 4000 bytes, 262 rows in 1 MiB → 256),
// never fewer than 128. xent-gpu-pipeline takes the same options, and lowers
// the GEMM calls to calls of the runtime's functions with each memref
// expanded (allocated and aligned pointers, offset, sizes, strides).

// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-rows=64" --canonicalize | FileCheck %s --check-prefix=ROWS
// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-mib=1" --canonicalize | FileCheck %s --check-prefix=MIB
// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-mib=3 linear-chunk-rows=0" --canonicalize | FileCheck %s --check-prefix=MIB3
// RUN: xent-opt %s --convert-xent-to-gpu="linear-chunk-mib=100000" --canonicalize | FileCheck %s --check-prefix=BIG
// RUN: xent-opt %s --xent-gpu-pipeline="linear-chunk-rows=64 format=isa" | FileCheck %s --check-prefix=PIPELINE

// ROWS:      %[[N:.*]] = memref.dim %{{.*}}, %c0
// ROWS:      arith.minui %[[N]], %c64
// ROWS:      scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c64
// MIB-LABEL: func.func @f
// MIB:       scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c256
// V = 8192: 32 rows fit in 1 MiB; the chunk has 128.
// MIB-LABEL: func.func @wide
// MIB:       scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c128
// MIB3:      scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c768
// BIG:       scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c26214400

// PIPELINE-DAG: llvm.func @xentGemm_bf16_f32(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i32, i32, f32, f32)
// PIPELINE-DAG: llvm.func @xentGemm_bf16_bf16(
// PIPELINE-DAG: llvm.call @xentGemm_bf16_f32(
// PIPELINE-DAG: llvm.call @xentGemm_bf16_bf16(
// PIPELINE-DAG: llvm.mlir.constant(64 : index)
// PIPELINE-DAG: gpu.binary @xent_kernels
func.func @f(%g: tensor<f32>, %h: tensor<?x64xbf16>, %w: tensor<1000x64xbf16>, %t: tensor<?xi64>)
    -> (tensor<f32>, tensor<?x64xbf16>, tensor<1000x64xbf16>) {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad sum %g, %h, %w, %t
      : (tensor<f32>, tensor<?x64xbf16>, tensor<1000x64xbf16>, tensor<?xi64>)
      -> (tensor<f32>, tensor<?x64xbf16>, tensor<1000x64xbf16>)
  return %l, %dh, %dw : tensor<f32>, tensor<?x64xbf16>, tensor<1000x64xbf16>
}

func.func @wide(%h: tensor<?x64xbf16>, %w: tensor<8192x64xbf16>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = xent.linear_cross_entropy sum %h, %w, %t : (tensor<?x64xbf16>, tensor<8192x64xbf16>, tensor<?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// [B, T, H] with B and T both dynamic goes through the whole pipeline: the
// body collapses the buffers' rows (memref.collapse_shape); nothing expands
// a dimension into two dynamic ones (which LLVM 22's
// expand-strided-metadata crashes on).
// PIPELINE-DAG: llvm.func @_mlir_ciface_rows3d(
func.func @rows3d(%g: tensor<?x?xf32>, %h: tensor<?x?x64xbf16>, %w: tensor<?x64xbf16>, %t: tensor<?x?xi64>)
    -> (tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>) attributes {llvm.emit_c_interface} {
  %l, %dh, %dw = xent.linear_cross_entropy_and_grad none %g, %h, %w, %t
      : (tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>, tensor<?x?xi64>)
      -> (tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>)
  return %l, %dh, %dw : tensor<?x?xf32>, tensor<?x?x64xbf16>, tensor<?x64xbf16>
}
