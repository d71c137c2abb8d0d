#!/usr/bin/env bash
# Runs the GPU checks of the CUDA runtime on a machine with a GPU, PyTorch
# and compute-sanitizer but no LLVM, from a bundle that make_bundle.py built
# elsewhere (docs/gpu-runtime.md):
#
#   python/tools/run_on_device.sh BUNDLE_DIR [LOG_DIR]
#
# 0. pip install -e python into python3's environment unless xent already
#    imports from this checkout;
# 1. the integration runner on the three modules of test/Integration/GPU;
# 2. pytest python/tests_gpu (PyTorch tensors, current and side streams,
#    errors, timings), kernels from BUNDLE_DIR as XENT_CACHE_DIR;
# 3. compute-sanitizer memcheck on the three runner checks, racecheck on the
#    shared-memory reduction, memcheck on a PyTorch program through xent.runtime.gpu,
#    memcheck and racecheck on the drop-in (sanitizer_dropin.py) and on the
#    linear cross-entropy GPU path (sanitizer_linear.py).
# XENT_GPU_STEPS picks the groups to run (default "runner pytest sanitizer");
# XENT_STEP_TIMEOUT bounds each step (default 240 s).
# Prints a summary line per step; exit status 1 if one failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUNDLE="$(cd "${1:?usage: run_on_device.sh BUNDLE_DIR [LOG_DIR]}" && pwd)"
LOGS="${2:-$BUNDLE/logs}"
mkdir -p "$LOGS"
export XENT_CACHE_DIR="$BUNDLE" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The xent package of this checkout, editable, into the python3 that has
# PyTorch (a venv there: pip may install into it), unless it already imports
# from here. Offline: --no-build-isolation uses that Python's setuptools,
# --no-index keeps pip from looking for anything (docs/gpu.md).
if ! python3 -c 'import sys, xent; sys.exit(xent.__file__ != sys.argv[1])' \
    "$ROOT/python/src/xent/__init__.py" 2>/dev/null; then
  python3 -m pip install --quiet --no-build-isolation --no-index -e "$ROOT/python" || exit 1
fi
SANITIZER="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
declare -a SUMMARY
status=0
STEPS=" ${XENT_GPU_STEPS:-runner pytest sanitizer} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
step() {  # step NAME COMMAND...: runs (at most XENT_STEP_TIMEOUT s), logs, records PASS/FAIL
  local name="$1"; shift
  local start=$SECONDS
  timeout "${XENT_STEP_TIMEOUT:-240}" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local verdict=PASS; [[ $rc -eq 0 ]] || { verdict="FAIL(rc=$rc)"; status=1; }
  SUMMARY+=("$(printf '%-28s %-12s %4ss' "$name" "$verdict" $((SECONDS - start)))")
  tail -n 25 "$LOGS/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

want runner && for t in "vector-add vadd" "shared-memory rowsum" "host-ops hostops"; do
  set -- $t
  step "runner-$2" "$BUNDLE/runner" "$BUNDLE/$1.so" "$2"
done

want pytest && step pytest python3 -m pytest -s -q -p no:cacheprovider -o addopts="" \
  --rootdir "$ROOT/python/tests_gpu" "$ROOT/python/tests_gpu"

if ! want sanitizer; then
  :
elif [[ -n "$SANITIZER" ]]; then
  for t in "vector-add vadd" "shared-memory rowsum" "host-ops hostops"; do
    set -- $t
    step "memcheck-$2" "$SANITIZER" --tool memcheck --error-exitcode 9 --leak-check full \
      "$BUNDLE/runner" "$BUNDLE/$1.so" "$2"
  done
  step racecheck-rowsum "$SANITIZER" --tool racecheck --error-exitcode 9 \
    "$BUNDLE/runner" "$BUNDLE/shared-memory.so" rowsum
  step memcheck-torch "$SANITIZER" --tool memcheck --error-exitcode 9 \
    python3 "$ROOT/python/tools/sanitizer_torch.py"
  step memcheck-dropin "$SANITIZER" --tool memcheck --error-exitcode 9 \
    python3 "$ROOT/python/tools/sanitizer_dropin.py"
  step racecheck-dropin "$SANITIZER" --tool racecheck --error-exitcode 9 \
    python3 "$ROOT/python/tools/sanitizer_dropin.py"
  step memcheck-linear "$SANITIZER" --tool memcheck --error-exitcode 9 \
    python3 "$ROOT/python/tools/sanitizer_linear.py"
  step racecheck-linear "$SANITIZER" --tool racecheck --error-exitcode 9 \
    python3 "$ROOT/python/tools/sanitizer_linear.py"
else
  SUMMARY+=("compute-sanitizer          not found")
fi

echo "== summary"
printf '%s\n' "${SUMMARY[@]}" | tee "$LOGS/summary.txt"
exit $status
