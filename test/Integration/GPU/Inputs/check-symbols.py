"""Checks that a compiled GPU module's undefined mgpu* and xent* symbols are all
exported by the CUDA runtime library.

usage: check-symbols.py <llvm-nm> <module.so> <libxent_cuda_runtime.so>

Prints "<symbol> ok" or "<symbol> MISSING" for each undefined such symbol
of the module (sorted; xent*: the runtime's GEMMs) and exits 1 if one is missing or there is none.
"""

import subprocess
import sys


def symbols(nm, path, *flags):
    out = subprocess.run([nm, "-D", *flags, "--format=just-symbols", path],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return set(out.split())


def main():
    nm, module, runtime = sys.argv[1:4]
    needed = sorted(s for s in symbols(nm, module, "--undefined-only")
                    if s.startswith(("mgpu", "xent")))
    provided = symbols(nm, runtime, "--defined-only")
    missing = [s for s in needed if s not in provided]
    for s in needed:
        print(s, "MISSING" if s in missing else "ok")
    return 1 if missing or not needed else 0


if __name__ == "__main__":
    sys.exit(main())
