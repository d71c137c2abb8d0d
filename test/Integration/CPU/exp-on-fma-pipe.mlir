// The gradient kernels' exponential on the FMA pipe (option
// split-exponentials: emitExpOnFmaPipeF32, 2^j times a degree-5 polynomial)
// run on the CPU: test-xent-exp-on-fma-pipe puts the kernels' op sequence in
// place of f32 math.exp, and the program compares it with f64 exp2 of the
// f32 z = x·log2 e it forms (the kernels' ex2.approx takes the same z: the
// rounding of z, up to 2.6e-6 relative at z = -126, is both paths'), over
// the arguments the kernels give it, x - m <= 0 (2^20 points of [-90, 0]),
// and at -inf, NaN and 0.
// REQUIRES: mlir-runner
// RUN: xent-opt %s --test-xent-exp-on-fma-pipe --convert-scf-to-cf \
// RUN:   --convert-math-to-llvm --convert-arith-to-llvm --convert-cf-to-llvm \
// RUN:   --convert-func-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN:   | FileCheck %s
// RUN: xent-opt %s --test-xent-exp-on-fma-pipe | FileCheck %s --check-prefix=IR

// IR-LABEL: func.func @main
// IR-NOT:   math.exp {{.*}} : f32
// IR:       llvm.intr.fma
// IR:       math.exp2 {{.*}} : f64

func.func private @printI64(i64)
func.func private @printF64(f64)
func.func private @printNewline()

func.func @report(%ok: i1, %value: f64) {
  %i = arith.extui %ok : i1 to i64
  call @printI64(%i) : (i64) -> ()
  call @printNewline() : () -> ()
  call @printF64(%value) : (f64) -> ()
  call @printNewline() : () -> ()
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1048576 : index
  %zero = arith.constant 0.0 : f64
  %step = arith.constant -8.58306884765625e-05 : f64   // -90 / 2^20
  %normal = arith.constant 1.1754943508222875e-38 : f64 // 2^-126
  %log2e = arith.constant 1.44269502 : f32
  // The largest relative error where exp(x) is a normal f32, the largest
  // absolute error below it (where the kernels' ex2.approx.ftz gives 0).
  %worst:2 = scf.for %i = %c0 to %n step %c1 iter_args(%rel = %zero, %abs = %zero)
      -> (f64, f64) {
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %x64 = arith.mulf %fi, %step : f64
    %x = arith.truncf %x64 : f64 to f32
    %e = math.exp %x : f32
    %z = arith.mulf %x, %log2e : f32
    %zr = arith.extf %z : f32 to f64
    %ref = math.exp2 %zr : f64
    %e64 = arith.extf %e : f32 to f64
    %d = arith.subf %e64, %ref : f64
    %ad = math.absf %d : f64
    %r = arith.divf %ad, %ref : f64
    %isNormal = arith.cmpf oge, %ref, %normal : f64
    %relMax = arith.maximumf %rel, %r : f64
    %absMax = arith.maximumf %abs, %ad : f64
    %rel2 = arith.select %isNormal, %relMax, %rel : f64
    %abs2 = arith.select %isNormal, %abs, %absMax : f64
    scf.yield %rel2, %abs2 : f64, f64
  }
  // CHECK:      {{^1$}}
  // CHECK-NEXT: {{^[0-9.e+-]+$}}
  %relBound = arith.constant 2.5e-7 : f64
  %relOk = arith.cmpf olt, %worst#0, %relBound : f64
  call @report(%relOk, %worst#0) : (i1, f64) -> ()
  // CHECK-NEXT: {{^1$}}
  // CHECK-NEXT: {{^[0-9.e+-]+$}}
  %absOk = arith.cmpf ole, %worst#1, %normal : f64
  call @report(%absOk, %worst#1) : (i1, f64) -> ()

  // exp(-inf) = +0, exp(NaN) = NaN, exp(0) = 1 to the same bound.
  // CHECK-NEXT: {{^1$}}
  // CHECK-NEXT: {{^0$}}
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = math.exp %ninf : f32
  %e0d = arith.extf %e0 : f32 to f64
  %isZero = arith.cmpf oeq, %e0d, %zero : f64
  call @report(%isZero, %e0d) : (i1, f64) -> ()
  // CHECK-NEXT: {{^1$}}
  // CHECK-NEXT: {{^nan$}}
  %nan = arith.constant 0x7FC00000 : f32
  %e1 = math.exp %nan : f32
  %e1d = arith.extf %e1 : f32 to f64
  %isNaN = arith.cmpf uno, %e1d, %e1d : f64
  call @report(%isNaN, %e1d) : (i1, f64) -> ()
  // CHECK-NEXT: {{^1$}}
  // CHECK-NEXT: {{^1$}}
  %f0 = arith.constant 0.0 : f32
  %e2 = math.exp %f0 : f32
  %e2d = arith.extf %e2 : f32 to f64
  %one = arith.constant 1.0 : f64
  %d2 = arith.subf %e2d, %one : f64
  %a2 = math.absf %d2 : f64
  %oneOk = arith.cmpf olt, %a2, %relBound : f64
  call @report(%oneOk, %e2d) : (i1, f64) -> ()
  return
}
