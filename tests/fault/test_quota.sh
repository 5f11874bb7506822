#!/bin/bash
# test_quota.sh — one client takes all the memory it may: it opens streams
# until its --client-quota refuses one, and a second greedy client opens
# streams until the daemon's --memory-limit refuses one. Each refusal is
# FEEDER_EQUOTA with a sentence saying which limit, and leaves nothing
# behind; a third client's stream delivers correct batches (labels and
# pixels checked) all along, may open another stream within its own quota
# while only the first client is at its quota, and gets the memory back when
# the greedy clients leave (e2e_client quota; the single over-quota request
# is tests/e2e refusals).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images q 24 3 4
quota=$((1024 * 1024))
limit=$((2 * 1024 * 1024))
start_daemon --client-quota "$quota" --memory-limit "$limit" || fail "$daemon_why"
run_client quota q "$quota" "$limit" >"$tmp/quota.log" 2>&1 || fail "quota: $(cat "$tmp/quota.log")"
cat "$tmp/quota.log"
daemon_alive
refused=$(grep -c "^<6>client .*: OPEN_STREAM of 'q' refused: .*\(quota\|in use\)" "$tmp/feederd.log")
[ "$refused" -ge 3 ] || fail "feederd logged $refused quota refusals, expected 3"
stop_daemon || fail "$daemon_why"
echo "ok: quota: $refused open requests over the client quota / memory limit refused with" \
	"FEEDER_EQUOTA; the well-behaved client's batches all correct; feederd exited 0"
