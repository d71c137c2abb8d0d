#!/usr/bin/env bash
# The main job on examples/: shows a cross-entropy module before and after the
# xent passes, then lowers it with xent-cpu-pipeline, runs it on the CPU with
# mlir-runner and prints the loss next to an independent float64 reference.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
LLVM_BIN=/usr/lib/llvm-22/bin
LLVM_LIB=/usr/lib/llvm-22/lib
EXAMPLE="${1:-$ROOT/examples/cross_entropy.mlir}"

"$ROOT/scripts/setup.sh"
XENT_OPT="$BUILD/bin/xent-opt"

section() { printf '\n===== %s =====\n' "$1"; }

section "input: $(basename "$EXAMPLE")"
cat "$EXAMPLE"

section "after xent-materialize-decomposition (the op keeps its canonical decomposition)"
"$XENT_OPT" "$EXAMPLE" --xent-materialize-decomposition

section "after xent-inline-decomposition, canonicalize, cse (the CPU fallback)"
"$XENT_OPT" "$EXAMPLE" --xent-inline-decomposition --canonicalize --cse

section "loss computed on the CPU (xent-cpu-pipeline + mlir-runner)"
"$XENT_OPT" "$EXAMPLE" --xent-cpu-pipeline \
  | "$LLVM_BIN/mlir-runner" -e main -entry-point-result=void \
      -shared-libs="$LLVM_LIB/libmlir_runner_utils.so,$LLVM_LIB/libmlir_c_runner_utils.so,$LLVM_LIB/libomp.so"

if [[ "$EXAMPLE" == "$ROOT/examples/cross_entropy.mlir" ]]; then
  section "float64 reference (python/src/xent/testing/reference.py)"
  "${XENT_VENV:-$BUILD/venv}/bin/python" "$ROOT/examples/reference.py"
fi
