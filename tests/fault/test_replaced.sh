#!/bin/bash
# test_replaced.sh — a dataset replaced while streams read it, twice: by
# `rm -rf x && mv new x` and by `packer --force` (an atomic exchange). A
# stream never mixes two versions: the stream on the old version ends with
# "dataset 'x' was replaced in DIR"; the new version is served after SIGHUP,
# and a new stream's every sample (labels and pixels) matches the new files
# on disk. A stream on another dataset delivers correct batches throughout.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$here/victim.sh"
make_images x 24 3 3
make_images x2 32 4 9
mv "$datasets/x2" "$tmp/x2"
make_images other 24 3 5
start_daemon || fail "$daemon_why"

# replace_during_stream ROUND COMMAND...: a stream on x runs while COMMAND
# replaces x; it must end with the "replaced" sentence.
replace_during_stream() {
	local round=$1; shift
	victim_run "$round" x 100000 other "$round" 10 "$@"
	[ "$result" = error ] \
		|| fail "round $round: the old stream did not end: $(cat "$tmp/victim$round.log")"
	# rm -rf and mv leave x missing for a moment: a check that falls
	# there rightly says "removed".
	[[ $msg == *"dataset 'x' was replaced in $datasets"* ]] ||
		[[ $round = 1 && $msg == *"dataset 'x' was removed from $datasets"* ]] ||
		fail "round $round: the old stream ended with: $msg"
	echo "round $round: $(survive_field "$tmp/victim$round.log" batches) batches, then: $msg"
}

swap() { rm -rf "$datasets/x" && mv "$tmp/x2" "$datasets/x"; }
replace_during_stream 1 swap
kill -HUP "$daemon_pid"
wait_served x 32
run_client epoch x 4 >"$tmp/new1.log" 2>&1 || fail "the new version: $(cat "$tmp/new1.log")"

# packer --force swaps the directories atomically; reload at once.
repack() {
	"$packer" pack images --force --resize-shorter 64 --threads 1 "$tmp/src-x" "$datasets/x" \
		>/dev/null 2>"$tmp/repack.log" || fail "packer --force: $(cat "$tmp/repack.log")"
	kill -HUP "$daemon_pid"
}
replace_during_stream 2 repack
wait_served x 24
run_client epoch x 5 >"$tmp/new2.log" 2>&1 || fail "the repacked version: $(cat "$tmp/new2.log")"
run_client epoch other 6 >"$tmp/other3.log" 2>&1 || fail "other dataset: $(cat "$tmp/other3.log")"
daemon_alive
checked=$(samples_checked "$tmp"/other*.log)
newchecked=$(samples_checked "$tmp"/new*.log)
stop_daemon || fail "$daemon_why"
echo "ok: replaced: 2 replacements (mv, packer --force) while streamed, survived; old streams" \
	"ended with 'was replaced'; after SIGHUP $newchecked samples of the new versions checked;" \
	"other dataset: $checked samples checked, all correct; feederd exited 0"
