// The drop-in's entry module under runtime scalars
// (Inputs/runtime-scalars-entry.mlir: python/src/xent/runtime/kernels.py,
// kernel_module(kernel_config(dtype="bf16", target="i64", rank=2,
// weighted=True, reduction="mean", label_smoothing=0.1, z_loss_scale=1e-4,
// softcap=30.0, with_grad=True, runtime_scalars=True)); the copy is checked
// against kernel_module by python/tests/test_runtime_scalar_configs.py)
// through the whole GPU pipeline as the drop-in compiles it, down to a
// cubin's PTX assembled by ptxas for sm_90: the kernels take the values as
// parameters, no stack frame and no spills.
// REQUIRES: ptxas

// RUN: xent-opt %S/Inputs/runtime-scalars-entry.mlir --xent-gpu-pipeline="chip=sm_90 threads=512 resident-rows=true format=isa" \
// RUN:   | %python %xent_src/utils/extract_ptx.py xent_kernels > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=__nv_ < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log

// The prologue's last parameter is ignore_index (u64); the row kernel's
// last three are ε, z and the softcap (after ignore_index).
// PTX: .target sm_90
// PTX: .entry xent_prologue_0(
// PTX: .param .u64 xent_prologue_0_param_{{[0-9]+}}{{$}}
// PTX-NEXT: )
// PTX: .entry xent_loss_grad_0(
// PTX: .param .f32 xent_loss_grad_0_param_{{[0-9]+}},
// PTX-NEXT: .param .f32 xent_loss_grad_0_param_{{[0-9]+}},
// PTX-NEXT: .param .f32 xent_loss_grad_0_param_{{[0-9]+}}{{$}}
// PTX-NEXT: )
// PTX: ld.param.b32

// PTXAS-DAG: Compiling entry function 'xent_prologue_0' for 'sm_90'
// PTXAS-DAG: Compiling entry function 'xent_loss_grad_0' for 'sm_90'
// PTXAS-DAG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
