#!/usr/bin/env bash
# Liger-Kernel's own tests of cross entropy and fused linear cross entropy,
# run against xent.torch (xent_liger_adapter.py says how they are mapped).
#
#   utils/liger-suite/run.sh LIGER_CHECKOUT [pytest args...]
#
# Needs a CUDA machine with torch, triton and transformers, and xent
# importable (an installed package, or PYTHONPATH=python/src with a bundle
# or XENT_OPT). LIGER_CHECKOUT is a checkout of linkedin/Liger-Kernel; it is
# read, not modified, and nothing of it belongs in this repository.
set -euo pipefail
liger=$(cd "$1" && pwd); shift
here=$(cd "$(dirname "$0")" && pwd)
cd "$liger"
export PYTHONPATH="$here:$liger/src:$liger${PYTHONPATH:+:$PYTHONPATH}"
status=0
for suite in test_cross_entropy test_fused_linear_cross_entropy; do
  python3 -m pytest -p xent_liger_adapter -p no:cacheprovider -q \
    "test/transformers/$suite.py" "$@" || status=1
done
exit $status
