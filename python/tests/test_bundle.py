"""The kernel bundle that installs with the package (xent.runtime.bundle,
python/setup.py, CMake's xent-python-kernels), without a GPU or torch: the
set covers every configuration the drop-in's native path asks for at rank 2
whatever the attribute values, the in-place (two-pass) variants included; a
KernelCache serves a bundle directory's entries before compiling, under the
compiler rule of any cache; and a regular `pip install ./python` copies a
bundle into the package, where the installed copy finds it."""

import itertools
import json
import os
import random
import subprocess
import sys

import pytest

from xent.runtime import bundle, gpu, kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _keys(configs):
    return {json.dumps(c, sort_keys=True) for c in configs}


PACKAGE = _keys(bundle.package_configs())


def test_every_call_signature_once():
    """Every call xent.torch.cross_entropy makes (int32 class indices widened
    to int64; rank 2 and 3: rank 1 is
    one row of rank 2, rank > 3 flattens to 3) names a library of the
    bundle whatever its values, in place or not, with or without per-row
    outputs (a library with all of them serves each)."""
    rng = random.Random(0)
    for dtype, target, rank, weighted, reduction, with_grad in itertools.product(
            ("f32", "bf16", "f16"), kernels.CALL_TARGETS, (2, 3), (False, True),
            ("mean", "sum", "none"), (False, True)):
        seen = set()
        for _ in range(6):
            attrs = dict(dtype=dtype, target=target, rank=rank, weighted=weighted,
                         reduction=reduction, ignore_index=rng.randrange(-200, 50000),
                         label_smoothing=rng.choice([0.0, rng.random()]),
                         z_loss_scale=rng.choice([0.0, rng.random() * 1e-3]),
                         softcap=rng.choice([None, rng.uniform(1, 60)]), with_grad=with_grad)
            for loss_dtype in (dtype, "f32"):
                rows = kernels.ROW_OUTPUTS if target != "probs" else kernels.ROW_OUTPUTS[:2]
                for extra in ({}, {k: True for k in rows}):
                    config = kernels.kernel_config(
                        **attrs, runtime_scalars=True, runtime_dispatch=True,
                        two_pass=rng.random() < 0.5, loss_dtype=loss_dtype, **extra)
                    lib = kernels.library_config(config)
                    assert json.dumps(lib, sort_keys=True) in PACKAGE, config
                    # An entry of its library, named for the call's signature.
                    assert config in kernels.library_entries(lib), config
                    seen.add((loss_dtype, bool(extra), json.dumps(config, sort_keys=True)))
        # The values and in place never name another library.
        assert len(seen) == len({(d, e) for d, e, _ in seen})


def test_libraries_dispatch_at_run_time():
    """The bundle's libraries are compiled with runtime-dispatch and take
    every value as an argument: the compiler, not this package, picks the
    kernel variants."""
    configs = [c for c in bundle.package_configs() if c["op"] == "xent.torch.library"]
    assert len(bundle.package_configs()) == len(PACKAGE)
    # One library per logits dtype x target kind x rank 2 / 3 x gradient;
    # int32 class indices are widened to int64 by xent.torch, not compiled.
    assert len(configs) == 3 * 2 * 2 * 2
    assert {c["target"] for c in configs} == {"i64", "probs"}
    for c in configs:
        assert c["runtime_dispatch"] and "threads" not in c and "resident_rows" not in c
        assert kernels.pipeline_args(c) == [
            f"--xent-gpu-pipeline=chip={kernels.CHIP} threads={kernels.THREADS} "
            "runtime-dispatch=true"]
    c = configs[0]
    text = kernels.kernel_module(c)
    entries = [line for line in text.splitlines() if line.startswith("func.func @xent_entry")]
    names = [kernels.entry_name(e) for e in kernels.library_entries(c)]
    assert len(entries) == len(names) == len(set(names))
    for line, name in zip(entries, names):
        assert line.startswith(f"func.func @{name}(")
        assert line.split(") attributes")[0].endswith("%ii: i64, %ls: f32, %zs: f32, %sc: f32")


