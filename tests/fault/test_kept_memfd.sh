#!/bin/bash
# test_kept_memfd.sh — a client that hangs up while it holds batches (and
# keeps the ring's memfd, as a trainer that lost its connection does) keeps
# those batches intact, and they stay charged to memory_limit until its
# process exits, so that kept memfds cannot escape the limit; a stream
# closed with CLOSE_STREAM gives every page back at once (hostile_client
# keepheld and keepfd).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
hostile=$build/tests/soak/hostile_client
need_exe "$hostile"
make_images imgs 24 3 4
start_daemon --memory-limit 8M || fail "$daemon_why"
spawn "$tmp/held.out" "$hostile" "$sock" imgs keepheld 3
h=$spawned
wait_for "$tmp/held.out" slot_size "$h"
line=$(grep "slot_size" "$tmp/held.out")
slot=$(echo "$line" | awk '{ print $3 }' | tr -d ,)
pages=$(echo "$line" | awk '{ print $5 }')
[ "$pages" -ge $((2 * slot)) ] || fail "the held slots' pages went with the connection: $line"
"$feederctl" --socket "$sock" status --json >"$tmp/st.json" || fail "feederctl status"
[ "$(json_get "$tmp/st.json" streams)" = 0 ] || fail "the stream outlived its connection"
used=$(json_get "$tmp/st.json" memory_used)
[ "$used" = $((2 * slot)) ] ||
	fail "memory_used is $used with 2 held slots of $slot bytes kept by a live process"
wait "$h" || fail "keepheld: $(cat "$tmp/held.out")"
bg_pids=()
uncharged() {
	"$feederctl" --socket "$sock" status --json >"$tmp/st.json" || fail "feederctl status"
	[ "$(json_get "$tmp/st.json" memory_used)" = 0 ]
}
wait_until 5 uncharged || fail "the held slots stayed charged after their process exited"
"$hostile" "$sock" imgs keepfd 2 >"$tmp/keepfd.out" 2>&1 || fail "$(cat "$tmp/keepfd.out")"
cat "$tmp/held.out" "$tmp/keepfd.out"
stop_daemon || fail "$daemon_why"
echo "ok: 2 held slots ($slot bytes each) outlived their connection intact, charged until" \
	"their process exited; closed streams' kept memfds hold nothing"
