// The plugin loads into the stock mlir-opt of the LLVM installation through
// both plugin interfaces. Pass plugins are loaded after the command line is
// parsed, so their passes are named in --pass-pipeline.

// RUN: %stock_mlir_opt %s --load-dialect-plugin=%xent_libs/XentPlugin%shlibext \
// RUN:   | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: %stock_mlir_opt %s --load-dialect-plugin=%xent_libs/XentPlugin%shlibext \
// RUN:   --load-pass-plugin=%xent_libs/XentPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(xent-materialize-decomposition)" \
// RUN:   | FileCheck %s --check-prefix=MATERIALIZE
// RUN: %stock_mlir_opt %s --load-dialect-plugin=%xent_libs/XentPlugin%shlibext \
// RUN:   --load-pass-plugin=%xent_libs/XentPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(xent-cpu-pipeline)" \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN:   | FileCheck %s --check-prefix=EXEC

// ROUNDTRIP: xent.cross_entropy mean %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
// MATERIALIZE: xent.cross_entropy mean {{.*}} decomposition {
// MATERIALIZE: math.exp
// MATERIALIZE: xent.yield

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  // Row 0: lse = log(e^1 + e^2 + e^3) = 3.40760596, target 2 -> 0.40760596
  // Row 1: lse = log(3), target 0 -> 1.09861229
  // mean: 0.75310913
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]> : tensor<2x3xf32>
  %t = arith.constant dense<[2, 0]> : tensor<2xi64>
  %l = xent.cross_entropy mean %x, %t : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %u = tensor.cast %l : tensor<f32> to tensor<*xf32>
  // EXEC: data =
  // EXEC-NEXT: [0.753109]
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
