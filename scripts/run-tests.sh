#!/usr/bin/env bash
# Sets up and builds xent (see setup.sh), then runs the whole test suite:
# the lit suite (FileCheck, -verify-diagnostics, plugin, mlir-runner
# integration) and the Python suite (float64 reference vs PyTorch's oracle,
# the CPU semantic matrix through the compiled fallback, randomized
# differential tests), then installs xent into <build>/install and builds
# and checks examples/downstream against it (docs/embedding.md); with
# XENT_HARDENING=1 (the default) also the lit suite again on the ASan+UBSan
# build and a short run of the three fuzz harnesses
# (docs/reliability.md). Prints each runner's summary and a final
# "N passed, N failed" line.
#
#   XENT_HARDENING=0       skip the sanitizer build, its lit run and fuzzing
#   XENT_FUZZ_SECONDS=60   length of the fuzz run (the three harnesses at once)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
export XENT_HARDENING="${XENT_HARDENING:-1}"
SAN="${XENT_SAN_BUILD_DIR:-$ROOT/build-san}"
"$ROOT/scripts/setup.sh" || exit 1

export XENT_OPT="$BUILD/bin/xent-opt"
export XENT_CACHE_DIR="${XENT_CACHE_DIR:-$BUILD/xent-cache}"
# setup.sh installed the Python package (editable) into this venv of
# /usr/bin/python3 (scripts/install-python.sh); pytest imports it from there.
PYTHON="${XENT_VENV:-$BUILD/venv}/bin/python"

LOG_DIR="$BUILD/test-logs"
mkdir -p "$LOG_DIR"

echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$BUILD/test" 2>&1 | tee "$LOG_DIR/lit.log"
lit_rc=${PIPESTATUS[0]}
lit_passed=$(grep -oP '^\s*Passed\s*:\s*\K[0-9]+' "$LOG_DIR/lit.log" | head -1)
lit_failed=$(grep -oP '^\s*(Failed|Unresolved|Timed Out|Unexpectedly Passed)\s*:\s*\K[0-9]+' "$LOG_DIR/lit.log" | awk '{s+=$1} END {print s+0}')

san_passed=0; san_failed=0; fuzz_passed=0; fuzz_failed=0; san_rc=0; fuzz_rc=0
if [[ "$XENT_HARDENING" == 1 ]]; then
  echo "== lit (asan+ubsan)"
  /usr/lib/llvm-22/bin/lit -sv "$SAN/test" 2>&1 | tee "$LOG_DIR/lit-san.log"
  san_rc=${PIPESTATUS[0]}
  san_passed=$(grep -oP '^\s*(Passed|Expectedly Failed)\s*:\s*\K[0-9]+' "$LOG_DIR/lit-san.log" | awk '{s+=$1} END {print s+0}')
  san_failed=$(grep -oP '^\s*(Failed|Unresolved|Timed Out|Unexpectedly Passed)\s*:\s*\K[0-9]+' "$LOG_DIR/lit-san.log" | awk '{s+=$1} END {print s+0}')
  if [[ $san_rc -ne 0 && $san_failed -eq 0 ]]; then san_failed=1; fi

  echo "== fuzz (${XENT_FUZZ_SECONDS:-60} s, the three harnesses at once)"
  "$ROOT/fuzz/run-fuzzers.sh" "$SAN" "${XENT_FUZZ_SECONDS:-60}" 0 2>&1 | tee "$LOG_DIR/fuzz.log"
  fuzz_rc=${PIPESTATUS[0]}
  fuzz_passed=$(grep -oP '^fuzz: \K[0-9]+(?= passed)' "$LOG_DIR/fuzz.log" | tail -1)
  fuzz_failed=$(grep -oP '^fuzz: [0-9]+ passed, \K[0-9]+(?= failed)' "$LOG_DIR/fuzz.log" | tail -1)
  fuzz_passed=${fuzz_passed:-0}; fuzz_failed=${fuzz_failed:-0}
  if [[ $fuzz_rc -ne 0 && $fuzz_failed -eq 0 ]]; then fuzz_failed=1; fi
fi

echo "== pytest"
# One worker per core (pytest-xdist, python3-pytest-xdist) where it is
# installed; the tests share nothing but the compile cache, whose writes
# are atomic.
jobs=()
if "$PYTHON" -c "import xdist" 2>/dev/null; then jobs=(-n "${XENT_TEST_JOBS:-$(nproc)}"); fi
"$PYTHON" -m pytest "$ROOT/python/tests" -q -p no:cacheprovider "${jobs[@]}" 2>&1 | tee "$LOG_DIR/pytest.log"
py_rc=${PIPESTATUS[0]}
py_passed=$(grep -oP '\b\K[0-9]+(?= passed)' "$LOG_DIR/pytest.log" | tail -1)
py_failed=$(grep -oP '\b\K[0-9]+(?= (failed|error|errors))' "$LOG_DIR/pytest.log" | awk '{s+=$1} END {print s+0}')

echo "== downstream (cmake --install, examples/downstream against it)"
{
  # Everything the install rules name, then the install into a prefix
  # inside the build and the example, in a project of its own, on top.
  ninja -C "$BUILD" &&
  cmake --install "$BUILD" --prefix "$BUILD/install" >/dev/null &&
  { [[ -f "$BUILD/downstream/build.ninja" ]] ||
    cmake -G Ninja -S "$ROOT/examples/downstream" -B "$BUILD/downstream" \
      -DCMAKE_PREFIX_PATH="$BUILD/install"; } &&
  ninja -C "$BUILD/downstream" &&
  ctest --test-dir "$BUILD/downstream" --output-on-failure
} 2>&1 | tee "$LOG_DIR/downstream.log"
ds_rc=${PIPESTATUS[0]}
ds_failed=$(grep -oP '^[0-9]+% tests passed, \K[0-9]+(?= tests? failed)' "$LOG_DIR/downstream.log" | tail -1)
ds_total=$(grep -oP '^[0-9]+% tests passed, [0-9]+ tests? failed out of \K[0-9]+' "$LOG_DIR/downstream.log" | tail -1)
ds_failed=${ds_failed:-0}
ds_passed=$(( ${ds_total:-0} - ds_failed ))
if [[ $ds_rc -ne 0 && $ds_failed -eq 0 ]]; then ds_failed=1; fi

lit_passed=${lit_passed:-0}; lit_failed=${lit_failed:-0}
py_passed=${py_passed:-0}; py_failed=${py_failed:-0}
if [[ $lit_rc -ne 0 && $lit_failed -eq 0 ]]; then lit_failed=1; fi
if [[ $py_rc -ne 0 && $py_failed -eq 0 ]]; then py_failed=1; fi

echo
if [[ "$XENT_HARDENING" == 1 ]]; then
  echo "lit (asan+ubsan): $san_passed passed, $san_failed failed"
  echo "fuzz (${XENT_FUZZ_SECONDS:-60} s): $fuzz_passed passed, $fuzz_failed failed"
fi
echo "lit: $lit_passed passed, $lit_failed failed"
echo "pytest: $py_passed passed, $py_failed failed"
echo "downstream: $ds_passed passed, $ds_failed failed"
echo "xent: $((lit_passed + py_passed + san_passed + fuzz_passed + ds_passed)) passed, $((lit_failed + py_failed + san_failed + fuzz_failed + ds_failed)) failed"
[[ $lit_rc -eq 0 && $py_rc -eq 0 && $san_rc -eq 0 && $fuzz_rc -eq 0 && $ds_rc -eq 0 ]]
