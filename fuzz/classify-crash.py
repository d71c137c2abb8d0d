#!/usr/bin/env python3
"""Classifies the replay output of one fuzz crash input: prints "xent" or
"upstream" (see fuzz/run-fuzzers.sh).

xent:     a harness check failed ("xent fuzz check failed"), a UBSan report
          points into xent's sources, or one of the top three frames of the
          first stack trace (sanitizer, libc and libFuzzer frames skipped)
          is xent code;
upstream: anything else, e.g. a SEGV inside the uninstrumented MLIR parser.

usage: classify-crash.py REPLAY_OUTPUT
"""

import re
import sys

XENT = re.compile(r"xent::|/lib/(Dialect|Conversion|Pipelines|Runtime)/|/fuzz/xent-fuzz|"
                  r"/include/xent/|Xent(Ops|Attrs|Decomposition|ToGPU)")
NOISE = re.compile(r"__sanitizer|__asan|__ubsan|__interceptor|fuzzer::|libc\.so|"
                   r"\babort\b|\braise\b|pthread_kill|libclang_rt|reportFailure|"
                   r"\b(memmove|memcpy|memset|malloc|free|operator new|operator delete)\b")
FRAME = re.compile(r"^\s+#\d+ 0x[0-9a-f]+ (.*)$")


def classify(text: str) -> str:
    if "xent fuzz check failed" in text:
        return "xent"
    for line in text.splitlines():
        if "runtime error:" in line:
            return "xent" if XENT.search(line.split("runtime error:")[0]) else "upstream"
    frames = []
    for line in text.splitlines():
        m = FRAME.match(line)
        if not m:
            if frames:
                break
            continue
        frame = m.group(1)
        if "LLVMFuzzerTestOneInput" in frame:
            break
        if not NOISE.search(frame):
            frames.append(frame)
    return "xent" if any(XENT.search(f) for f in frames[:3]) else "upstream"


if __name__ == "__main__":
    with open(sys.argv[1], errors="replace") as f:
        print(classify(f.read()))
