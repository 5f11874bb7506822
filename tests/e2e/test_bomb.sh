#!/bin/bash
# test_bomb.sh — feederd applies the decoding rules packer applies
# (media/jpeg_rules.h): a dataset stored without decoding (pack images, no
# --resize-shorter) that holds a JPEG claiming 30000 x 30000 pixels and,
# where jpegtran can make one, a progressive JPEG of 601 scans. Streaming
# it, each is replaced (exactly one replacement per bomb per epoch) and
# logged with the rule it broke; nothing is allocated for the claimed
# pixels (the daemon's RssAnon stays small) and the 601 scans are stopped
# at 500 rather than decoded.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_python PIL
gen_images "$tmp/src" 10 2 3
made=$("$py" "$src/tests/packer/make_bombs.py" "$tmp/src/class_001") || fail "make_bombs.py"
nbombs=$(wc -l <<<"$made")
pack_images bombs "$tmp/src"
start_daemon || fail "$daemon_why"
run_client corrupt bombs "$nbombs" || fail "e2e_client corrupt bombs $nbombs"
grep -q "30000x30000 image is over the 134217728-pixel limit" "$tmp/feederd.log" \
	|| fail "the 30000x30000 claim is not logged: $(tail -20 "$tmp/feederd.log")"
if grep -qx zscans.jpg <<<"$made"; then
	grep -q "progressive JPEG with more than 500 scans" "$tmp/feederd.log" \
		|| fail "the 601-scan JPEG is not refused: $(tail -20 "$tmp/feederd.log")"
else
	echo "note: no jpegtran here, the many-scan case is not made"
fi
rss=$(awk '/^RssAnon:/ { print $2 }' "/proc/$daemon_pid/status")
sanitized || [ "$rss" -lt 65536 ] \
	|| fail "feederd's RssAnon is $rss KiB after the bombs"
stop_daemon || fail "$daemon_why"
echo "ok: $nbombs bombs replaced and logged by rule; feederd RssAnon $rss KiB"
