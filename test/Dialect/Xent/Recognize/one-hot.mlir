// RUN: xent-opt %S/Inputs/one_hot.mlir --xent-recognize | FileCheck %s

// A one-hot pick reads nothing for a label outside [0, C); such labels go
// to the op as its ignore index. A mean by the kept count counts them
// (they are not -100), so the op sums and the sum is divided by the count
// of labels other than -100, as the chain divides
// (docs/recognition.md, "One-hot labels outside [0, C)").

// CHECK-LABEL: func.func @masked_mean
// CHECK-SAME: (%[[X:.*]]: tensor<6x5xf32>, %[[T:.*]]: tensor<6xi64>)
// CHECK: %[[TR:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<6xi64>)
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt, %{{.*}}, %c5_i64 : i64
// CHECK: arith.select %{{.*}}, %{{.*}}, %c-100_i64 : i64
// CHECK: %[[S:.*]] = xent.cross_entropy sum %[[X]], %[[TR]] {ignore_index = -100 : i64} : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<f32>
// CHECK-NOT: decomposition
// CHECK: %[[N:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[T]] : tensor<6xi64>)
// CHECK: %[[KEPT:.*]] = arith.cmpi ne, %{{.*}}, %c-100_i64{{.*}} : i64
// CHECK: arith.uitofp %[[KEPT]] : i1 to f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%[[S]], %[[N]] : tensor<f32>, tensor<f32>)
// CHECK: arith.divf
// CHECK: return %[[L]] : tensor<f32>
