// RUN: xent-opt %s -split-input-file -verify-diagnostics \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries"

// A destination must take its result in place; one that is read afterwards
// (here returned as it was) cannot, and the launch says so.
func.func @destination_read_later(%x: tensor<8xf32>, %d: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-error @+1 {{'xent.launch' op cannot write result #0 into its destination (operand #1) in place}}
  %r = xent.launch ins(%x : tensor<8xf32>) outs(%d : tensor<8xf32>) tied [1] -> (tensor<8xf32>) {
  ^bb0(%a: memref<8xf32>, %b: memref<8xf32>):
  }
  return %r, %d : tensor<8xf32>, tensor<8xf32>
}
