"""Partitioned losses executed under MPI (docs/scale-out.md).

Each case is one module of four functions covering the three ops, every
reduction, weights, ignore_index, label smoothing, z-loss, softcap and
probability targets. Its logits are split over a 1-D grid of P ranks by rows
or by classes; the module goes through ``sharding-propagation``,
``shard-partition``, ``convert-shard-to-mpi`` and ``xent-cpu-pipeline``, runs
under ``mpirun -np P`` (``mpi_worker.py``, one process per rank), and the
gathered loss and gradient must match the unsharded module run in one process
to 1e-6 relative (and the float64 reference to f32 accuracy).
"""

import ctypes.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from xent.runtime.driver import Library, compile_module
from xent.testing import reference as ref
from xent.testing.checks import default_xent_opt

MPIRUN = shutil.which("mpirun")
LIBMPI = ctypes.util.find_library("mpi")
pytestmark = pytest.mark.skipif(not (MPIRUN and LIBMPI),
                                reason="needs OpenMPI (mpirun, libmpi.so)")

N, C = 8, 16
IGNORE = 3
WORKER = os.path.join(os.path.dirname(__file__), "mpi_worker.py")

# How each kind of argument is split: the dimension split over the ranks.
SPLITS = {
    "rows": {"logits": 0, "index": 0, "weight": -1, "probs": 0, "per_row": 0},
    "classes": {"logits": 1, "index": -1, "weight": 0, "probs": 1, "per_row": -1},
}
TYPES = {"logits": f"tensor<{N}x{C}xf32>", "index": f"tensor<{N}xi64>",
         "weight": f"tensor<{C}xf32>", "probs": f"tensor<{N}x{C}xf32>",
         "per_row": f"tensor<{N}xf32>", "scalar": "tensor<f32>"}

# name: (argument kinds, result types, body using %a0..%aK)
FUNCTIONS = {
    "joint_mean": (["logits", "index", "weight", "scalar"], ["scalar", "scalar", "logits"], """
    %l, %z, %d = xent.cross_entropy_and_grad mean %a3, %a0, %a1 weight %a2
        {ignore_index = 3 : i64, label_smoothing = 1.0e-01 : f32,
         z_loss_scale = 1.0e-02 : f32, softcap = 4.0 : f32}
        : (tensor<f32>, T_logits, T_index, T_weight) -> (tensor<f32>, tensor<f32>, T_logits)
    return %l, %z, %d : tensor<f32>, tensor<f32>, T_logits"""),
    "split_sum": (["logits", "index", "scalar"], ["scalar", "logits"], """
    %l = xent.cross_entropy sum %a0, %a1 {label_smoothing = 5.0e-02 : f32}
        : (T_logits, T_index) -> tensor<f32>
    %d = xent.cross_entropy_grad sum %a2, %a0, %a1 {label_smoothing = 5.0e-02 : f32}
        : (tensor<f32>, T_logits, T_index) -> T_logits
    return %l, %d : tensor<f32>, T_logits"""),
    "split_none": (["logits", "index", "weight", "per_row"], ["per_row", "logits"], """
    %l = xent.cross_entropy none %a0, %a1 weight %a2 {ignore_index = 3 : i64, z_loss_scale = 1.0e-02 : f32}
        : (T_logits, T_index, T_weight) -> T_per_row
    %d = xent.cross_entropy_grad none %a3, %a0, %a1 weight %a2 {ignore_index = 3 : i64, z_loss_scale = 1.0e-02 : f32}
        : (T_per_row, T_logits, T_index, T_weight) -> T_logits
    return %l, %d : T_per_row, T_logits"""),
    "probs_mean": (["logits", "probs", "scalar"], ["scalar", "logits"], """
    %l, %d = xent.cross_entropy_and_grad mean %a2, %a0, %a1
        {label_smoothing = 1.0e-01 : f32, softcap = 5.0 : f32}
        : (tensor<f32>, T_logits, T_probs) -> (tensor<f32>, T_logits)
    return %l, %d : tensor<f32>, T_logits"""),
}


def _module(mode=None):
    """The module; with `mode`, every tensor argument annotated with its split."""
    lines = []
    if mode:
        lines.append('module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {')
        lines.append("shard.grid @grid(shape = P) {sym_visibility = \"private\"}")
    else:
        lines.append("module {")
    for name, (kinds, results, body) in FUNCTIONS.items():
        plain = [not mode or k == "scalar" for k in kinds]
        args = ", ".join(f"%{'a' if p else 'x'}{i}: {TYPES[k]}"
                         for i, (k, p) in enumerate(zip(kinds, plain)))
        res = ", ".join(TYPES[r] for r in results)
        lines.append(f"func.func @{name}({args}) -> ({res}) attributes {{llvm.emit_c_interface}} {{")
        for i, k in enumerate(kinds):
            if plain[i]:
                continue
            dim = SPLITS[mode][k]
            axes = "[]" if dim < 0 else ("[[0]]" if dim == 0 else "[[], [0]]")
            axes = "[[]]" if dim < 0 else axes
            lines.append(f"  %s{i} = shard.sharding @grid split_axes = {axes} : !shard.sharding")
            lines.append(f"  %a{i} = shard.shard %x{i} to %s{i} : {TYPES[k]}")
        for k, t in TYPES.items():
            body = body.replace(f"T_{k}", t)
        lines.append(body)
        lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _inputs(rng):
    logits = (rng.standard_normal((N, C)) * 3).astype(np.float32)
    index = rng.integers(0, C, size=N).astype(np.int64)
    index[[1, 5]] = IGNORE  # ignored rows
    weight = rng.uniform(0.5, 2.0, size=C).astype(np.float32)
    probs = rng.dirichlet(np.ones(C), size=N).astype(np.float32)
    return {"logits": logits, "index": index, "weight": weight, "probs": probs,
            "per_row": rng.standard_normal(N).astype(np.float32),
            "scalar": np.asarray(0.75, dtype=np.float32)}


