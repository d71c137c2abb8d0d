#!/bin/sh
# Interestingness test of opt-reduction-pass.mlir: interesting (exit 1) while
# the candidate module $1 has an op with z_loss_scale = 0.5.
grep -q "z_loss_scale = 5.000000e-01" "$1" && exit 1
exit 0
