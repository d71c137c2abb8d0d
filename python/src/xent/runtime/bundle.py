"""The kernel bundle that installs with the package.

xent.torch's calls compile one library per signature of a call (dtype,
target kind, rank, class weights, reduction, gradient or not, loss dtype,
per-row outputs); every value is a run-time argument and each library's host
code picks the kernel variant per call (``runtime_dispatch``), so this set
is short. :func:`package_configs` lists it, :func:`build` compiles it (LLVM 22,
``xent-opt`` and the CUDA toolkit's ``ptxas``; no GPU) into a directory that
the CMake target ``xent-python-kernels`` fills at
``<build>/python/xent-kernels`` and ``pip install ./python`` copies into the
package as ``xent/kernels``. A GPU machine with the installed package then
runs every such call without compiling anything.

Lookup order of the drop-in's libraries (:func:`kernel_cache`):
``$XENT_CACHE_DIR`` (else ``~/.cache/xent``: the JIT cache, written), then
the bundle (:func:`bundle_directories`, read-only), then compiling into the
cache where a compiler is at hand. An entry another compiler built is served
only where no compiler is at hand, as for any cache (gpu.KernelCache).

    python3 -m xent.runtime.bundle OUT_DIR [--jobs N] [--limit K]

(with ``XENT_OPT`` pointing at ``xent-opt``) compiles the set into OUT_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Dict, List, Optional

from .._checkout import checkout_root
from . import gpu
from .kernels import call_configs, precompile

__all__ = ["BUNDLE_ENV", "bundle_directories", "build", "kernel_cache", "package_configs",
           "prune"]

BUNDLE_ENV = "XENT_KERNEL_BUNDLE"


def package_configs() -> List[Dict]:
    """Every library xent.torch.cross_entropy asks for (kernels.call_configs):
    one per logits dtype × target kind × rank 2 (rank-1 logits are one row
    of rank 2) or 3 (higher ranks flatten their trailing dims) × gradient or
    not, each with the entries of its calls' class weights, reductions, loss
    dtypes and per-row outputs. Values, in place and the launch geometry are
    chosen at run time by each library's host code. The gradient scaling
    kernels are part of each gradient library. Then those of
    xent.torch.linear_cross_entropy (xent.runtime.linear.call_configs) and
    of xent.torch.vocab_parallel_cross_entropy's slices
    (xent.runtime.slices.call_configs)."""
    from . import linear, slices  # noqa: PLC0415 - linear imports this module
    return call_configs(ranks=(2, 3)) + linear.call_configs() + slices.call_configs()


def bundle_directories() -> List[str]:
    """The bundle directories present, in lookup order: ``$XENT_KERNEL_BUNDLE``
    (``0`` or empty: none), the installed package's ``xent/kernels``, and,
    from a source checkout, ``<checkout>/build/python/xent-kernels``."""
    env = os.environ.get(BUNDLE_ENV)
    if env is not None:
        return [env] if env not in ("", "0") and os.path.isdir(os.path.join(env, "index")) else []
    candidates = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "kernels")]
    root = checkout_root()
    if root:
        build_dir = os.environ.get("XENT_BUILD_DIR") or os.path.join(root, "build")
        candidates.append(os.path.join(build_dir, "python", "xent-kernels"))
    return [c for c in candidates if os.path.isdir(os.path.join(c, "index"))]


_CACHE: List[gpu.KernelCache] = []


def kernel_cache() -> gpu.KernelCache:
    """The process's cache of xent.torch libraries: ``$XENT_CACHE_DIR`` with
    the bundle behind it."""
    if not _CACHE:
        _CACHE.append(gpu.KernelCache(os.environ.get("XENT_CACHE_DIR"),
                                      fallbacks=bundle_directories()))
    return _CACHE[0]


def build(out_dir: str, configs: Optional[List[Dict]] = None, jobs: Optional[int] = None,
          opt_tool: Optional[str] = None, log=None) -> int:
    """Compiles `configs` (default :func:`package_configs`) into `out_dir`
    with `jobs` compilations at a time (default: the CPUs); returns how many
    were compiled (entries already there and built by this compiler are
    kept). Afterwards `out_dir` holds exactly `configs` (:func:`prune`)."""
    configs = package_configs() if configs is None else configs
    opt = opt_tool or os.environ.get("XENT_OPT")
    compiler = gpu.compiler_identity(opt)
    cache = gpu.KernelCache(out_dir)
    todo = [c for c in configs if cache.lookup(c, compiler) is None]

    def progress(done, total):
        if log and (done % 100 == 0 or done == total):
            log(f"{done}/{total}")
    precompile(todo, out_dir, jobs=jobs or os.cpu_count() or 1, opt_tool=opt,
               progress=progress)
    prune(out_dir, configs)
    return len(todo)


def prune(out_dir: str, configs: List[Dict]) -> int:
    """Removes from the bundle directory `out_dir` the index entries of
    configurations not in `configs` and every library no entry names (what
    an earlier compiler or an earlier enumeration left: a rebuild replaces
    entries, and the package would otherwise carry the old libraries);
    returns how many files went."""
    index = os.path.join(out_dir, "index")
    wanted = {f"{gpu.KernelCache.key(c)}.json" for c in configs}
    removed, libraries = 0, set()
    for name in os.listdir(index) if os.path.isdir(index) else ():
        path = os.path.join(index, name)
        if name not in wanted:
            os.remove(path)
            removed += 1
            continue
        with open(path) as f:
            libraries.add(json.load(f).get("library"))
    for name in os.listdir(out_dir):
        if name.startswith("xent_") and name.endswith(".so") and name not in libraries:
            os.remove(os.path.join(out_dir, name))
            removed += 1
    return removed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m xent.runtime.bundle",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None,
                        help="compile only the first K configurations (tests)")
    args = parser.parse_args(argv)
    configs = package_configs()
    if args.limit is not None:
        configs = configs[:args.limit]
    start = time.time()
    n = build(args.out_dir, configs, args.jobs,
              log=lambda m: print(f"xent-python-kernels: {m}", flush=True))
    print(f"xent-python-kernels: {len(configs)} configurations in {args.out_dir} "
          f"({n} compiled, {time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