def _openmpi_op_symbols(llvm_text):
    """MLIR 22 lowers MPI_SUM / MPI_MAX for OpenMPI to @ompi_mpi_sum /
    @ompi_mpi_max; OpenMPI's libmpi exports them as ompi_mpi_op_sum /
    ompi_mpi_op_max (docs/scale-out.md)."""
    for op in ("sum", "max", "min", "prod"):
        llvm_text = llvm_text.replace(f"@ompi_mpi_{op}", f"@ompi_mpi_op_{op}")
    return llvm_text


def _libmpi_path():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        path = os.path.join(d, LIBMPI)
        if os.path.exists(path):
            return path
    return LIBMPI


def _reference(name, args):
    """float64 results of `name`, from xent.testing.reference."""
    if name == "joint_mean":
        x, t, w, g = args
        kw = dict(weight=w, ignore_index=IGNORE, label_smoothing=0.1, z_loss_scale=0.01, softcap=4.0)
        loss, z = ref.cross_entropy(x, t, **kw)
        return [loss, z, ref.cross_entropy_grad(g, x, t, **kw)]
    if name == "split_sum":
        x, t, g = args
        kw = dict(reduction="sum", label_smoothing=0.05)
        return [ref.cross_entropy(x, t, **kw)[0], ref.cross_entropy_grad(g, x, t, **kw)]
    if name == "split_none":
        x, t, w, g = args
        kw = dict(weight=w, ignore_index=IGNORE, reduction="none", z_loss_scale=0.01)
        return [ref.cross_entropy(x, t, **kw)[0], ref.cross_entropy_grad(g, x, t, **kw)]
    x, q, g = args
    kw = dict(label_smoothing=0.1, softcap=5.0)
    return [ref.cross_entropy(x, q, **kw)[0], ref.cross_entropy_grad(g, x, q, **kw)]


def _check(actual, expected, what, rtol):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, what
    scale = max(float(np.abs(expected).max()), 1e-30)
    err = float(np.abs(actual - expected).max()) / scale
    assert err <= rtol, f"{what}: max |error| / max |expected| = {err:.3g} > {rtol}"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return os.environ.get("XENT_CACHE_DIR") or str(tmp_path_factory.mktemp("xent-cache"))


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("mode", ["rows", "classes"])
def test_partitioned_matches_unsharded(mode, ranks, cache, tmp_path):
    opt = default_xent_opt()
    single = Library(compile_module(_module(), ["--xent-cpu-pipeline"], opt, out_dir=cache))
    text = _module(mode).replace("shape = P", f"shape = {ranks}")
    partition = ("--pass-pipeline=builtin.module(func.func(sharding-propagation,shard-partition),"
                 "convert-shard-to-mpi,symbol-dce,xent-cpu-pipeline)")
    lowered = subprocess.run([opt, partition], input=text.encode(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, check=False)
    assert lowered.returncode == 0, lowered.stderr.decode(errors="replace")
    lib = compile_module(_openmpi_op_symbols(lowered.stdout.decode()), [], opt, out_dir=cache,
                         link_libraries=[_libmpi_path()])

    rng = np.random.default_rng(15)
    data = _inputs(rng)
    cases, expected = {}, {}
    for name, (kinds, results, _) in FUNCTIONS.items():
        args = [data["probs"] if k == "probs" else data[k] for k in kinds]
        for i, (k, a) in enumerate(zip(kinds, args)):
            cases[f"{name}.{i}"] = a
            cases[f"{name}.split.{i}"] = np.asarray(-1 if k == "scalar" else SPLITS[mode][k])
        cases[f"{name}.ranks"] = np.asarray([0 if r == "scalar" else (1 if r == "per_row" else 2)
                                             for r in results])
        expected[name] = (single.call(name, args, [("f32", int(r)) for r in cases[f"{name}.ranks"]]),
                          _reference(name, args))
    cases_path = tmp_path / "cases.npz"
    np.savez(cases_path, **cases)

    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    cmd = [MPIRUN, "-np", str(ranks), "--oversubscribe", "--allow-run-as-root",
           sys.executable, WORKER, lib, str(cases_path), str(tmp_path)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode(errors="replace")
    per_rank = [np.load(tmp_path / f"rank{r}.npz") for r in range(ranks)]

    for name, (kinds, results, _) in FUNCTIONS.items():
        unsharded, f64 = expected[name]
        for j, kind in enumerate(results):
            shards = [p[f"{name}.{j}"] for p in per_rank]
            dim = -1 if kind == "scalar" else SPLITS[mode][kind]
            if dim < 0:  # replicated: every rank holds the whole value
                for r, s in enumerate(shards[1:], 1):
                    np.testing.assert_array_equal(s, shards[0], err_msg=f"{name}.{j} rank {r}")
                gathered = shards[0]
            else:
                gathered = np.concatenate(shards, axis=dim)
            what = f"{mode} x{ranks} {name} result {j}"
            _check(gathered, unsharded[j], what + " vs unsharded", 1e-6)
            _check(gathered, f64[j], what + " vs float64", 2e-5)
