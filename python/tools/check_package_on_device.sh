#!/usr/bin/env bash
# The package as a user gets it, on the GPU machine (no LLVM): a regular
# `pip install --target` of python/ with a kernel bundle compiled elsewhere
# (python -m xent.runtime.bundle DIR), XENT_OPT unset and an empty
# XENT_CACHE_DIR; then, from outside the checkout, check_installed_package.py
# (fails if any kernel would be compiled) and the given GPU tests of
# python/tests_gpu against the installed package (docs/gpu.md, "Kernels shipped
# with the package").
#
#   python/tools/check_package_on_device.sh BUNDLE_DIR LOG_DIR [TEST_FILE...]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUNDLE="$(cd "${1:?usage: check_package_on_device.sh BUNDLE_DIR LOG_DIR [TEST...]}" && pwd)"
LOGS="${2:?log dir}"; shift 2
mkdir -p "$LOGS"
SITE="$(mktemp -d)/site"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
XENT_KERNEL_BUNDLE="$BUNDLE" python3 -m pip install -q --no-build-isolation --no-index \
  --no-deps --target "$SITE" "$ROOT/python" || exit 1
echo "installed: $(du -sh "$SITE/xent/kernels" | cut -f1) in $(ls "$SITE"/xent/kernels/*.so | wc -l) libraries"
status=0
cd "$(mktemp -d)"
run() {  # name pytest-args...
  local name=$1; shift
  env -u XENT_OPT PYTHONPATH="$SITE" XENT_CACHE_DIR="$(mktemp -d)" \
    python3 -m pytest -q -p no:cacheprovider "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] || status=1
  echo "$name: rc=$rc $(tail -1 "$LOGS/$name.log")"
}
run installed -o python_files=check_installed_package.py \
  "$ROOT/python/tools/check_installed_package.py"
for test in "$@"; do
  run "$(basename "$test" .py)" --noconftest "$ROOT/python/tests_gpu/$test"
done
exit $status
