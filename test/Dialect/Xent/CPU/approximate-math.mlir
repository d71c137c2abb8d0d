// xent-cpu-approximate-math: f32 exp, log and tanh as polynomials (no libm
// call, vectorizable); other types and functions are left alone.
// RUN: xent-opt %s --xent-cpu-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @f32_vector
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: return
func.func @f32_vector(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %e = math.exp %x : vector<16xf32>
  %l = math.log %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  return %e, %l, %t : vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// CHECK-LABEL: func.func @f32_scalar
// CHECK-NOT: math.exp
// CHECK: arith.bitcast
// CHECK: return
func.func @f32_scalar(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}

// CHECK-LABEL: func.func @left_alone
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f32
func.func @left_alone(%x: f64, %y: f32) -> (f64, f32) {
  %e = math.exp %x : f64
  %s = math.sin %y : f32
  return %e, %s : f64, f32
}
