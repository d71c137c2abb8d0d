"""The xent source checkout this package runs from, if any.

An editable install (``pip install -e python``) imports the package from
``<checkout>/python/src/xent``; defaults that point into the checkout's build
(``build/bin/xent-opt``, ``build/lib/libxent_cuda_runtime.so``) are derived
from it.  A copy installed into site-packages has no checkout: those defaults
are then absent and the environment variables name the tools.
"""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["checkout_root"]


def checkout_root() -> Optional[str]:
    """``<checkout>`` when this file is ``<checkout>/python/src/xent/_checkout.py``, else None."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    if os.path.isfile(os.path.join(root, "python", "pyproject.toml")) and os.path.isfile(
            os.path.join(root, "CMakeLists.txt")):
        return root
    return None
