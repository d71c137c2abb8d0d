#!/usr/bin/env python3
"""Prints the PTX embedded in a `gpu.binary` (format=isa) of an MLIR module.

Usage: xent-opt m.mlir --xent-gpu-pipeline=format=isa | extract_ptx.py [NAME] > m.ptx
With NAME, only the PTX of `gpu.binary @NAME` (one module for ptxas).
MLIR prints the assembly as a string with two-digit hex escapes."""
import re
import sys

text = sys.stdin.read()
found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if len(sys.argv) > 1:
    found = [a for name, a in re.findall(
        r'gpu\.binary @(\w+)[^\n]*?assembly = "((?:[^"\\]|\\.)*)"', text)
        if name == sys.argv[1]]
if not found:
    sys.exit("no gpu.binary with PTX assembly in the input")
for assembly in found:  # one per gpu.binary
    ptx = re.sub(r'\\([0-9A-Fa-f]{2})', lambda h: chr(int(h.group(1), 16)), assembly)
    sys.stdout.write(ptx.replace('\\\\', '\\'))
