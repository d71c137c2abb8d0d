// RUN: xent-opt %s -split-input-file -verify-diagnostics

func.func @axis_out_of_range(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy' op axis 2 is out of range for logits of rank 2}}
  %l = xent.cross_entropy mean %x, %t {axis = 2 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @negative_axis(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{axis -1 is out of range for logits of rank 2}}
  %l = xent.cross_entropy mean %x, %t {axis = -1 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @scalar_logits(%x: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{logits must have at least one dimension}}
  %l = xent.cross_entropy mean %x, %t : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @no_classes(%x: tensor<4x0xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{logits must have at least one class}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x0xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @target_shape(%x: tensor<4x10xf32>, %t: tensor<5xi64>) {
  // expected-error @+1 {{class-index target shape [5] must be the logits shape without the class axis [4]}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @target_rank(%x: tensor<4x10x3xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{class-index target shape [4] must be the logits shape without the class axis [4, 3]}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10x3xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @target_type(%x: tensor<4x10xf32>, %t: tensor<4xi8>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer or 16-bit float or bfloat16 type or 32-bit float values}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi8>) -> tensor<f32>
  return
}

// -----

func.func @logits_type(%x: tensor<4x10xf64>, %t: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float values}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf64>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @probability_shape(%x: tensor<4x10xf32>, %p: tensor<4x9xf32>) {
  // expected-error @+1 {{probability target shape [4, 9] must match the logits shape [4, 10]}}
  %l = xent.cross_entropy mean %x, %p : (tensor<4x10xf32>, tensor<4x9xf32>) -> tensor<f32>
  return
}

// -----

func.func @probability_ignore_index(%x: tensor<4x10xf32>, %p: tensor<4x10xf32>) {
  // expected-error @+1 {{ignore_index must not be set with probability targets}}
  %l = xent.cross_entropy mean %x, %p {ignore_index = -100 : i64} : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<f32>
  return
}

// -----

func.func @weight_rank(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<2x5xf32>) {
  // expected-error @+1 {{weight must have rank 1, got rank 2}}
  %l = xent.cross_entropy mean %x, %t weight %w : (tensor<4x10xf32>, tensor<4xi64>, tensor<2x5xf32>) -> tensor<f32>
  return
}

// -----

func.func @weight_size(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<9xf32>) {
  // expected-error @+1 {{weight has 9 elements but logits have 10 classes}}
  %l = xent.cross_entropy mean %x, %t weight %w : (tensor<4x10xf32>, tensor<4xi64>, tensor<9xf32>) -> tensor<f32>
  return
}

// -----

func.func @mean_loss_shape(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{loss shape [4] must be [] for reduction 'mean'}}
  %l = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @none_loss_shape(%x: tensor<4x10x2xf32>, %t: tensor<4x2xi64>) {
  // expected-error @+1 {{loss shape [4] must be [4, 2] for reduction 'none'}}
  %l = xent.cross_entropy none %x, %t : (tensor<4x10x2xf32>, tensor<4x2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @z_loss_shape(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{z_loss shape [4] must be [] for reduction 'sum'}}
  %l, %z = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

// Found by xent-fuzz-op: results are f32 or the logits' element type.
func.func @loss_element_type(%x: tensor<4x10xf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{loss element type 'bf16' must be f32 or the logits' element type 'f16'}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf16>, tensor<4xi64>) -> tensor<bf16>
  return
}

// -----

func.func @z_loss_element_type(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{z_loss element type 'f16' must be f32 or the logits' element type 'bf16'}}
  %l, %z = xent.cross_entropy mean %x, %t : (tensor<4x10xbf16>, tensor<4xi64>) -> (tensor<bf16>, tensor<f16>)
  return
}

// -----

func.func @smoothing_range(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{label_smoothing must be in [0, 1], got 1.5}}
  %l = xent.cross_entropy mean %x, %t {label_smoothing = 1.5 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @smoothing_negative(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{label_smoothing must be in [0, 1], got -0.25}}
  %l = xent.cross_entropy mean %x, %t {label_smoothing = -0.25 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @softcap_zero(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{softcap must be finite and positive, got 0}}
  %l = xent.cross_entropy mean %x, %t {softcap = 0.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @softcap_negative(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{softcap must be finite and positive, got -3}}
  %l = xent.cross_entropy mean %x, %t {softcap = -3.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @z_loss_negative(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{z_loss_scale must be finite and non-negative, got -1}}
  %l = xent.cross_entropy mean %x, %t {z_loss_scale = -1.0 : f32} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @unknown_reduction(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{unknown reduction 'average', expected 'mean', 'sum' or 'none'}}
  %l = xent.cross_entropy average %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @grad_output_mean(%g: tensor<4xf32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_grad' op grad_output shape [4] must be [] for reduction 'mean'}}
  %d = xent.cross_entropy_grad mean %g, %x, %t : (tensor<4xf32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return
}

// -----

func.func @grad_output_none(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{grad_output shape [] must be [4] for reduction 'none'}}
  %d = xent.cross_entropy_grad none %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  return
}

// -----

func.func @dlogits_type(%g: tensor<f32>, %x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{dlogits type 'tensor<4x10xf32>' must match the logits type 'tensor<4x10xbf16>'}}
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xbf16>, tensor<4xi64>) -> tensor<4x10xf32>
  return
}

// -----

func.func @dlogits_shape(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{dlogits type 'tensor<4x11xf32>' must match the logits type 'tensor<4x10xf32>'}}
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x11xf32>
  return
}

// -----

func.func @grad_target(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<3xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_grad' op class-index target shape [3] must be the logits shape without the class axis [4]}}
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<3xi64>) -> tensor<4x10xf32>
  return
}

// -----

func.func @region_arguments(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{decomposition block must have 2 arguments (one per operand), got 1}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>):
    %zero = arith.constant dense<0.0> : tensor<f32>
    xent.yield %zero : tensor<f32>
  }
  return
}

// -----

func.func @region_argument_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{decomposition argument #1 has type 'tensor<4xi32>', expected 'tensor<4xi64>'}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi32>):
    %zero = arith.constant dense<0.0> : tensor<f32>
    xent.yield %zero : tensor<f32>
  }
  return
}

// -----

func.func @region_yield_count(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{decomposition yields 2 values, expected 1}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    %zero = arith.constant dense<0.0> : tensor<f32>
    xent.yield %zero, %zero : tensor<f32>, tensor<f32>
  }
  return
}

// -----

func.func @region_yield_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{decomposition yields value #0 of type 'tensor<f16>', expected 'tensor<f32>'}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    %zero = arith.constant dense<0.0> : tensor<f16>
    xent.yield %zero : tensor<f16>
  }
  return
}

// -----

func.func @region_terminator(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    %zero = arith.constant dense<0.0> : tensor<f32>
    // expected-error @+1 {{'func.return' op expects parent op 'func.func'}}
    func.return %zero : tensor<f32>
  }
  return
}

// -----

func.func @region_uses_outer_value(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  %outer = arith.constant dense<0.0> : tensor<f32>
  // expected-note @+1 {{required by region isolation constraints}}
  %l = xent.cross_entropy sum %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32> decomposition {
  ^bb0(%a: tensor<4x10xf32>, %b: tensor<4xi64>):
    // expected-error @+1 {{using value defined outside the region}}
    xent.yield %outer : tensor<f32>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<f32>) {
  // expected-error @+1 {{'xent.yield' op expects parent op to be one of 'xent.cross_entropy, xent.cross_entropy_grad, xent.cross_entropy_and_grad, xent.linear_cross_entropy, xent.linear_cross_entropy_grad, xent.linear_cross_entropy_and_grad'}}
  xent.yield %x : tensor<f32>
}

// -----

func.func @joint_loss_shape(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_and_grad' op loss shape [4] must be [] for reduction 'mean'}}
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4x10xf32>)
  return
}

// -----

func.func @joint_grad_output(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_and_grad' op grad_output shape [] must be [4] for reduction 'none'}}
  %l, %d = xent.cross_entropy_and_grad none %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4x10xf32>)
  return
}

// -----

func.func @joint_dlogits(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_and_grad' op dlogits type 'tensor<4x10xf16>' must match the logits type 'tensor<4x10xf32>'}}
  %l, %d = xent.cross_entropy_and_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf16>)
  return
}

