"""Printed IR as the recognizer's tests handle it: a pass pipeline argument
for ``xent-opt``, and a module without the decomposition regions of its
xent ops (so that a later pass builds each op's own decomposition from its
attributes instead of the captured chain)."""

from __future__ import annotations

import re
from typing import List

__all__ = ["pass_pipeline", "strip_regions"]


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
