// Bad pass options are diagnosed, not crashed on.

// RUN: not xent-opt %s --convert-xent-to-gpu="threads=100" 2>&1 | FileCheck %s --check-prefix=THREADS
// THREADS: error: threads must be a multiple of 32 in [32, 1024], got 100

// RUN: not xent-opt %s --convert-xent-to-gpu="threads=2048" 2>&1 | FileCheck %s --check-prefix=THREADS-BIG
// THREADS-BIG: error: threads must be a multiple of 32 in [32, 1024], got 2048

// RUN: not xent-opt %s --convert-xent-to-gpu="vector-width=3" 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: not xent-opt %s --convert-xent-to-gpu="vector-width=-4" 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: error: vector-width must be 0 (16 bytes' worth) or a power of two up to 16, got

// RUN: not xent-opt %s --convert-xent-to-gpu="chip=gfx90a" 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: chip must name an NVIDIA chip sm_80 or newer, such as 'sm_90', got 'gfx90a'

// RUN: not xent-opt %s --convert-xent-to-gpu="threads=many" 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: for the --threads option: 'many' value invalid for long argument!

// RUN: not xent-opt %s --xent-gpu-pipeline="chip=sm_7" 2>&1 | FileCheck %s --check-prefix=PIPELINE-CHIP
// PIPELINE-CHIP: error: chip must name an NVIDIA chip sm_80 or newer, such as 'sm_90', got 'sm_7'

func.func @f(%x: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