// -----

func.func @joint_region(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'xent.cross_entropy_and_grad' op decomposition yields 1 values, expected 2}}
  %l, %d = xent.cross_entropy_and_grad sum %g, %x, %t : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>) decomposition {
  ^bb0(%a: tensor<f32>, %b: tensor<4x10xf32>, %c: tensor<4xi64>):
    xent.yield %a : tensor<f32>
  }
  return
}

// -----

// Found by xent-fuzz-op: every operand describes the same tensor, so a size
// that the target fixes holds for grad_output and the results too.
func.func @grad_output_against_target(%g: tensor<2xf32>, %x: tensor<?x10xf32>, %t: tensor<1xi64>) {
  // expected-error @+1 {{grad_output shape [2] must be [1] for reduction 'none'}}
  %d = xent.cross_entropy_grad none %g, %x, %t : (tensor<2xf32>, tensor<?x10xf32>, tensor<1xi64>) -> tensor<?x10xf32>
  return
}

// -----

func.func @loss_against_target(%x: tensor<?x10xf32>, %t: tensor<3xi64>) {
  // expected-error @+1 {{loss shape [4] must be [3] for reduction 'none'}}
  %l = xent.cross_entropy none %x, %t : (tensor<?x10xf32>, tensor<3xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @dlogits_against_target(%g: tensor<f32>, %x: tensor<?x10xf32>, %t: tensor<3xi64>) {
  // expected-error @+1 {{dlogits type 'tensor<2x10xf32>' must match the logits type 'tensor<?x10xf32>'}}
  %d = xent.cross_entropy_grad sum %g, %x, %t : (tensor<f32>, tensor<?x10xf32>, tensor<3xi64>) -> tensor<2x10xf32>
  return
}

// -----

func.func @weight_against_probabilities(%x: tensor<4x?xf32>, %q: tensor<4x10xf32>, %w: tensor<9xf32>) {
  // expected-error @+1 {{weight has 9 elements but logits have 10 classes}}
  %l = xent.cross_entropy mean %x, %q weight %w : (tensor<4x?xf32>, tensor<4x10xf32>, tensor<9xf32>) -> tensor<f32>
  return
}

// -----

// Found by the second long xent-fuzz-op run: a per-element grad_output fixes
// sizes too.
func.func @dlogits_against_grad_output(%g: tensor<3xf32>, %x: tensor<?x1xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{dlogits type 'tensor<5x1xf32>' must match the logits type 'tensor<?x1xf32>'}}
  %d = xent.cross_entropy_grad none %g, %x, %t : (tensor<3xf32>, tensor<?x1xf32>, tensor<?xi32>) -> tensor<5x1xf32>
  return
}

// -----

// Results fix sizes too: the decomposition computes them together.
func.func @z_loss_against_loss(%x: tensor<1x?xf32>, %q: tensor<1x?xf32>) {
  // expected-error @+1 {{z_loss shape [2] must be [3] for reduction 'none'}}
  %l, %z = xent.cross_entropy none %x, %q {axis = 0 : i64} : (tensor<1x?xf32>, tensor<1x?xf32>) -> (tensor<3xf32>, tensor<2xf32>)
  return
}

// -----

func.func @row_outputs_count(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{expected 2 or 3 results after loss (optional z_loss, then one per selected output), got 1}}
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse, return_argmax} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

