// REQUIRES: ptxas
// RUN: xent-opt %s --split-input-file --xent-compress-gpu-binaries --verify-diagnostics | FileCheck %s
// RUN: not xent-opt %s --xent-compress-gpu-binaries=mode=tiny 2>&1 | FileCheck %s --check-prefix=MODE

// xent-compress-gpu-binaries on its own: a cubin fatbinary refuses is a
// diagnostic with fatbinary's message; objects of other formats are left as
// they are; a compression mode fatbinary does not have is refused before
// any work.

// MODE: error: xent-compress-gpu-binaries: mode must be default, size, speed or balance, got 'tiny'

module attributes {gpu.container_module} {
  // CHECK: gpu.binary @ptx [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0">]
  gpu.binary @ptx [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0">]
}

// -----

module attributes {gpu.container_module} {
  // expected-error@below {{fatbinary failed (exit 1): nvFatbin error: fatbinary elf mismatch}}
  gpu.binary @bad [#gpu.object<#nvvm.target<chip = "sm_90">, bin = "not a cubin">]
}
