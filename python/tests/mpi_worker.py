"""One MPI rank of test_mpi.py: call a partitioned function on this rank's shard.

Run as ``mpirun -np P python mpi_worker.py LIB CASES.npz OUT_DIR``.  ``CASES.npz``
holds, for each function ``f``, its unsharded inputs ``f.<i>`` and how each is
split (``f.split.<i>``: the dimension split over the ranks, or -1 for
replicated) and the result ranks (``f.ranks``).  The rank calls ``f`` on its
slices and writes its results to ``OUT_DIR/rank<r>.npz`` as ``f.<j>``.
"""

import ctypes
import ctypes.util
import os
import sys

import numpy as np

from xent.runtime.driver import Library


def _mpi():
    # OpenMPI's components need libmpi's symbols globally visible.
    lib = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so", mode=ctypes.RTLD_GLOBAL)
    if lib.MPI_Init(None, None) != 0:
        raise SystemExit("MPI_Init failed")
    return lib


def main(lib_path: str, cases_path: str, out_dir: str) -> None:
    mpi = _mpi()
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    cases = np.load(cases_path)
    names = sorted({k.split(".")[0] for k in cases.files})
    lib = Library(lib_path)
    out = {}
    for name in names:
        inputs = []
        i = 0
        while f"{name}.{i}" in cases.files:
            value = cases[f"{name}.{i}"]
            dim = int(cases[f"{name}.split.{i}"])
            if dim >= 0:
                value = np.ascontiguousarray(np.split(value, size, axis=dim)[rank])
            inputs.append(value)
            i += 1
        ranks = [int(r) for r in cases[f"{name}.ranks"]]
        results = lib.call(name, inputs, [("f32", r) for r in ranks])
        for j, r in enumerate(results):
            out[f"{name}.{j}"] = r
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **out)
    mpi.MPI_Finalize()


if __name__ == "__main__":
    main(*sys.argv[1:4])
