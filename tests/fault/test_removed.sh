#!/bin/bash
# test_removed.sh — a dataset directory removed (rm -rf) while a stream reads
# it. The open file would keep the data readable forever; feederd notices
# within about a second (its periodic check of data.mdb) and ends the
# stream with "dataset 'gone' was removed from DIR"; new streams are refused
# with the same sentence; a stream on another dataset keeps delivering
# correct batches (labels and pixels checked) throughout.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$here/victim.sh"
make_images gone 32 4 3
make_images stays 24 3 5
start_daemon || fail "$daemon_why"
victim_run "" gone 100000 stays 1 10 rm -rf "$datasets/gone"
[ "$result" = error ] || fail "the stream did not end: $(cat "$tmp/victim.log")"
[[ $msg == *"dataset 'gone' was removed from $datasets"* ]] || fail "the stream ended with: $msg"
[ "$victim_ms" -lt 5000 ] || fail "the removal took $victim_ms ms to end the stream"
run_client survive gone 10 >"$tmp/refused.log" 2>&1 || fail "client: $(cat "$tmp/refused.log")"
[ "$(survive_field "$tmp/refused.log" result)" = refused ] || fail "a stream opened on the removed dataset"
[[ $(survive_field "$tmp/refused.log" message) == *"was removed"* ]] \
	|| fail "refusal does not say why: $(cat "$tmp/refused.log")"
run_client epoch stays 2 >"$tmp/stays2.log" 2>&1 || fail "other dataset: $(cat "$tmp/stays2.log")"
daemon_alive
n=$(json_get "$tmp/status.json" datasets)
[ "$n" -eq 1 ] || fail "feederd lists $n datasets after the removal, expected 1"
checked=$(samples_checked "$tmp/other.log" "$tmp/stays2.log")
stop_daemon || fail "$daemon_why"
echo "ok: removed: 1 dataset removed while streamed, survived; its stream ended after" \
	"$(survive_field "$tmp/victim.log" batches) batches, $victim_ms ms after rm -rf: $msg;" \
	"other dataset: $checked samples checked, all correct; feederd exited 0"