func.func @row_outputs_too_many(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{expected 1 or 2 results after loss (optional z_loss, then one per selected output), got 3}}
  %l:4 = xent.cross_entropy mean %x, %t {return_lse} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @joint_row_outputs_count(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{expected 1 or 2 results after loss (optional z_loss, then one per selected output), got 0}}
  %l, %d = xent.cross_entropy_and_grad mean %g, %x, %t {return_argmax} : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>)
  return
}

// -----

func.func @lse_shape(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{lse shape [] must be [4]}}
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @lse_element_type(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{lse element type 'f16' must be f32 or the logits' element type 'bf16'}}
  %l, %lse = xent.cross_entropy mean %x, %t {return_lse} : (tensor<4x10xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf16>)
  return
}

// -----

func.func @argmax_element_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{argmax element type 'f32' must be i32 or i64}}
  %l, %a = xent.cross_entropy sum %x, %t {return_argmax} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

func.func @argmax_shape(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{argmax shape [5] must be [4]}}
  %l, %a = xent.cross_entropy none %x, %t {return_argmax} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<5xi64>)
  return
}

// -----

// Per-row outputs fix dynamic sizes like the other results.
func.func @argmax_against_lse(%x: tensor<?x10xf32>, %t: tensor<?xi64>) {
  // expected-error @+1 {{argmax shape [3] must be [2]}}
  %l, %lse, %a = xent.cross_entropy mean %x, %t {return_lse, return_argmax} : (tensor<?x10xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<2xf32>, tensor<3xi64>)
  return
}

// -----

func.func @accuracy_shape(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{accuracy shape [] must be [4] for reduction 'none'}}
  %l, %a = xent.cross_entropy none %x, %t {return_accuracy} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<f32>)
  return
}

// -----

func.func @accuracy_element_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{accuracy element type 'i64' must be f32 or the logits' element type 'f32'}}
  %l, %a = xent.cross_entropy sum %x, %t {return_accuracy} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @accuracy_probability_targets(%x: tensor<4x10xf32>, %q: tensor<4x10xf32>) {
  // expected-error @+1 {{return_accuracy requires class-index targets}}
  %l, %a = xent.cross_entropy mean %x, %q {return_accuracy} : (tensor<4x10xf32>, tensor<4x10xf32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @z_loss_integer(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{z_loss element type 'i64' must be f32 or the logits' element type 'f32'}}
  %l, %z = xent.cross_entropy mean %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<i64>)
  return
}
