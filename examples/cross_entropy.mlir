// A cross-entropy loss as a frontend would hand it to xent: a mean over a
// batch of 4 rows and 6 classes, with class weights, one ignored row
// (target -100) and label smoothing, plus its gradient for the backward pass.
//
//   scripts/run-example.sh        shows this module before and after the
//                                 xent passes and runs it on the CPU.

func.func @loss_and_grad(%logits: tensor<4x6xf32>, %target: tensor<4xi64>,
                         %weight: tensor<6xf32>)
    -> (tensor<f32>, tensor<4x6xf32>) {
  %loss = xent.cross_entropy mean %logits, %target weight %weight
      {label_smoothing = 0.1 : f32}
      : (tensor<4x6xf32>, tensor<4xi64>, tensor<6xf32>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dlogits = xent.cross_entropy_grad mean %one, %logits, %target weight %weight
      {label_smoothing = 0.1 : f32}
      : (tensor<f32>, tensor<4x6xf32>, tensor<4xi64>, tensor<6xf32>) -> tensor<4x6xf32>
  return %loss, %dlogits : tensor<f32>, tensor<4x6xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

func.func @main() {
  %logits = arith.constant dense<[[ 2.0, -1.0,  0.5,  3.0,  0.0, -2.0],
                                  [ 0.1,  0.2,  0.3,  0.4,  0.5,  0.6],
                                  [-4.0,  8.0,  1.0,  1.0, -1.0,  2.5],
                                  [ 1.5,  1.5, -0.5,  0.0,  9.0, -3.0]]> : tensor<4x6xf32>
  %target = arith.constant dense<[3, -100, 1, 0]> : tensor<4xi64>
  %weight = arith.constant dense<[1.0, 0.5, 2.0, 1.0, 1.0, 0.25]> : tensor<6xf32>
  %loss, %dlogits = call @loss_and_grad(%logits, %target, %weight)
      : (tensor<4x6xf32>, tensor<4xi64>, tensor<6xf32>) -> (tensor<f32>, tensor<4x6xf32>)
  %l = tensor.cast %loss : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%l) : (tensor<*xf32>) -> ()
  %d = tensor.cast %dlogits : tensor<4x6xf32> to tensor<*xf32>
  call @printMemrefF32(%d) : (tensor<*xf32>) -> ()
  return
}
