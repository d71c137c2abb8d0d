// An op of no registered dialect beside a xent op: the conversion asks each
// op whether it is one of its own without assuming a dialect (it crashed on
// the null dialect of an unregistered op), lowers the xent op and leaves the
// other as it is.

// RUN: xent-opt %s --allow-unregistered-dialect --convert-xent-to-gpu | FileCheck %s

// CHECK-LABEL: func.func @beside
// CHECK:         "test.before"()
// CHECK:         xent.launch
// CHECK:         "test.after"
// CHECK-NOT:     xent.cross_entropy
func.func @beside(%x: tensor<?x?xf32>, %t: tensor<?xi64>) -> tensor<f32> {
  "test.before"() : () -> ()
  %l = xent.cross_entropy mean %x, %t : (tensor<?x?xf32>, tensor<?xi64>) -> tensor<f32>
  "test.after"(%l) : (tensor<f32>) -> ()
  return %l : tensor<f32>
}