def test_every_linear_call_signature_once():
    """Every call xent.torch.linear_cross_entropy makes names a library of
    the bundle whatever its values: its configuration is the one of the
    signature (dtype, reduction, bias, class weights, gradient or not), the
    rows flattened to [N, H] and the targets i64 (xent.torch.linear does
    both), the values run-time arguments."""
    from xent.runtime import linear
    rng = random.Random(1)
    for dtype, reduction, bias, cw, grad, frozen in itertools.product(
            ("f32", "bf16", "f16"), ("mean", "sum", "none"), (False, True), (False, True),
            (False, True), (None, "weight", "hidden")):
        if frozen and not grad:
            continue
        keys = set()
        for _ in range(4):
            config = linear.linear_config(
                dtype=dtype, reduction=reduction, bias=bias, class_weight=cw, with_grad=grad,
                destinations=True, runtime_scalars=True, frozen=frozen,
                ignore_index=rng.randrange(-200, 50000),
                label_smoothing=rng.choice([0.0, rng.random()]),
                z_loss_scale=rng.choice([0.0, rng.random() * 1e-3]),
                softcap=rng.choice([None, rng.uniform(1, 60)]))
            lib = linear.library_config(config)
            assert json.dumps(lib, sort_keys=True) in PACKAGE, config
            assert config in linear.library_entries(lib)
            keys.add((json.dumps(config, sort_keys=True), linear.entry_name(config)))
        assert len(keys) == 1
    text = linear.linear_module(lib)
    assert f"func.func @{linear.entry_name(config)}(" in text
    assert "ignore_index %ii label_smoothing %ls z_loss_scale %zs softcap %sc" in text
    # One library per dtype x gradient or not, an entry per signature: 12
    # for the loss alone, 12 x (nothing, the weight, the hidden frozen) with
    # a gradient; a frozen input's entry returns no gradient for it.
    linear_libs = [c for c in bundle.package_configs() if c["op"].startswith("linear")]
    assert len(linear_libs) == 6
    assert sum(len(linear.library_entries(c)) for c in linear_libs) == 3 * (12 + 36)
    frozen = linear.linear_config(dtype="bf16", reduction="mean", bias=True, with_grad=True,
                                  destinations=True, runtime_scalars=True, frozen="weight")
    text = linear.linear_module(linear.library_config(frozen))
    signature = text.split(f"func.func @{linear.entry_name(frozen)}(")[1].split(")")[0]
    assert "%dh_out" in signature and "%dw_out" not in signature and "%db_out" not in signature


def _fake_entry(directory, config, name, compiler):
    os.makedirs(os.path.join(directory, "index"), exist_ok=True)
    with open(os.path.join(directory, name), "w") as f:
        f.write("not a library")
    key = gpu.KernelCache.key(config)
    with open(os.path.join(directory, "index", f"{key}.json"), "w") as f:
        json.dump({"config": config, "library": name, "compiler": compiler}, f)
    return os.path.join(directory, name)


def test_cache_serves_the_bundle_before_compiling(tmp_path, monkeypatch):
    config = {"op": "test", "n": 1}
    shipped = _fake_entry(str(tmp_path / "bundle"), config, "shipped.so", "c1")
    cache = gpu.KernelCache(str(tmp_path / "cache"), fallbacks=[str(tmp_path / "bundle")])

    def no_compile():
        raise AssertionError("compiled although the bundle has the entry")

    # No compiler at hand (a GPU machine): served whoever built it.
    monkeypatch.setattr(gpu, "compiler_identity", lambda opt=None: None)
    assert cache.path(config, no_compile) == shipped
    # The same compiler: served.
    monkeypatch.setattr(gpu, "compiler_identity", lambda opt=None: "c1")
    assert cache.path(config, no_compile) == shipped
    # Another compiler: rebuilt into the cache (here: the build fails, so
    # the bundle's entry is served with a warning, as for a stale cache).
    monkeypatch.setattr(gpu, "compiler_identity", lambda opt=None: "c2")

    def fails():
        raise gpu.DriverError("no compiler")

    monkeypatch.setattr(gpu, "compile_gpu_module", lambda *a, **k: fails())
    with pytest.warns(RuntimeWarning, match="built by another compiler"):
        assert cache.path(config, lambda: "module {}") == shipped
    # A configuration nobody has: the error names it.
    with pytest.raises(gpu.DriverError, match='"n": 2'):
        cache.path({"op": "test", "n": 2}, lambda: "module {}")
    # The bundle is never written.
    assert sorted(os.listdir(tmp_path / "bundle" / "index")) == [
        f"{gpu.KernelCache.key(config)}.json"]


