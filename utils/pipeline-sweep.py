#!/usr/bin/env python3
"""Runs every xent op of the repository's test inputs through the registered
pipelines and fails on a crash: no valid op may crash a registered
pipeline.

Each input of the lit suite (every .mlir under the given directories, split
at `// -----` where its RUN lines split it) that parses and verifies, and is
not a negative test (`expected-error`), is run through `--xent-recognize`;
where that leaves xent ops (written by hand or raised from upstream ops),
the result goes through `--xent-cpu-pipeline` and through
`--xent-gpu-pipeline` (PTX: format=isa, no ptxas needed). A pipeline may
refuse an op with a diagnostic (the GPU pipeline lowers no decomposition);
it may not crash: a signal, or LLVM's crash report, is a failure.

    utils/pipeline-sweep.py --xent-opt build/bin/xent-opt test/

(test/Tools/pipeline-sweep.test runs it in the lit suite.)

Prints one line per crash and a summary; exit status 1 if anything crashed.
"""

import argparse
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

PIPELINES = {
    "cpu": ["--allow-unregistered-dialect", "--xent-cpu-pipeline"],
    "gpu": ["--allow-unregistered-dialect", "--xent-gpu-pipeline=chip=sm_90 format=isa"],
}
# LLVM's crash report, and the sanitizers' reports (the lit suite's
# sanitizer build aborts on them, which is a signal anyway).
CRASH_MARKS = ("PLEASE submit a bug report", "Stack dump:", "ERROR: AddressSanitizer",
               "ERROR: LeakSanitizer", "runtime error:")


def chunks(path):
    """The inputs of one test file: its split parts where it is split."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = text.split("// -----") if "split-input-file" in text else [text]
    for i, part in enumerate(parts):
        if "expected-error" in part:
            continue
        yield f"{path}:{i}", part


def run(opt, args, source, timeout):
    try:
        proc = subprocess.run([opt, *args, "-"], input=source, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    crashed = proc.returncode < 0 or any(m in proc.stderr for m in CRASH_MARKS)
    if crashed:
        return "crash", proc.stderr[-2000:]
    if proc.returncode:
        first = next((line for line in proc.stderr.splitlines() if "error:" in line), "")
        return "diagnosed", first
    return "ok", proc.stdout


def sweep_one(opt, name, source, timeout):
    """{pipeline: verdict} for one input (None when it has no xent op), and
    the crash reports."""
    verdict, raised = run(opt, ["--allow-unregistered-dialect", "--xent-recognize"], source,
                          timeout)
    if verdict == "crash":
        return name, {"recognize": "crash"}, [raised]
    if verdict != "ok" or "xent." not in raised:
        return name, None, []
    results, reports = {}, []
    for key, args in PIPELINES.items():
        v, out = run(opt, args, raised, timeout)
        results[key] = v
        if v in ("crash", "timeout"):
            reports.append(f"{key}: {out}")
        elif v == "diagnosed":
            results[key + " diagnostic"] = out
    return name, results, reports


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--xent-opt", default=os.environ.get("XENT_OPT", "xent-opt"),
                        help="the xent-opt to run (default: $XENT_OPT, else from PATH)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--show-diagnostics", action="store_true",
                        help="print the first error of each input a pipeline refused")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args(argv)
    inputs = []
    for d in args.dirs:
        for path in sorted(glob.glob(os.path.join(d, "**", "*.mlir"), recursive=True)):
            inputs.extend(chunks(path))
    counts = {key: {} for key in PIPELINES}
    crashed = []
    swept = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(sweep_one, args.xent_opt, name, src, args.timeout)
                   for name, src in inputs]
        for future in concurrent.futures.as_completed(futures):
            name, results, reports = future.result()
            if results is None:
                continue
            swept += 1
            for key, verdict in results.items():
                if key.endswith(" diagnostic"):
                    if args.show_diagnostics:
                        print(f"{key[:-11]} diagnosed {name}: {verdict}")
                    continue
                counts.setdefault(key, {})
                counts[key][verdict] = counts[key].get(verdict, 0) + 1
                if verdict in ("crash", "timeout"):
                    crashed.append(f"{verdict}: {key} on {name}")
            for report in reports:
                print(f"--- {name}\n{report}", file=sys.stderr)
    for line in sorted(crashed):
        print(line)
    summary = "; ".join(f"{key}: " + ", ".join(f"{n} {v}" for v, n in sorted(c.items()))
                        for key, c in counts.items())
    print(f"pipeline-sweep: {swept} inputs with xent ops of {len(inputs)}; {summary}; "
          f"{len(crashed)} crashed")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
