"""Tooling of the test suites that run the xent ops (not needed at run time).

* :mod:`xent.testing.reference`: the float64 NumPy reference of PyTorch's
  cross-entropy (plus z-loss and softcap), the numerical specification the
  ops are tested against;
* :mod:`xent.testing.codegen`: MLIR functions calling the xent ops for one
  :class:`~xent.testing.codegen.OpConfig` each, and their inputs;
* :mod:`xent.testing.randomized`: seeded random configurations and
  adversarial inputs for differential testing;
* :mod:`xent.testing.checks`: compile generated functions, call one, compare
  with the reference within the documented tolerances (docs/testing.md).

The names of :mod:`~xent.testing.checks` are re-exported here
(``from xent.testing import check_config``).
"""

from .checks import (FINITE_MAX, ROUNDING, SUBNORMAL_SPACING, UNIT_ROUNDOFF, build_library,
                     check_config, default_xent_opt, expect_close, loose_rows, relative_l2)

__all__ = [
    "UNIT_ROUNDOFF", "ROUNDING", "SUBNORMAL_SPACING", "FINITE_MAX", "default_xent_opt",
    "build_library", "expect_close", "relative_l2", "loose_rows", "check_config",
]
