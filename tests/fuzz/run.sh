#!/usr/bin/env bash
# tests/fuzz/run.sh — fuzz every harness (or the ones named) for longer than
# the test suite does, one after the other, and print one line each.
#
# Usage: tests/fuzz/run.sh [SECONDS] [HARNESS...]   (default 300 s each)
# Uses $FEEDER_BUILD (default: build) for binaries, the growing corpus and
# crash artifacts (see fuzz_test.sh). Exit 0 when no harness crashed.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
export FEEDER_SOURCE=${FEEDER_SOURCE:-$src}
export FEEDER_BUILD=${FEEDER_BUILD:-$src/build}
secs=${1:-300}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- protocol dsformat config jpeg features audio manifest
failed=0
for h in "$@"; do
  "$src/tests/fuzz/fuzz_test.sh" "$h" "$secs" | tail -3
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 77 ]; then
    echo "fuzz_$h: skipped (no clang with libFuzzer)"
  elif [ "$rc" != 0 ]; then
    failed=$((failed + 1))
  fi
done
echo "fuzz: $# harnesses, $failed crashed"
[ $failed = 0 ]
