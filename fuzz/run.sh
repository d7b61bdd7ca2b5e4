#!/usr/bin/env bash
# Runs fuzz targets one after the other (one process: the machine is shared).
#   fuzz/run.sh RUNS target...     e.g. fuzz/run.sh 20000 validate_payload
# Logs to fuzz/logs/<target>.log; the final stats (executions, coverage)
# are the last lines of each log.
set -euo pipefail
cd "$(dirname "$0")"
runs=$1; shift
mkdir -p logs
for target in "$@"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  echo "== $target: $runs runs"
  cargo "+${FUZZ_TOOLCHAIN:-nightly}" fuzz run -s none "$target" "corpus/$target" -- \
    -runs="$runs" -print_final_stats=1 -artifact_prefix="artifacts/$target/" \
    ${FUZZ_ARGS:-} 2>&1 | tee "logs/$target.log" | grep -E '^(#[0-9]+ +DONE|stat::|==|SUMMARY|thread)' || true
  if grep -qE 'panicked|SUMMARY|deadly signal' "logs/$target.log"; then
    echo "$target: crash, see fuzz/logs/$target.log and fuzz/artifacts/$target" >&2
    exit 1
  fi
  # A target that did not build or start never prints libFuzzer's closing line.
  if ! grep -qE '^Done [0-9]+ runs' "logs/$target.log"; then
    echo "$target: the fuzzer did not run to the end, see fuzz/logs/$target.log" >&2
    exit 1
  fi
done
