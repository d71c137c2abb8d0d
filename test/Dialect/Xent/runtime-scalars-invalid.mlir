// RUN: xent-opt %s -split-input-file -verify-diagnostics

// A feature is given by its attribute or by an operand, never both.

func.func @both_ignore_index(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %i: i64) {
  // expected-error @+1 {{'xent.cross_entropy' op ignore_index is given both as an attribute and as an operand; give one}}
  %l = xent.cross_entropy mean %x, %t ignore_index %i {ignore_index = 0 : i64} : (tensor<4x10xf32>, tensor<4xi64>, i64) -> tensor<f32>
  return
}

// -----

func.func @both_label_smoothing(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f32) {
  // expected-error @+1 {{'xent.cross_entropy_grad' op label_smoothing is given both as an attribute and as an operand; give one}}
  %d = xent.cross_entropy_grad mean %g, %x, %t label_smoothing %e {label_smoothing = 0.1 : f32} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<4x10xf32>
  return
}

// -----

func.func @both_z_loss_scale(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %z: f32) {
  // expected-error @+1 {{'xent.cross_entropy_and_grad' op z_loss_scale is given both as an attribute and as an operand; give one}}
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t z_loss_scale %z {z_loss_scale = 0.5 : f32} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, f32) -> (tensor<f32>, tensor<4x10xf32>)
  return
}

// -----

func.func @both_softcap(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %c: f32) {
  // expected-error @+1 {{'xent.cross_entropy' op softcap is given both as an attribute and as an operand; give one}}
  %l = xent.cross_entropy mean %x, %t softcap %c {softcap = 30.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<f32>
  return
}

// -----

// A default-valued attribute at its default counts as absent.
func.func @neutral_attribute(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f32) -> tensor<f32> {
  %l = xent.cross_entropy mean %x, %t label_smoothing %e {label_smoothing = 0.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @ignore_index_with_probabilities(%x: tensor<4x10xf32>, %q: tensor<4x10xf32>, %i: i64) {
  // expected-error @+1 {{'xent.cross_entropy' op ignore_index must not be set with probability targets}}
  %l = xent.cross_entropy mean %x, %q ignore_index %i : (tensor<4x10xf32>, tensor<4x10xf32>, i64) -> tensor<f32>
  return
}

// -----

func.func @wrong_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f64) {
  // expected-error @+1 {{'xent.cross_entropy' op operand #2 must be 32-bit float, but got 'f64'}}
  %l = xent.cross_entropy mean %x, %t label_smoothing %e : (tensor<4x10xf32>, tensor<4xi64>, f64) -> tensor<f32>
  return
}

// -----

func.func @linear_both(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>, %c: f32) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op softcap is given both as an attribute and as an operand; give one}}
  %l = xent.linear_cross_entropy mean %h, %w, %t softcap %c {softcap = 3.0 : f32} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8xi64>, f32) -> tensor<f32>
  return
}

// -----

// The decomposition block's arguments include the scalars.
func.func @region_arguments(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %e: f32) {
  // expected-error @+1 {{'xent.cross_entropy' op decomposition block must have 3 arguments (one per operand), got 2}}
  %l = xent.cross_entropy sum %x, %t label_smoothing %e : (tensor<4x10xf32>, tensor<4xi64>, f32) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    %z = arith.constant dense<0.0> : tensor<f32>
    xent.yield %z : tensor<f32>
  }
  return
}
