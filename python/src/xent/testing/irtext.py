"""Printed IR as the recognizer's tests handle it: a pass pipeline argument
for ``xent-opt``, and a module without the decomposition regions of its
xent ops (so that a later pass builds each op's own decomposition from its
attributes instead of the captured chain)."""

from __future__ import annotations

import re
from typing import Callable, List, Tuple

__all__ = ["VARIANTS", "pass_pipeline", "strip_regions", "variant_module",
           "with_c_interface"]

#: The three ways a recognizer test compiles a program for the CPU.
VARIANTS = ("plain", "recognized", "canonical")


def pass_pipeline(*parts: str) -> List[str]:
    """``--pass-pipeline=builtin.module(...)`` of the non-empty `parts`."""
    return [f"--pass-pipeline=builtin.module({','.join(p for p in parts if p)})"]


def strip_regions(text: str) -> str:
    """The printed module without the decomposition region of any xent op
    (the op's line keeps everything before `` decomposition {``; the region
    ends at the first line holding its closing brace at the op's indent)."""
    out, skip = [], None
    for line in text.split("\n"):
        if skip is not None:
            if line == skip:
                skip = None
            continue
        if re.search(r"= xent\.\w+ ", line) and line.endswith(" decomposition {"):
            out.append(line[:-len(" decomposition {")])
            skip = " " * (len(line) - len(line.lstrip())) + "}"
            continue
        out.append(line)
    return "\n".join(out)


def variant_module(text: str, variant: str,
                   recognize: Callable[[str], str]) -> Tuple[str, List[str]]:
    """The module and the ``xent-opt`` arguments that compile `text` for the
    CPU as `variant`: ``plain`` as written; ``recognized``: xent-recognize,
    then the regions it captured inlined; ``canonical``: `recognize(text)`
    (xent-recognize's output) without the regions, so that each op's own
    decomposition, built from its attributes alone, runs."""
    if variant == "plain":
        return text, pass_pipeline("xent-cpu-pipeline")
    if variant == "recognized":
        return text, pass_pipeline("xent-recognize", "xent-inline-decomposition",
                                   "xent-cpu-pipeline")
    assert variant == "canonical", variant
    return strip_regions(recognize(text)), pass_pipeline("xent-cpu-pipeline")


def with_c_interface(text: str, name: str) -> str:
    """`text` with ``func.func @name`` (public or not) given the
    ``llvm.emit_c_interface`` attribute, so that a compiled library exports
    ``_mlir_ciface_name``; its signature line must end the line with ``{``."""
    header = re.compile(rf"^\s*func\.func (public )?@{re.escape(name)}\(")
    lines = text.split("\n")
    found = False
    for i, line in enumerate(lines):
        if header.match(line):
            assert line.endswith(" {"), line
            lines[i] = line[:-2] + " attributes {llvm.emit_c_interface} {"
            found = True
    assert found, f"no func.func @{name}"
    return "\n".join(lines)
