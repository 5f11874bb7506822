#!/bin/bash
# test_eio_midstream.sh — the disk under a dataset fails while a stream reads
# it. Datasets are read through LMDB's mmap, so lost pages arrive as SIGBUS,
# not EIO; truncating data.mdb under the running daemon is exactly that (the
# kernel unmaps the lost pages). feederd must not crash: the stream either
# goes on with the unreadable samples replaced and counted, or ends with a
# clear ERROR; a stream on another dataset delivers correct batches
# (labels and pixels checked) before, during and after; status answers.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$here/victim.sh"
make_images victim 48 4 3
make_images good 24 3 5
# A failing disk loses pages without changing the file's metadata; the
# truncation that stands for it here would otherwise be seen as a write in
# place (and the dataset retired for that, not read into SIGBUS).
FEEDERD_DISK_FAULT_TEST=1 start_daemon || fail "$daemon_why"
size=$(stat -c %s "$datasets/victim/data.mdb")
victim_run "" victim 1500 good 1 20 truncate -s $((size * 4 / 10)) "$datasets/victim/data.mdb"
daemon_alive
batches=$(survive_field "$tmp/victim.log" batches)
repl=$(survive_field "$tmp/victim.log" replacements)
if [ "$result" = ok ]; then
	[ "$repl" -gt 0 ] || fail "the victim stream saw no replacement after the truncation"
elif [[ $msg != *"I/O error (SIGBUS)"* && $msg != *unreadable* ]]; then
	fail "the victim stream ended with an unclear error: $result: $msg"
fi
errors=$(json_get "$tmp/status.json" decode_errors)
[ "$errors" -ge 1 ] || fail "feederd counted no unreadable sample"
logged=$(grep -c "^<3>I/O error (SIGBUS) reading dataset 'victim' (at byte" "$tmp/feederd.log")
[ "$logged" -eq 1 ] || fail "the I/O error was logged $logged times, expected once"
run_client epoch good 2 >"$tmp/good2.log" 2>&1 || fail "good after the fault: $(cat "$tmp/good2.log")"
checked=$(samples_checked "$tmp/other.log" "$tmp/good2.log")
stop_daemon || fail "$daemon_why"
echo "ok: eio mid-stream: 1 truncation (60% of data.mdb lost) injected and survived; $errors reads" \
	"failed with SIGBUS and were counted; victim stream: $batches batches, $repl replacements," \
	"end: ${result} ${msg:+($msg)}; other dataset: $checked samples checked, all correct; feederd exited 0"
