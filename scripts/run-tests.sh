#!/usr/bin/env bash
# Sets up and builds xent (see setup.sh), then runs the whole test suite:
# the lit suite (FileCheck, -verify-diagnostics, plugin, mlir-runner
# integration) and the Python suite (float64 reference vs PyTorch's oracle,
# the CPU semantic matrix through the compiled fallback). Prints each
# runner's summary and a final "N passed, N failed" line.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${XENT_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" || exit 1

export XENT_OPT="$BUILD/bin/xent-opt"
export XENT_CACHE_DIR="${XENT_CACHE_DIR:-$BUILD/xent-cache}"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

LOG_DIR="$BUILD/test-logs"
mkdir -p "$LOG_DIR"

echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$BUILD/test" 2>&1 | tee "$LOG_DIR/lit.log"
lit_rc=${PIPESTATUS[0]}
lit_passed=$(grep -oP '^\s*Passed\s*:\s*\K[0-9]+' "$LOG_DIR/lit.log" | head -1)
lit_failed=$(grep -oP '^\s*(Failed|Unresolved|Timed Out|Unexpectedly Passed)\s*:\s*\K[0-9]+' "$LOG_DIR/lit.log" | awk '{s+=$1} END {print s+0}')

echo "== pytest"
/usr/bin/python3 -m pytest "$ROOT/python/tests" -q -p no:cacheprovider 2>&1 | tee "$LOG_DIR/pytest.log"
py_rc=${PIPESTATUS[0]}
py_passed=$(grep -oP '\b\K[0-9]+(?= passed)' "$LOG_DIR/pytest.log" | tail -1)
py_failed=$(grep -oP '\b\K[0-9]+(?= (failed|error|errors))' "$LOG_DIR/pytest.log" | awk '{s+=$1} END {print s+0}')

lit_passed=${lit_passed:-0}; lit_failed=${lit_failed:-0}
py_passed=${py_passed:-0}; py_failed=${py_failed:-0}
if [[ $lit_rc -ne 0 && $lit_failed -eq 0 ]]; then lit_failed=1; fi
if [[ $py_rc -ne 0 && $py_failed -eq 0 ]]; then py_failed=1; fi

echo
echo "lit: $lit_passed passed, $lit_failed failed"
echo "pytest: $py_passed passed, $py_failed failed"
echo "xent: $((lit_passed + py_passed)) passed, $((lit_failed + py_failed)) failed"
[[ $lit_rc -eq 0 && $py_rc -eq 0 ]]
