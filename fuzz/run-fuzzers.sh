#!/usr/bin/env bash
# Runs the three libFuzzer harnesses side by side for a time or a number of
# executions, then sorts what they found (docs/reliability.md):
#
#   fuzz/run-fuzzers.sh BUILD_DIR SECONDS [RUNS] [WORK_DIR]
#
# BUILD_DIR holds bin/xent-fuzz-passes, bin/xent-fuzz-op and
# bin/xent-fuzz-recognize (a build with
# XENT_ENABLE_FUZZERS=ON, such as build-san/). Each fuzzer runs in libFuzzer's
# fork mode with crashes ignored, so that one finding does not end the run;
# every crash input is then replayed and classified:
#
#   xent      the report names xent code (a harness check, xent's libraries,
#             a sanitizer report in an instrumented frame): a failure;
#   upstream  a crash inside uninstrumented LLVM/MLIR with no xent frame (the
#             upstream parser on mutated text, say): recorded, not a failure.
#
# Prints one line per fuzzer and "fuzz: N passed, N failed" (a fuzzer passes
# when it found no xent crash); exits non-zero on any xent crash.
# Corpora persist in WORK_DIR (default BUILD_DIR/fuzz) between runs.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:?usage: run-fuzzers.sh BUILD_DIR SECONDS [RUNS] [WORK_DIR]}" && pwd)"
SECONDS_EACH="${2:?seconds}"
RUNS="${3:-0}"
WORK="${4:-$BUILD/fuzz}"

export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
mkdir -p "$WORK/seeds/passes" "$WORK/seeds/op" "$WORK/seeds/recognize" \
  "$WORK/corpus/passes" "$WORK/corpus/op" "$WORK/corpus/recognize"
/usr/bin/python3 "$ROOT/fuzz/make-seeds.py" "$WORK/seeds/passes" >/dev/null
cp "$ROOT"/fuzz/regressions/passes/* "$WORK/seeds/passes/" 2>/dev/null || true
cp "$ROOT"/fuzz/regressions/op/* "$WORK/seeds/op/" 2>/dev/null || true
cp "$ROOT"/fuzz/regressions/recognize/* "$WORK/seeds/recognize/" 2>/dev/null || true

run_one() { # name max_len extra-args...
  local name=$1 max_len=$2; shift 2
  local art="$WORK/artifacts/$name"
  rm -rf "$art"; mkdir -p "$art"
  local runs=()
  [[ "$RUNS" != 0 ]] && runs=(-runs="$RUNS")
  XENT_FUZZ_STATS=1 "$BUILD/bin/xent-fuzz-$name" -fork=1 -ignore_crashes=1 \
    -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$SECONDS_EACH" "${runs[@]}" \
    -timeout=60 -rss_limit_mb=4096 -max_len="$max_len" -artifact_prefix="$art/" \
    "$@" "$WORK/corpus/$name" "$WORK/seeds/$name" > "$WORK/$name.log" 2>&1
}

start=$(date +%s)
run_one passes 4096 -dict="$ROOT/fuzz/mlir.dict" &
pid_passes=$!
run_one op 512 &
pid_op=$!
# xent-fuzz-recognize (the chain generator) runs where the build has it.
names=(passes op)
pids=($pid_passes $pid_op)
if [[ -x "$BUILD/bin/xent-fuzz-recognize" ]]; then
  run_one recognize 128 &
  names+=(recognize)
  pids+=($!)
else
  echo "xent-fuzz-recognize: not built in $BUILD, skipped"
fi
wait "${pids[@]}"
elapsed=$(( $(date +%s) - start ))

passed=0; failed=0
for name in "${names[@]}"; do
  log="$WORK/$name.log"
  # Fork mode reports "#<executions>: cov: ..." lines; the last one counts.
  execs=$(grep -oP '^#\K[0-9]+(?=: cov:)' "$log" | tail -1)
  xent_crashes=0; upstream_crashes=0
  for crash in "$WORK/artifacts/$name"/crash-* "$WORK/artifacts/$name"/leak-* \
               "$WORK/artifacts/$name"/timeout-* "$WORK/artifacts/$name"/oom-*; do
    [[ -e "$crash" ]] || continue
    replay="$crash.replay.txt"
    "$BUILD/bin/xent-fuzz-$name" -runs=1 "$crash" > "$replay" 2>&1
    if [[ $(/usr/bin/python3 "$ROOT/fuzz/classify-crash.py" "$replay") == xent ]]; then
      xent_crashes=$((xent_crashes + 1))
      echo "xent-fuzz-$name: xent crash $crash (replay: $replay)"
    else
      upstream_crashes=$((upstream_crashes + 1))
      echo "xent-fuzz-$name: upstream crash $crash (replay: $replay)"
    fi
  done
  echo "xent-fuzz-$name: ${execs:-0} executions in ${elapsed} s, $xent_crashes xent crashes, $upstream_crashes upstream crashes"
  if [[ $xent_crashes -eq 0 && -n "${execs:-}" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
