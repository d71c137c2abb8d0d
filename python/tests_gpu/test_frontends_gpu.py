"""The JAX corpus (test/Dialect/Xent/Recognize/Inputs/frontends/jax) on the
GPU: each program, raised by xent-recognize, through xent-gpu-pipeline,
called on the device with values.json's inputs, gives JAX's number. The
code the recognizer leaves around the op (the label wrap, the one-hot
mapping, a mean's division, the programs not raised at all) runs as kernels
too (xent-host-compute-to-device): the buffers are device memory.

The GPU machine has no LLVM: compile the libraries here first, into a
directory that travels with the checkout,

    XENT_OPT=build/bin/xent-opt python3 python/tests_gpu/test_frontends_gpu.py DIR

and run the test there with ``XENT_FRONTENDS_CACHE=DIR``.
"""

import hashlib
import json
import os
import re
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "test", "Dialect", "Xent", "Recognize", "Inputs", "frontends", "jax")
FILES = sorted(f for f in os.listdir(CORPUS) if f.endswith((".linalg.mlir", ".fused.mlir")))
ARGS = {"take_along_axis_masked": ("x", "t", "mask")}
DTYPES = {"x": np.float32, "t": np.int32, "mask": np.float32}

with open(os.path.join(CORPUS, "values.json")) as _f:
    VALUES = json.load(_f)


def _text(name):
    """The program with @main callable through its C interface."""
    with open(os.path.join(CORPUS, name)) as f:
        text = f.read()
    return re.sub(r"(func\.func public @main\(.*\)) \{\n",
                  r"\1 attributes {llvm.emit_c_interface} {\n", text, count=1)


def _config(name):
    return {"op": "test.frontends.jax", "file": name,
            "source": hashlib.sha256(_text(name).encode()).hexdigest()[:16]}


def _pipeline():
    sys.path.insert(0, os.path.join(ROOT, "python", "src"))
    from xent.runtime.pipelines import xent_gpu_pipeline_args
    return ["--xent-recognize"] + xent_gpu_pipeline_args(chip="sm_90")


def _result_type(name):
    m = re.search(r"func\.func public @main\(.*\) -> \((tensor<[^>]*>)", _text(name))
    return m.group(1).replace("tensor<", "memref<")


def precompile(out_dir):
    from xent.runtime import gpu
    cache = gpu.KernelCache(out_dir)
    for name in FILES:
        cache.path(_config(name), lambda n=name: _text(n), _pipeline(),
                   os.environ.get("XENT_OPT"))


@pytest.mark.parametrize("name", FILES)
def test_gives_jax_numbers_on_the_gpu(name):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from xent.runtime import gpu
    cache = gpu.KernelCache(os.environ.get("XENT_FRONTENDS_CACHE"))
    lib = cache.get(_config(name), lambda: _text(name), _pipeline(), os.environ.get("XENT_OPT"))
    program = name.split(".")[0]
    inputs = [torch.as_tensor(np.asarray(VALUES["inputs"][a], dtype=DTYPES[a])).cuda()
              for a in ARGS.get(program, ("x", "t"))]
    types = [f"memref<{'x'.join(map(str, t.shape))}x{'f32' if t.is_floating_point() else 'i32'}>"
             for t in inputs]
    got = lib.function("main", types, [_result_type(name)])(*inputs)
    torch.cuda.synchronize()
    want = np.asarray(VALUES["outputs"][program], dtype=np.float64)
    np.testing.assert_allclose(got.double().cpu().numpy().reshape(want.shape), want,
                               rtol=2e-6, atol=1e-6, err_msg=name)


if __name__ == "__main__":
    precompile(sys.argv[1])
    print(f"{len(FILES)} programs compiled into {sys.argv[1]}")
