"""Builds the on-chip prototype (no GPU needed) into OUT_DIR (default .device/onchip):

    XENT_OPT=build/bin/xent-opt build/venv/bin/python \\
        experiments/onchip/build.py [OUT_DIR] [--xent-bundle]

Writes onchip.mlir, the shared library (host code + embedded cubin, linked
against libxent_cuda_runtime.so, copied beside it), onchip.json (library name
and variants), and a ptxas resource report (ptxas.txt). --xent-bundle also
precompiles the current xent.torch kernel for the bf16/i64/mean fwd+bwd
configuration into OUT_DIR/xent (for the reference timing; optional).
"""
import json
import os
import re
import subprocess
import sys

from xent.runtime import gpu

import gen  # next to this script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def ptx_report(text, out_dir):
    """Lowers to PTX (format=isa) and runs ptxas -v for registers / spills."""
    opt = os.environ.get("XENT_OPT", os.path.join(ROOT, "build/bin/xent-opt"))
    lowered = subprocess.run([opt, *gpu.gpu_pipeline_args(format="isa"), "-"], input=text.encode(),
                             capture_output=True, check=True).stdout.decode()
    raw = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', lowered).group(1)
    out, i = bytearray(), 0
    while i < len(raw):
        if raw[i] == "\\":
            if raw[i + 1] in '\\"':
                out += raw[i + 1].encode(); i += 2
            else:
                out.append(int(raw[i + 1:i + 3], 16)); i += 3
        else:
            out += raw[i].encode(); i += 1
    ptx = os.path.join(out_dir, "onchip.ptx")
    with open(ptx, "wb") as f:
        f.write(bytes(out).rstrip(b"\0"))
    ptxas = "/usr/local/cuda/bin/ptxas"
    r = subprocess.run([ptxas, "-arch=sm_90", "-v", ptx, "-o", os.devnull], capture_output=True, text=True)
    rep = []
    for line in r.stderr.splitlines():
        if "Compiling entry" in line or "Used" in line or "spill" in line:
            rep.append(line.replace("ptxas info    : ", "").strip())
    with open(os.path.join(out_dir, "ptxas.txt"), "w") as f:
        f.write("\n".join(rep) + "\n")
    return "\n".join(rep)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    out_dir = os.path.abspath(args[0] if args else os.path.join(ROOT, ".device/onchip"))
    os.makedirs(out_dir, exist_ok=True)
    text, meta = gen.module_text()
    with open(os.path.join(out_dir, "onchip.mlir"), "w") as f:
        f.write(text)
    so = gpu.compile_gpu_module(text, out_dir=out_dir)
    with open(os.path.join(out_dir, "onchip.json"), "w") as f:
        json.dump({"library": os.path.basename(so), "variants": meta}, f, indent=1)
    print("library:", so)
    print(ptx_report(text, out_dir))
    if "--xent-bundle" in argv:
        from xent.runtime.kernels import kernel_config, precompile
        cfg = kernel_config(dtype="bf16", target="i64", rank=2, weighted=False, reduction="mean",
                            ignore_index=-100, label_smoothing=0.0, z_loss_scale=0.0, softcap=None,
                            with_grad=True)
        precompile([cfg], os.path.join(out_dir, "xent"))
        print("xent bundle:", os.path.join(out_dir, "xent"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
