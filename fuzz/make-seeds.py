#!/usr/bin/env python3
"""Writes the seed corpus of xent-fuzz-passes: every .mlir file of the test
suite and the examples, split at `// -----` like `--split-input-file`, one
file per chunk (RUN/CHECK comments kept: they are comments to the parser).

usage: make-seeds.py OUT_DIR
"""

import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("test", "examples", os.path.join("python", "tests"))


def chunks():
    for source in SOURCES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, source)):
            for name in sorted(files):
                if not name.endswith(".mlir"):
                    continue
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    text = f.read()
                for chunk in text.split("// -----"):
                    if chunk.strip():
                        yield chunk


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for chunk in chunks():
        data = chunk.encode()
        path = os.path.join(out, hashlib.sha1(data).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
        n += 1
    print(f"{n} seeds in {out}")


if __name__ == "__main__":
    main()
