#!/usr/bin/env bash
# tests/fuzz/fuzz_test.sh — fuzz one harness for a bounded time (a meson test).
#
# Usage: tests/fuzz/fuzz_test.sh HARNESS SECONDS
# Builds the harness if needed (build.sh), then runs libFuzzer on a corpus
# kept in $FEEDER_BUILD/fuzz/corpus/HARNESS (it grows from run to run), with
# the committed seeds and saved regressions as extra input. Fails on any crash,
# leak, UB report, timeout (10 s per input) or memory blow-up (2 GiB), and
# prints libFuzzer's executions count. meson registers it in the sanitizer
# build only (tests/fuzz/meson.build).
# Exit: 0 no crash, 1 crash (the input is kept under $FEEDER_BUILD/fuzz/
# artifacts/HARNESS/), 77 no clang with libFuzzer here.
set -u
h=${1:?usage: fuzz_test.sh HARNESS SECONDS}
secs=${2:?usage: fuzz_test.sh HARNESS SECONDS}
src=${FEEDER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bld=${FEEDER_BUILD:-$src/build}
"$src/tests/fuzz/build.sh" "$h" || exit

corpus=$bld/fuzz/corpus/$h
art=$bld/fuzz/artifacts/$h
mkdir -p "$corpus" "$art"
seeds=("$src/tests/fuzz/corpus/$h")
[ -d "$src/tests/fuzz/regressions/$h" ] && seeds+=("$src/tests/fuzz/regressions/$h")
log=$bld/fuzz/fuzz_$h.log

# The meson environment asks ASan for leak checks; libFuzzer does its own
# (-detect_leaks), and UBSan reports are already fatal in the binary.
# libFuzzer's own exit status for a crash is 77, which meson reads as "skip":
# -error_exitcode/-timeout_exitcode make every finding a failure. Leaks
# inside third-party decoders are suppressed by name (lsan.supp says which
# and why); ours are not.
export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
"$bld/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$art/" "$corpus/" "${seeds[@]}" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ninputs=$(ls "$corpus" | wc -l)
if [ $rc != 0 ]; then
  tail -60 "$log"
  echo "fuzz_$h: CRASH after ${execs:-?} executions (exit $rc); input(s): $(ls "$art" | tr '\n' ' ')"
  echo "fuzz_$h: save it under tests/fuzz/regressions/$h/ and fix the decoder (full log: $log)"
  exit 1
fi
echo "fuzz_$h: ${execs:-?} executions in $secs s, coverage ${cov:-?} edges, corpus $ninputs inputs, no crash"
exit 0
