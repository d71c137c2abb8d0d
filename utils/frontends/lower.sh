#!/usr/bin/env bash
# StableHLO text (jax_losses.py) -> linalg on tensors with StableHLO's own
# conversion, as a StableHLO-based compiler sees it, and the same after
# elementwise fusion: DIR/<name>.linalg.mlir and DIR/<name>.fused.mlir.
# A program the conversion cannot take (stablehlo.scatter, which the
# gradient of a gather becomes, has no linalg lowering there) is reported
# and left as StableHLO.
#
#   utils/frontends/lower.sh DIR [STABLEHLO_TO_LINALG] [MLIR_OPT]
set -uo pipefail
dir="${1:?usage: lower.sh DIR [stablehlo-to-linalg] [mlir-opt]}"
tool="${2:-$(dirname "$0")/../../../shared/tools/stablehlo-to-linalg}"
opt="${3:-/usr/lib/llvm-22/bin/mlir-opt}"
status=0
for f in "$dir"/*.stablehlo.mlir; do
  n="${f%.stablehlo.mlir}"
  if ! "$tool" "$f" --inline --chlo-legalize-to-stablehlo --stablehlo-legalize-to-linalg \
      --canonicalize --cse --symbol-dce -o "$n.linalg.mlir" 2>/dev/null; then
    echo "$(basename "$n"): stablehlo-legalize-to-linalg failed"; rm -f "$n.linalg.mlir"; continue
  fi
  if grep -q '"stablehlo\.' "$n.linalg.mlir"; then
    echo "$(basename "$n"): StableHLO ops left after the conversion ($(grep -o '"stablehlo\.[a-z_]*' "$n.linalg.mlir" | sort -u | tr -d '"' | tr '\n' ' '))"
    rm -f "$n.linalg.mlir"; continue
  fi
  "$opt" "$n.linalg.mlir" --linalg-fuse-elementwise-ops --canonicalize --cse -o "$n.fused.mlir" \
    || { echo "$(basename "$n"): fusion failed"; status=1; }
done
exit $status
