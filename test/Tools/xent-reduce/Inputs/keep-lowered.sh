#!/bin/sh
# Interestingness test of new-dialects.mlir: every candidate is interesting
# (exit 1); one that has a GPU launch is copied to $1. $2 is the candidate.
grep -q "gpu.launch_func" "$2" && cp "$2" "$1"
exit 1
