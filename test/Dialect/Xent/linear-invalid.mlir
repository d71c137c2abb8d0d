// RUN: xent-opt %s -split-input-file -verify-diagnostics

func.func @hidden_rank(%h: tensor<64xf32>, %w: tensor<100x64xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op hidden must have rank 2 ([N, H]) or 3 ([B, T, H]), got rank 1}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<64xf32>, tensor<100x64xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @weight_rank(%h: tensor<8x64xf32>, %w: tensor<2x100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op weight must have rank 2 ([V, H]), got rank 3}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<2x100x64xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @weight_element_type(%h: tensor<8x64xf32>, %w: tensor<100x64xbf16>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op weight element type 'bf16' must be the hidden element type 'f32'}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xbf16>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @features(%h: tensor<8x64xf32>, %w: tensor<100x32xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op weight has 32 features but hidden has 64}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x32xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @no_classes(%h: tensor<8x64xf32>, %w: tensor<0x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op weight must have at least one class}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<0x64xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @bias_rank(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<1x100xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op bias must have rank 1, got rank 2}}
  %r = xent.linear_cross_entropy mean %h, %w bias %b, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<1x100xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @bias_element_type(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<100xf16>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op bias element type 'f16' must be the hidden element type 'f32'}}
  %r = xent.linear_cross_entropy mean %h, %w bias %b, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf16>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @bias_size(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<99xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op bias has 99 elements but weight has 100 classes}}
  %r = xent.linear_cross_entropy mean %h, %w bias %b, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<99xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @label_smoothing(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op label_smoothing must be in [0, 1], got 1.5}}
  %r = xent.linear_cross_entropy mean %h, %w, %t {label_smoothing = 1.5 : f32} : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @z_loss_scale(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op z_loss_scale must be finite and non-negative, got -1}}
  %r = xent.linear_cross_entropy mean %h, %w, %t {z_loss_scale = -1.0 : f32} : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @softcap(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op softcap must be finite and positive, got 0}}
  %r = xent.linear_cross_entropy mean %h, %w, %t {softcap = 0.0 : f32} : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @target_shape(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<2x4xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op target shape [2, 4] must be the hidden shape without its last dimension [8]}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<2x4xi64>) -> tensor<f32>
  return
}

// -----

func.func @target_rows(%h: tensor<?x4x64xf32>, %w: tensor<100x64xf32>, %t: tensor<3x5xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op target shape [3, 5] must be the hidden shape without its last dimension [?, 4]}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<?x4x64xf32>, tensor<100x64xf32>, tensor<3x5xi64>) -> tensor<f32>
  return
}

// -----

func.func @probability_target(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8x100xf32>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8x100xf32>) -> tensor<f32>
  return
}

// -----

func.func @class_weight_rank(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>, %cw: tensor<1x100xf32>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op class_weight must have rank 1, got rank 2}}
  %r = xent.linear_cross_entropy mean %h, %w, %t class_weight %cw : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>, tensor<1x100xf32>) -> tensor<f32>
  return
}

// -----

func.func @class_weight_size(%h: tensor<8x64xf32>, %w: tensor<?x64xf32>, %b: tensor<100xf32>, %t: tensor<8xi64>, %cw: tensor<7xf32>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op class_weight has 7 elements but the projection has 100 classes}}
  %r = xent.linear_cross_entropy mean %h, %w bias %b, %t class_weight %cw : (tensor<8x64xf32>, tensor<?x64xf32>, tensor<100xf32>, tensor<8xi64>, tensor<7xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_element_type(%h: tensor<8x64xbf16>, %w: tensor<100x64xbf16>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op loss element type 'f16' must be f32 or the hidden element type 'bf16'}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xbf16>, tensor<100x64xbf16>, tensor<8xi64>) -> tensor<f16>
  return
}

// -----

func.func @loss_shape(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op loss shape [8] must be [] for reduction 'mean'}}
  %r = xent.linear_cross_entropy mean %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @z_loss_shape(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op z_loss shape [7] must be [8] for reduction 'none'}}
  %r:2 = xent.linear_cross_entropy none %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8xf32>, tensor<7xf32>)
  return
}

// -----

func.func @grad_output_shape(%g: tensor<8xf32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op grad_output shape [8] must be [] for reduction 'sum'}}
  %r:2 = xent.linear_cross_entropy_grad sum %g, %h, %w, %t : (tensor<8xf32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>)
  return
}

// -----

func.func @d_hidden_type(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op d_hidden type 'tensor<8x64xbf16>' must match the type 'tensor<8x64xf32>' of its operand}}
  %r:2 = xent.linear_cross_entropy_grad sum %g, %h, %w, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xbf16>, tensor<100x64xf32>)
  return
}

// -----

func.func @d_hidden_rows(%g: tensor<8xf32>, %h: tensor<?x64xf32>, %w: tensor<100x64xf32>, %t: tensor<?xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op d_hidden type 'tensor<4x64xf32>' must match the type 'tensor<?x64xf32>' of its operand}}
  %r:2 = xent.linear_cross_entropy_grad none %g, %h, %w, %t : (tensor<8xf32>, tensor<?x64xf32>, tensor<100x64xf32>, tensor<?xi64>) -> (tensor<4x64xf32>, tensor<100x64xf32>)
  return
}

// -----

func.func @d_weight_type(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op d_weight type 'tensor<100x32xf32>' must match the type 'tensor<100x64xf32>' of its operand}}
  %r:2 = xent.linear_cross_entropy_grad sum %g, %h, %w, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x32xf32>)
  return
}

// -----

func.func @missing_d_bias(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<100xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op has a bias but no d_bias result}}
  %r:2 = xent.linear_cross_entropy_grad sum %g, %h, %w bias %b, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>)
  return
}

// -----

func.func @d_bias_without_bias(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_grad' op has a d_bias result but no bias}}
  %r:3 = xent.linear_cross_entropy_grad sum %g, %h, %w, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>)
  return
}

// -----

func.func @d_bias_type(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %b: tensor<100xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_and_grad' op d_bias type 'tensor<100xf16>' must match the type 'tensor<100xf32>' of its operand}}
  %r:4 = xent.linear_cross_entropy_and_grad sum %g, %h, %w bias %b, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<100xf16>)
  return
}

// -----

func.func @joint_loss_shape(%g: tensor<8xf32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy_and_grad' op loss shape [] must be [8] for reduction 'none'}}
  %r:3 = xent.linear_cross_entropy_and_grad none %g, %h, %w, %t : (tensor<8xf32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>)
  return
}

// -----

func.func @decomposition_arguments(%h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'xent.linear_cross_entropy' op decomposition block must have 3 arguments (one per operand), got 1}}
  %r = xent.linear_cross_entropy sum %h, %w, %t : (tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<8x64xf32>):
    %z = tensor.empty() : tensor<f32>
    xent.yield %z : tensor<f32>
  }
  return
}

// -----

func.func @joint_result_count(%g: tensor<f32>, %h: tensor<8x64xf32>, %w: tensor<100x64xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{expected 3 or 4 result types (loss, optional z_loss, d_hidden, d_weight), got 2}}
  %r:2 = xent.linear_cross_entropy_and_grad sum %g, %h, %w, %t : (tensor<f32>, tensor<8x64xf32>, tensor<100x64xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x64xf32>)
  return
}
