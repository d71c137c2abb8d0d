// xent-cpu-pipeline's native-bf16: bf16 <-> f32 conversions left to LLVM
// (fpext / fptrunc, which a CPU with AVX512-BF16 runs as vcvtneps2bf16);
// by default they are expanded to integer ops, which every CPU runs
// (LLVM's fptrunc to bf16 would call __truncsfbf2, missing from Debian 12's
// libgcc).
// RUN: xent-opt %s --xent-cpu-pipeline="native-bf16=true threads=1" | FileCheck %s --check-prefix=NATIVE
// RUN: xent-opt %s --xent-cpu-pipeline="threads=1" | FileCheck %s --check-prefix=PORTABLE

// NATIVE-LABEL: llvm.func @joint
// NATIVE: llvm.fpext %{{.*}} : vector<{{[0-9]+}}xbf16> to vector<{{[0-9]+}}xf32>
// NATIVE: llvm.fptrunc %{{.*}} : vector<{{[0-9]+}}xf32> to vector<{{[0-9]+}}xbf16>

// PORTABLE-LABEL: llvm.func @joint
// PORTABLE-NOT: llvm.fptrunc {{.*}}bf16
// PORTABLE-NOT: llvm.fpext {{.*}}bf16
// PORTABLE: llvm.return
func.func @joint(%g: tensor<f32>, %x: tensor<?x?xbf16>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>) attributes {llvm.emit_c_interface} {
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<?x?xbf16>, tensor<?xi64>) -> (tensor<f32>, tensor<?x?xbf16>)
  return %l, %d : tensor<f32>, tensor<?x?xbf16>
}
