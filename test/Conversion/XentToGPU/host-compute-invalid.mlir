// RUN: xent-opt %s -split-input-file --xent-host-compute-to-device -verify-diagnostics

// A scalar read of a buffer on the host would read device memory.
func.func @host_read(%x: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op reads or writes a buffer on the host, where xent-gpu-pipeline's buffers are device memory: only linalg ops and copies move to the device}}
  %v = memref.load %x[%c0] : memref<8xf32>
  return %v : f32
}

// -----

// A host constant that a kernel would read: only a static, identity-layout
// one is copied to the device.
memref.global "private" constant @table : memref<4xf32, strided<[2]>> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @strided_constant(%out: memref<4xf32>) {
  %g = memref.get_global @table : memref<4xf32, strided<[2]>>
  // expected-error @+1 {{'linalg.generic' op reads a host constant of type 'memref<4xf32, strided<[2]>>', which cannot be copied to the device as it is}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : memref<4xf32, strided<[2]>>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}
