#!/usr/bin/env python3
"""Robustness of xent-opt pass pipelines over LLVM's own MLIR test corpus.

Takes the mlir/test directory of an LLVM source tree (utils/corpus-check.sh
fetches Debian's llvm-toolchain-19 source package and extracts it), splits
every *.mlir file at ``// -----`` the way ``mlir-opt -split-input-file`` does,
keeps the chunks that the stock ``mlir-opt`` (LLVM 22) parses and verifies,
and runs each given xent-opt pipeline over every kept chunk, in parallel, with
a timeout per chunk.  Each run is classified:

``ok``                the pipeline succeeded (``xent_ops`` counts the ok runs
                      whose output contains xent ops);
``crash``             killed by a signal, exit code >= 128, or "PLEASE submit a
                      bug report" on stderr;
``timeout``           did not finish within --timeout seconds;
``verifier_failure``  the pipeline succeeds with --verify-each=false but its
                      output does not verify (a pass produced invalid IR);
``pass_failure``      a pass reported an error (exit 1, diagnostic);
``rejected_input``    xent-opt cannot even parse the chunk (e.g. an op of the
                      test dialect, which the stock mlir-opt registers and
                      xent-opt does not).

A summary (counts, timings, the chunks of every non-ok class) is printed and
written as JSON.  Exit status: 1 if any run crashed, timed out or left
invalid IR, else 0.

Examples::

    utils/corpus-check.py --corpus build/corpus-cache/mlir-test            # --xent-recognize
    utils/corpus-check.py --corpus DIR --pipeline=--xent-inline-decomposition \\
        --pipeline=--xent-materialize-decomposition --jobs 2 --summary out.json
    utils/corpus-check.py --corpus DIR --sample 500 --seed 1               # a random sample
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CORPUS = os.environ.get("XENT_CORPUS_DIR", os.path.join(ROOT, "build", "corpus-cache", "mlir-test"))
DEFAULT_XENT_OPT = os.environ.get("XENT_OPT", os.path.join(ROOT, "build", "bin", "xent-opt"))
DEFAULT_MLIR_OPT = os.path.join(os.environ.get("XENT_LLVM_BIN", "/usr/lib/llvm-22/bin"), "mlir-opt")

# mlir::splitAndProcessBuffer splits at "// -----" (a longer run of dashes is not a marker).
SPLIT_RE = re.compile(r"// -----(?!-)[^\n]*")
CRASH_MARKER = "PLEASE submit a bug report"
XENT_OP_RE = re.compile(r"(\bxent\.[a-z_]+\b|\"xent\.[a-z_]+\")")


@dataclass
class Chunk:
    file: str        # path relative to the corpus root
    index: int       # 0-based position in the file
    line: int        # 1-based line of the chunk's first character
    text: str

    @property
    def id(self) -> str:
        return f"{self.file}#{self.index}@{self.line}"


@dataclass
class Run:
    rc: Optional[int]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def crashed(self) -> bool:
        return (self.rc is not None and (self.rc < 0 or self.rc >= 128)) or CRASH_MARKER in self.stderr


def run_tool(cmd: Sequence[str], text: str, timeout: float) -> Run:
    """Run ``cmd`` on ``text`` (stdin) in its own process group; kill the group on timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(text.encode(), timeout=timeout)
        return Run(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                   time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return Run(None, out.decode(errors="replace"), err.decode(errors="replace"),
                   time.monotonic() - t0, timed_out=True)


def split_chunks(path: str, rel: str) -> List[Chunk]:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    chunks, start, line = [], 0, 1
    for i, m in enumerate(list(SPLIT_RE.finditer(text)) + [None]):
        end = m.start() if m else len(text)
        body = text[start:end]
        chunks.append(Chunk(rel, i, line, body))
        if m:
            line += text.count("\n", start, m.end())
            start = m.end()
    return [c for c in chunks if c.text.strip()]


def collect(corpus: str) -> Tuple[int, List[Chunk]]:
    files, chunks = 0, []
    for dirpath, dirnames, filenames in os.walk(corpus):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(".mlir"):
                continue
            path = os.path.join(dirpath, name)
            files += 1
            chunks += split_chunks(path, os.path.relpath(path, corpus))
    return files, chunks


def tool_identity(path: str) -> dict:
    """Path, size, mtime and SHA-256 of a tool: a rebuild during the run shows in the summary."""
    import hashlib
    st = os.stat(path)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {"path": os.path.abspath(path), "size": st.st_size, "mtime": int(st.st_mtime), "sha256": digest}


def first_error(stderr: str) -> str:
    for ln in stderr.splitlines():
        if "error" in ln or "LLVM ERROR" in ln or "Assertion" in ln or CRASH_MARKER in ln:
            return ln.strip()[:300]
    return stderr.strip().splitlines()[0][:300] if stderr.strip() else ""


def classify(chunk: Chunk, xent_opt: str, args: List[str], extra: List[str], timeout: float) -> dict:
    """Run one pipeline on one chunk and classify the outcome (see the module docstring)."""
    r = run_tool([xent_opt, *extra, *args, "-"], chunk.text, timeout)
    res = {"chunk": chunk.id, "seconds": round(r.seconds, 3)}
    if r.timed_out:
        return {**res, "class": "timeout"}
    if r.crashed:
        return {**res, "class": "crash", "rc": r.rc, "error": first_error(r.stderr)}
    if r.rc == 0:
        return {**res, "class": "ok", "xent_ops": bool(XENT_OP_RE.search(r.stdout))}
    # A diagnostic and exit 1: does xent-opt accept the input at all?
    p = run_tool([xent_opt, *extra, "-", "-o", os.devnull], chunk.text, timeout)
    if p.timed_out or p.crashed:
        return {**res, "class": "crash" if p.crashed else "timeout", "rc": p.rc,
                "error": "while parsing: " + first_error(p.stderr)}
    if p.rc != 0:
        return {**res, "class": "rejected_input", "error": first_error(p.stderr)}
    # Does the pipeline succeed when intermediate verification is off?  Then invalid IR.
    nv = run_tool([xent_opt, *extra, "--verify-each=false", *args, "-"], chunk.text, timeout)
    if nv.timed_out or nv.crashed:
        return {**res, "class": "crash" if nv.crashed else "timeout", "rc": nv.rc,
                "error": first_error(nv.stderr)}
    if nv.rc == 0:
        v = run_tool([xent_opt, *extra, "-", "-o", os.devnull], nv.stdout, timeout)
        if v.rc != 0 or r.stderr:
            return {**res, "class": "verifier_failure", "error": first_error(r.stderr or v.stderr)}
    return {**res, "class": "pass_failure", "error": first_error(r.stderr)}


def parses(chunk: Chunk, mlir_opt: str, extra: List[str], timeout: float) -> Tuple[bool, Optional[str]]:
    r = run_tool([mlir_opt, *extra, "-", "-o", os.devnull], chunk.text, timeout)
    if r.timed_out:
        return False, "timeout"
    if r.crashed:
        return False, "crash"
    return r.rc == 0, None


CLASSES = ("ok", "crash", "timeout", "verifier_failure", "pass_failure", "rejected_input")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--corpus", default=DEFAULT_CORPUS,
                    help="directory of *.mlir tests, e.g. LLVM's mlir/test (default: %(default)s)")
    ap.add_argument("--xent-opt", default=DEFAULT_XENT_OPT, help="default: %(default)s")
    ap.add_argument("--mlir-opt", default=DEFAULT_MLIR_OPT,
                    help="stock mlir-opt deciding which chunks are valid input (default: %(default)s)")
    ap.add_argument("--pipeline", action="append", default=None, metavar="ARGS",
                    help="xent-opt arguments of one pipeline (shell-split; repeat for several); "
                         "default: --xent-recognize")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="parallel processes (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per run (default: %(default)s)")
    ap.add_argument("--sample", type=int, default=0, help="check a random sample of N chunks (0 = all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of --sample")
    ap.add_argument("--filter", default="", help="only files whose relative path contains this string")
    ap.add_argument("--allow-unregistered-dialect", action="store_true",
                    help="pass --allow-unregistered-dialect to both tools")
    ap.add_argument("--summary", default=None,
                    help="JSON summary path (default: build/corpus-check-summary.json)")
    ap.add_argument("--save-failures", default=None, metavar="DIR",
                    help="write every crashing / timing-out / invalid-IR chunk to DIR")
    ap.add_argument("--quiet", "-q", action="store_true")
    a = ap.parse_args(argv)

    pipelines = a.pipeline or ["--xent-recognize"]
    for tool in (a.xent_opt, a.mlir_opt):
        if not os.access(tool, os.X_OK):
            print(f"corpus-check: tool not found: {tool}", file=sys.stderr)
            return 2
    if not os.path.isdir(a.corpus):
        print(f"corpus-check: corpus directory not found: {a.corpus} (utils/corpus-check.sh fetches it)",
              file=sys.stderr)
        return 2
    extra = ["--allow-unregistered-dialect"] if a.allow_unregistered_dialect else []
    # Fail early (and clearly) if xent-opt does not know a pipeline, instead of 10k pass failures.
    for p in pipelines:
        r = run_tool([a.xent_opt, *extra, *shlex.split(p), "-"], "", 60)
        if r.rc != 0:
            print(f"corpus-check: xent-opt rejects pipeline {p!r}: {first_error(r.stderr)}", file=sys.stderr)
            return 2

    t0 = time.monotonic()
    xent_before = tool_identity(a.xent_opt)
    nfiles, chunks = collect(a.corpus)
    if a.filter:
        chunks = [c for c in chunks if a.filter in c.file]
    total_chunks = len(chunks)
    sampled = bool(a.sample) and a.sample < len(chunks)
    if sampled:
        chunks = random.Random(a.seed).sample(chunks, a.sample)
        chunks.sort(key=lambda c: (c.file, c.index))

    def log(msg):
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    log(f"corpus-check: {nfiles} files, {total_chunks} chunks"
        + (f", sampling {len(chunks)}" if sampled else "") + f"; parsing with {a.mlir_opt} ({a.jobs} jobs)")
    t_parse = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        verdicts = list(ex.map(lambda c: parses(c, a.mlir_opt, extra, a.timeout), chunks))
    kept = [c for c, (ok, _) in zip(chunks, verdicts) if ok]
    stock_trouble = [{"chunk": c.id, "class": why} for c, (ok, why) in zip(chunks, verdicts) if why]
    parse_s = time.monotonic() - t_parse
    log(f"corpus-check: {len(kept)} chunks parse ({parse_s:.0f} s)")

    results: Dict[str, dict] = {}
    failed = False
    for p in pipelines:
        args = shlex.split(p)
        t1 = time.monotonic()
        done = 0
        runs = []
        with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            futs = {ex.submit(classify, c, a.xent_opt, args, extra, a.timeout): c for c in kept}
            for f in cf.as_completed(futs):
                runs.append((futs[f], f.result()))
                done += 1
                if done % 1000 == 0:
                    log(f"corpus-check: {p}: {done}/{len(kept)}")
        runs.sort(key=lambda cr: (cr[0].file, cr[0].index))
        counts = {k: 0 for k in CLASSES}
        lists: Dict[str, list] = {k: [] for k in CLASSES if k != "ok"}
        xent_chunks = []
        for c, r in runs:
            counts[r["class"]] += 1
            if r["class"] != "ok":
                lists[r["class"]].append({k: v for k, v in r.items() if k != "class"})
            elif r.get("xent_ops"):
                xent_chunks.append(c.id)
            if a.save_failures and r["class"] in ("crash", "timeout", "verifier_failure"):
                os.makedirs(a.save_failures, exist_ok=True)
                safe = re.sub(r"[^\w.-]+", "_", c.id)
                with open(os.path.join(a.save_failures, safe + ".mlir"), "w") as fh:
                    fh.write(c.text)
        slowest = sorted(runs, key=lambda cr: -cr[1]["seconds"])[:5]
        results[p] = {
            "counts": counts,
            "crashes": counts["crash"],
            "verifier_failures": counts["verifier_failure"],
            "timeouts": counts["timeout"],
            "xent_ops": len(xent_chunks),
            "seconds": round(time.monotonic() - t1, 1),
            "xent_op_chunks": xent_chunks,
            "slowest": [{"chunk": c.id, "seconds": r["seconds"]} for c, r in slowest],
            **{k: v for k, v in lists.items()},
        }
        failed |= bool(counts["crash"] or counts["timeout"] or counts["verifier_failure"])
        log(f"corpus-check: {p}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            + f", xent ops in {len(xent_chunks)} ({results[p]['seconds']:.0f} s)")

    summary = {
        "corpus": os.path.abspath(a.corpus),
        "xent_opt": xent_before,
        "xent_opt_changed_during_run": tool_identity(a.xent_opt) != xent_before,
        "mlir_opt": a.mlir_opt,
        "jobs": a.jobs,
        "timeout_s": a.timeout,
        "allow_unregistered_dialect": a.allow_unregistered_dialect,
        "files": nfiles,
        "chunks": total_chunks,
        "sampled": len(chunks) if sampled else None,
        "seed": a.seed if sampled else None,
        "parsed": len(kept),
        "stock_mlir_opt_trouble": stock_trouble,
        "parse_seconds": round(parse_s, 1),
        "pipelines": results,
        "seconds": round(time.monotonic() - t0, 1),
    }
    path = a.summary or os.path.join(ROOT, "build", "corpus-check-summary.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")

    print(f"chunks: {total_chunks}" + (f" (sampled {len(chunks)}, seed {a.seed})" if sampled else ""))
    print(f"parsed: {len(kept)}")
    for p, r in results.items():
        c = r["counts"]
        print(f"[{p}] crashes: {c['crash']}, verifier failures: {c['verifier_failure']}, "
              f"timeouts: {c['timeout']}, pass failures: {c['pass_failure']}, "
              f"rejected inputs: {c['rejected_input']}, ok: {c['ok']}, xent ops: {r['xent_ops']}")
        for k in ("crash", "timeout", "verifier_failure"):
            for item in r[k][:10]:
                print(f"  {k}: {item['chunk']}  {item.get('error', '')}")
    if summary["xent_opt_changed_during_run"]:
        print("warning: xent-opt was rebuilt during the run; results mix two binaries")
    print(f"time: {summary['seconds']:.0f} s; summary: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
