// RUN: xent-opt %s -split-input-file -verify-diagnostics

func.func @offset_without_num_classes(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) {
  // expected-error @+1 {{class_offset and num_classes must be given together}}
  %l, %s = xent.cross_entropy sum %x, %t class_offset %o {return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>, i64) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @num_classes_without_offset(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{class_offset and num_classes must be given together}}
  %l, %s = xent.cross_entropy sum %x, %t {num_classes = 20 : i64, return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @probabilities(%x: tensor<4x10xf32>, %t: tensor<4x10xf32>) {
  // expected-error @+1 {{row statistics and class slices require class-index targets}}
  %l, %s = xent.cross_entropy sum %x, %t {return_row_stats}
      : (tensor<4x10xf32>, tensor<4x10xf32>) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @missing_result(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{return_row_stats requires a row_stats result after the other results}}
  %l = xent.cross_entropy sum %x, %t {return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @slice_without_stats(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) {
  // expected-error @+1 {{class_offset requires return_row_stats}}
  %l = xent.cross_entropy sum %x, %t class_offset %o {num_classes = 20 : i64}
      : (tensor<4x10xf32>, tensor<4xi64>, i64) -> tensor<f32>
  return
}

// -----

func.func @grad_slice_without_stats(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) {
  // expected-error @+1 {{class_offset requires a row_stats operand}}
  %d = xent.cross_entropy_grad sum %g, %x, %t class_offset %o {num_classes = 20 : i64}
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, i64) -> tensor<4x10xf32>
  return
}

// -----

func.func @too_few_classes(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64) {
  // expected-error @+1 {{num_classes 8 must be at least the 10 classes of the logits}}
  %l, %s = xent.cross_entropy sum %x, %t class_offset %o {num_classes = 8 : i64, return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>, i64) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @stats_element_type(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{row_stats element type 'f16' must be f32}}
  %l, %s = xent.cross_entropy sum %x, %t {return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf16>)
  return
}

// -----

func.func @stats_width(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %w: tensor<10xf32>) {
  // expected-error @+1 {{row_stats shape [4, 3] must be [4, 6] (m, s, x_t, w_t, Σ w (m - x), Σ w per row)}}
  %l, %s = xent.cross_entropy sum %x, %t weight %w {return_row_stats, label_smoothing = 0.1 : f32}
      : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @grad_stats_rows(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %s: tensor<5x3xf32>) {
  // expected-error @+1 {{row_stats shape [5, 3] must be [4, 3] (m, s, x_t per row)}}
  %d = xent.cross_entropy_grad sum %g, %x, %t row_stats %s
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, tensor<5x3xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @num_classes_twice(%x: tensor<4x10xf32>, %t: tensor<4xi64>, %o: i64, %n: i64) {
  // expected-error @+1 {{num_classes must be given by its attribute or its operand, not both}}
  %l, %s = xent.cross_entropy sum %x, %t class_offset %o num_classes %n {num_classes = 20 : i64, return_row_stats}
      : (tensor<4x10xf32>, tensor<4xi64>, i64, i64) -> (tensor<f32>, tensor<4x3xf32>)
  return
}

// -----

func.func @num_classes_operand_without_offset(%g: tensor<f32>, %x: tensor<4x10xf32>, %t: tensor<4xi64>, %s: tensor<4x3xf32>, %n: i64) {
  // expected-error @+1 {{class_offset and num_classes must be given together}}
  %d = xent.cross_entropy_grad sum %g, %x, %t row_stats %s num_classes %n
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>, tensor<4x3xf32>, i64) -> tensor<4x10xf32>
  return
}
