#!/usr/bin/env bash
# valgrind_daemon.sh — feederd under valgrind memcheck serves a short stream.
#
# A long-running daemon must not leak per connection, per stream or per
# batch, and must not touch memory it does not own while serving. This test
# packs a tiny dataset, starts the real feederd under valgrind, serves two
# short jpeg streams (feeder-bench, through libfeeder) and one STATUS
# (feederctl), stops the daemon with SIGTERM and fails on any memcheck error
# or definitely lost block (valgrind exits 99). Skips where valgrind is
# missing and in the sanitizer build (ASan's shadow memory and valgrind do not
# mix). Usage (meson): valgrind_daemon.sh [B_SANITIZE].
. "$FEEDER_SOURCE/tests/lib/lib.sh"
san=${1:-none}
bench=$build/tools/feeder-bench
[ "$san" = none ] || skip "valgrind does not run sanitizer builds (b_sanitize=$san)"
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed (apt-get install valgrind)"
need_exe "$feederctl" "$bench"

make_images tiny 24 3 7
# memcheck's report goes into feederd's log (fd 2); valgrind starts a
# program in seconds, not milliseconds.
daemon_wrap=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 --log-fd=2)
daemon_wait=30
start_daemon --log-level info || fail "under valgrind: $daemon_why"

"$bench" --socket "$sock" --datasets "$datasets" --dataset tiny --batch 4 --size 32 \
  --batches 5 --streams 2 --slots 2 --workers 1 --json >"$tmp/bench.json" 2>"$tmp/bench.err" \
  || fail "feeder-bench against feederd under valgrind: $(tail -3 "$tmp/bench.err")"
images=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["images"])' "$tmp/bench.json" 2>/dev/null)
[ "${images:-0}" -ge 40 ] 2>/dev/null || fail "feeder-bench consumed ${images:-no} images, expected 2 x 5 x 4 = 40 ($(head -c 300 "$tmp/bench.json"))"
"$feederctl" --socket "$sock" --timeout 5000 status >"$tmp/status.txt" 2>&1 || fail "feederctl status"

stop_daemon 30
rc=$?
[ $rc = 99 ] && fail "valgrind found memory errors or definite leaks in feederd"
[ $rc = 0 ] || fail "under valgrind: $daemon_why"
summary=$(grep -oE '(in use at exit|definitely lost|ERROR SUMMARY): [^(]*' "$daemon_log" | tr -s ' \n' ' ')
echo "feederd under valgrind: served $images images to 2 streams, exited 0; memcheck: $summary"
