#!/usr/bin/env bash
# valgrind_daemon.sh — feederd under valgrind memcheck serves a short stream.
#
# A long-running daemon must not leak per connection, per stream or per
# batch, and must not touch memory it does not own while serving. This test
# packs a tiny dataset, starts the real feederd under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99
# serves two short jpeg streams (feeder-bench, through libfeeder) and one
# STATUS (feederctl), stops the daemon with SIGTERM and fails on any memcheck
# error or definitely lost block (valgrind exits 99). Skips where valgrind is
# missing and in the sanitizer build (ASan's shadow memory and valgrind do not
# mix). Usage (meson): valgrind_daemon.sh [B_SANITIZE].
set -u
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
san=${1:-none}
feederd=$build/daemon/feederd
feederctl=$build/tools/feederctl
packer=$build/packer/packer
genimg=$build/tools/gen/gen-images
bench=$build/tools/feeder-bench

skip() { echo "SKIP: $*"; exit 77; }
[ "$san" = none ] || skip "valgrind does not run sanitizer builds (b_sanitize=$san)"
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed (apt-get install valgrind)"
for exe in "$feederd" "$feederctl" "$packer" "$genimg" "$bench"; do
  [ -x "$exe" ] || skip "$exe is not built"
done

tmp=$(mktemp -d)
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then kill -9 "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  [ -s "$tmp/valgrind.log" ] && { echo "--- valgrind log (last 60 lines) ---"; tail -n 60 "$tmp/valgrind.log"; }
  [ -s "$tmp/feederd.log" ] && { echo "--- feederd log (last 20 lines) ---"; tail -n 20 "$tmp/feederd.log"; }
  exit 1
}

sock=$tmp/feederd.sock
mkdir -p "$tmp/datasets"
"$genimg" 24 "$tmp/src" --classes 3 --seed 7 --threads 1 >/dev/null || fail "gen-images"
"$packer" pack images --resize-shorter 64 --threads 1 "$tmp/src" "$tmp/datasets/tiny" \
  >/dev/null 2>"$tmp/packer.log" || fail "packer: $(cat "$tmp/packer.log")"
cat >"$tmp/feederd.conf" <<CONF
[feederd]
socket = $sock
datasets = $tmp/datasets
workers = 2
log_level = info
CONF

valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
  --log-file="$tmp/valgrind.log" "$feederd" --config "$tmp/feederd.conf" >"$tmp/feederd.log" 2>&1 &
daemon_pid=$!
up=0
for _ in $(seq 300); do # valgrind starts a program in seconds, not milliseconds
  if "$feederctl" --socket "$sock" --timeout 2000 status >/dev/null 2>&1; then up=1; break; fi
  kill -0 "$daemon_pid" 2>/dev/null || fail "feederd exited at start under valgrind"
  sleep 0.1
done
[ $up = 1 ] || fail "feederd did not serve within 30 s under valgrind"

"$bench" --socket "$sock" --datasets "$tmp/datasets" --dataset tiny --batch 4 --size 32 \
  --batches 5 --streams 2 --slots 2 --workers 1 --json >"$tmp/bench.json" 2>"$tmp/bench.err" \
  || fail "feeder-bench against feederd under valgrind: $(tail -3 "$tmp/bench.err")"
images=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["images"])' "$tmp/bench.json" 2>/dev/null)
[ "${images:-0}" -ge 40 ] 2>/dev/null || fail "feeder-bench consumed ${images:-no} images, expected 2 x 5 x 4 = 40 ($(head -c 300 "$tmp/bench.json"))"
"$feederctl" --socket "$sock" --timeout 5000 status >"$tmp/status.txt" 2>&1 || fail "feederctl status"

kill -TERM "$daemon_pid"
for _ in $(seq 300); do
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$daemon_pid" 2>/dev/null && fail "feederd still running 30 s after SIGTERM under valgrind"
wait "$daemon_pid"; rc=$?
daemon_pid=
[ $rc = 99 ] && fail "valgrind found memory errors or definite leaks in feederd"
[ $rc = 0 ] || fail "feederd under valgrind exited $rc after SIGTERM"
summary=$(grep -oE '(in use at exit|definitely lost|ERROR SUMMARY): [^(]*' "$tmp/valgrind.log" | tr -s ' \n' ' ')
echo "feederd under valgrind: served $images images to 2 streams, exited 0; memcheck: $summary"
exit 0
