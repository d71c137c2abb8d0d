// Found by xent-fuzz-op (docs/reliability.md): convert-xent-to-gpu viewed the
// logits through memref.collapse_shape with the result type that upstream
// infers, which is a static 0 for a reassociation group holding a 0 and a
// dynamic size; the op's verifier rejects that ("collapsed dim must be
// dynamic if and only if reassociation group is dynamic"). The lowering now
// builds that type itself.

// RUN: xent-opt %s --convert-xent-to-gpu | FileCheck %s
// RUN: xent-opt %s --convert-xent-to-gpu --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s
// CHECK: gpu.launch_func

func.func @f(%x: tensor<2x16x?x0xf32>, %t: tensor<2x?x0xi64>) -> tensor<2x?x0xf32> {
  %l = xent.cross_entropy none %x, %t : (tensor<2x16x?x0xf32>, tensor<2x?x0xi64>) -> tensor<2x?x0xf32>
  return %l : tensor<2x?x0xf32>
}
