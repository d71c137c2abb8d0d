#!/bin/sh
# Interestingness test of reduction-tree.mlir: interesting (exit 1) while the
# CPU fallback of the module still computes a softcap, i.e. the inlined
# decomposition has a math.tanh. $1 is the candidate module.
"$XENT_OPT" "$1" --xent-inline-decomposition 2>/dev/null | grep -q "math.tanh" && exit 1
exit 0
