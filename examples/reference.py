"""Float64 reference for examples/cross_entropy.mlir.

Reads the constants of the example's @main and evaluates PyTorch's
cross-entropy semantics with python/src/xent/testing/reference.py, so the CPU result that
scripts/run-example.sh prints can be compared by eye."""
import ast
import os
import re

import numpy as np

from xent.testing import reference

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = open(os.path.join(HERE, "cross_entropy.mlir")).read()


def constant(name):
    m = re.search(r"%" + name + r" = arith.constant dense<(.*?)> :", TEXT, re.S)
    return np.array(ast.literal_eval(m.group(1)))


logits = constant("logits").astype(np.float64)
target = constant("target").astype(np.int64)
weight = constant("weight").astype(np.float64)
kwargs = dict(weight=weight, reduction="mean", label_smoothing=0.1)
loss, _ = reference.cross_entropy(logits, target, **kwargs)
dlogits = reference.cross_entropy_grad(np.float64(1.0), logits, target, **kwargs)
np.set_printoptions(precision=6, suppress=True)
print("loss    ", float(loss))
print("dlogits\n", dlogits)