def test_prune_keeps_exactly_the_configurations(tmp_path):
    """A rebuild leaves the bundle holding its configurations only: entries
    of others and libraries no entry names (an earlier compiler's) go."""
    d = str(tmp_path / "bundle")
    keep, other = ({"op": "test", "dtype": dtype} for dtype in ("bf16", "f16"))
    kept = _fake_entry(d, keep, "xent_kept.so", "c2")
    _fake_entry(d, other, "xent_other.so", "c2")
    with open(os.path.join(d, "xent_stale.so"), "w") as f:
        f.write("an earlier compiler's library")
    with open(os.path.join(d, "libxent_cuda_runtime.so"), "w") as f:
        f.write("the runtime")
    assert bundle.prune(d, [keep]) == 3
    assert sorted(os.listdir(d)) == ["index", "libxent_cuda_runtime.so", "xent_kept.so"]
    assert os.listdir(os.path.join(d, "index")) == [f"{gpu.KernelCache.key(keep)}.json"]
    assert gpu.KernelCache(d).lookup(keep) == kept
    assert bundle.prune(d, [keep]) == 0


def test_bundle_directories(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(bundle.BUNDLE_ENV, str(empty))
    assert bundle.bundle_directories() == []  # no index: not a bundle
    (empty / "index").mkdir()
    assert bundle.bundle_directories() == [str(empty)]
    monkeypatch.setenv(bundle.BUNDLE_ENV, "0")
    assert bundle.bundle_directories() == []


def test_pip_install_copies_the_bundle(tmp_path):
    """A regular install of ./python with a bundle (here a fake entry) has it
    as xent/kernels, and the installed package looks there."""
    source = str(tmp_path / "kernels")
    _fake_entry(source, {"op": "test"}, "x.so", None)
    target = str(tmp_path / "site")
    env = {**os.environ, bundle.BUNDLE_ENV: source}
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                          "--no-index", "--no-deps", "--quiet", "--target", target,
                          os.path.join(ROOT, "python")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    installed = os.path.join(target, "xent", "kernels")
    assert sorted(os.listdir(installed)) == ["index", "x.so"]
    env = {k: v for k, v in os.environ.items()
           if k not in (bundle.BUNDLE_ENV, "PYTHONPATH", "XENT_BUILD_DIR")}
    env["PYTHONPATH"] = target
    probe = subprocess.run([sys.executable, "-c",
                            "import xent.runtime.bundle as b; print(b.__file__); "
                            "print(b.bundle_directories())"],
                           capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert probe.returncode == 0, probe.stderr
    where, dirs = probe.stdout.splitlines()
    assert where.startswith(target)
    assert eval(dirs) == [installed]


def test_every_slice_call_signature_once():
    """Every call of vocab_parallel_cross_entropy's class-slice kernels
    (xent.runtime.slices) names an entry of a bundled library: one library
    per logits dtype x statistics or gradient, an entry per class weights x
    label smoothing (x reduction for the gradient); the offset, C and the
    scalars are the entries' last arguments. The module is what
    xent-gpu-pipeline compiles (to PTX here: no ptxas needed)."""
    from xent.runtime import slices
    from xent.testing import default_xent_opt
    libs = [c for c in bundle.package_configs() if c["op"] == slices.LIBRARY_OP]
    assert len(libs) == 3 * 2
    for dtype, grad in itertools.product(("f32", "bf16", "f16"), (False, True)):
        lib = slices.library_config(dtype, grad)
        assert json.dumps(lib, sort_keys=True) in PACKAGE
        entries = slices.library_entries(lib)
        assert len(entries) == (12 if grad else 4)
        text = slices.module(lib)
        for e in entries:
            head = text.split(f"func.func @{slices.entry_name(lib, e)}(")[1].split(")")[0]
            scalars = ["%ii: i64"] + (["%ls: f32"] if e["smoothing"] else []) + \
                (["%zs: f32"] if grad else []) + ["%sc: f32", "%o: i64", "%n: i64"]
            assert head.endswith(", ".join(scalars)), head
            k = slices.row_stats_width(e["weighted"], e["smoothing"])
            assert f"tensor<?x{k}xf32>" in text.split(f"@{slices.entry_name(lib, e)}(")[1]
    out = subprocess.run([default_xent_opt(), "-", "--xent-gpu-pipeline=chip=sm_90 "
                          "runtime-dispatch=true format=isa"],
                         input=slices.module(slices.library_config("bf16", True)),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "xent." not in out.stdout.replace("xent_", "")
