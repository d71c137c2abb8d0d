// RUN: xent-opt %s -split-input-file -verify-diagnostics

func.func @tied_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'xent.launch' op tied_operands has 2 entries for 1 results}}
  %r = xent.launch ins(%x : tensor<4xf32>) tied [-1, -1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %b: memref<4xf32>):
  }
  return
}

// -----

func.func @tied_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 is tied to operand #1, not one of the 1 inputs and inits}}
  %r = xent.launch ins(%x : tensor<4xf32>) tied [1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %b: memref<4xf32>):
  }
  return
}

// -----

func.func @tied_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 is tied to two results}}
  %r:2 = xent.launch ins(%x : tensor<4xf32>) tied [0, 0] -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>):
  }
  return
}

// -----

func.func @tied_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 has type 'tensor<4xf16>' but its tied operand #0 has type 'tensor<4xf32>'}}
  %r = xent.launch ins(%x : tensor<4xf32>) tied [0] -> (tensor<4xf16>) {
  ^bb0(%a: memref<4xf32>, %b: memref<4xf16>):
  }
  return
}

// -----

func.func @init_untied(%x: tensor<4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{init operand #1 is not tied to a result}}
  %r = xent.launch ins(%x : tensor<4xf32>) outs(%d : tensor<4xf32>) tied [-1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %b: memref<4xf32>):
  }
  return
}

// -----

func.func @dims(%x: tensor<?xf32>) {
  // expected-error @+1 {{has 0 result_dims for 1 dynamic result sizes}}
  %r = xent.launch ins(%x : tensor<?xf32>) tied [-1] -> (tensor<?xf32>) {
  ^bb0(%a: memref<?xf32>, %b: memref<?xf32>):
  }
  return
}

// -----

func.func @arg_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{body has 1 arguments, expected 2 (one buffer per input and per result)}}
  %r = xent.launch ins(%x : tensor<4xf32>) tied [-1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>):
  }
  return
}

// -----

func.func @arg_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{body argument #1 has type 'memref<5xf32>', not a memref with the element type and shape of 'tensor<4xf32>'}}
  %r = xent.launch ins(%x : tensor<4xf32>) tied [-1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %b: memref<5xf32>):
  }
  return
}

// -----

func.func @tied_scalar(%x: tensor<4xf32>, %e: f32) {
  // expected-error @+1 {{result #0 is tied to operand #1, a scalar (only a tensor has a buffer)}}
  %r = xent.launch ins(%x, %e : tensor<4xf32>, f32) tied [1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %s: f32, %b: memref<4xf32>):
  }
  return
}

// -----

func.func @scalar_arg(%x: tensor<4xf32>, %i: i64) {
  // expected-error @+1 {{body argument #1 has type 'i32', not 'i64' (a scalar input is passed as it is)}}
  %r = xent.launch ins(%x, %i : tensor<4xf32>, i64) tied [-1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %s: i32, %b: memref<4xf32>):
  }
  return
}

// -----

func.func @vector_input(%x: tensor<4xf32>, %v: vector<4xf32>) {
  // expected-error @+1 {{operand #1 must be variadic of ranked tensor of any type values or signless integer or index or floating-point}}
  %r = xent.launch ins(%x, %v : tensor<4xf32>, vector<4xf32>) tied [-1] -> (tensor<4xf32>) {
  ^bb0(%a: memref<4xf32>, %s: vector<4xf32>, %b: memref<4xf32>):
  }
  return
}
