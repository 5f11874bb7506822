#!/bin/bash
# test_eio_before.sh — a dataset whose disk failed before the stream opens
# (data.mdb truncated under the running daemon: SIGBUS on every lost page).
# With on_error=fail the first unreadable sample ends the stream with
# "I/O error (SIGBUS) reading dataset 'victim'"; a replacing stream delivers
# with replacements counted or, once REGISTRY_IO_FAIL_RUN reads in a row
# failed, ends with "dataset 'victim' is unreadable" (quickly, not after
# thousands of tries per sample), after which new streams are refused with
# that sentence. Meanwhile another dataset streams correct batches. When the
# data is back (a good copy put in place) a SIGHUP serves it again.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images victim 48 4 3
make_images good 24 3 5
cp -a "$datasets/victim" "$tmp/victim-copy"
# A failing disk loses pages without changing the file's metadata; the
# truncation that stands for it here would otherwise be seen as a write in
# place (and the dataset retired for that, not read into SIGBUS).
FEEDERD_DISK_FAULT_TEST=1 start_daemon || fail "$daemon_why"
size=$(stat -c %s "$datasets/victim/data.mdb")
# Keep little more than LMDB's meta pages: nearly every read faults.
truncate -s 12288 "$datasets/victim/data.mdb"

run_client survive victim 100 fail >"$tmp/fail.log" 2>&1 || fail "on_error=fail client: $(cat "$tmp/fail.log")"
[ "$(survive_field "$tmp/fail.log" opened)" = 1 ] || fail "on_error=fail stream not opened: $(cat "$tmp/fail.log")"
msg=$(survive_field "$tmp/fail.log" message)
[[ $msg == *"I/O error (SIGBUS) reading dataset 'victim'"* ]] \
	|| fail "on_error=fail ended with: $(survive_field "$tmp/fail.log" result): $msg"

start=$(date +%s%N)
run_client survive victim 2000 >"$tmp/replace.log" 2>&1 || fail "replacing client: $(cat "$tmp/replace.log")"
took_ms=$((($(date +%s%N) - start) / 1000000))
result=$(survive_field "$tmp/replace.log" result)
rmsg=$(survive_field "$tmp/replace.log" message)
if [ "$result" != ok ]; then
	[[ $rmsg == *"dataset 'victim' is unreadable"* ]] \
		|| fail "the replacing stream ended with an unclear error: $result: $rmsg"
	[ "$took_ms" -lt 10000 ] || fail "the unreadable dataset took $took_ms ms to end the stream"
	run_client survive victim 10 >"$tmp/refused.log" 2>&1 || fail "refused client: $(cat "$tmp/refused.log")"
	[ "$(survive_field "$tmp/refused.log" opened)" = 0 ] || fail "a stream opened on the unreadable dataset"
	[[ $(survive_field "$tmp/refused.log" message) == *unreadable* ]] \
		|| fail "refusal does not say why: $(cat "$tmp/refused.log")"
else
	[ "$(survive_field "$tmp/replace.log" replacements)" -gt 0 ] || fail "no replacement counted"
fi
run_client epoch good 1 >"$tmp/good1.log" 2>&1 || fail "good dataset: $(cat "$tmp/good1.log")"
daemon_alive
errors=$(json_get "$tmp/status.json" decode_errors)
[ "$errors" -ge 2 ] || fail "feederd counted $errors unreadable samples"
logged=$(grep -c "^<3>I/O error (SIGBUS) reading dataset 'victim' (at byte" "$tmp/feederd.log")
[ "$logged" -eq 1 ] || fail "the I/O error was logged $logged times, expected once"

# A reload while the file is still cut short: refused at open, not mapped.
kill -HUP "$daemon_pid"
wait_until 5 grep -q "SIGHUP: " "$tmp/feederd.log"
grep -q "dataset 'victim' skipped: .*data.mdb is truncated" "$tmp/feederd.log" \
	|| fail "SIGHUP did not refuse the truncated data.mdb"
run_client survive victim 10 >"$tmp/refused2.log" 2>&1 || fail "client: $(cat "$tmp/refused2.log")"
[ "$(survive_field "$tmp/refused2.log" result)" = refused ] || fail "a stream opened on the truncated dataset"
daemon_alive

# The operator puts the data back and reloads: served again, every sample right.
rm -rf "$datasets/victim"
cp -a "$tmp/victim-copy" "$datasets/victim"
kill -HUP "$daemon_pid"
served_again() { run_client survive victim 4 >"$tmp/back.log" 2>&1 && [ "$(survive_field "$tmp/back.log" result)" = ok ]; }
wait_until 10 served_again || fail "victim not served again after SIGHUP: $(cat "$tmp/back.log")"
run_client epoch victim 2 >"$tmp/good2.log" 2>&1 || fail "restored victim: $(cat "$tmp/good2.log")"
run_client epoch good 3 >"$tmp/good3.log" 2>&1 || fail "good dataset: $(cat "$tmp/good3.log")"
checked=$(samples_checked "$tmp"/good*.log)
stop_daemon || fail "$daemon_why"
echo "ok: eio before open: 1 truncation ($size -> 12288 bytes) injected and survived;" \
	"$errors reads failed with SIGBUS and were counted; on_error=fail: clear error;" \
	"replace: ${result} after ${took_ms} ms${rmsg:+ ($rmsg)}; restored by SIGHUP;" \
	"$checked samples checked on good datasets, all correct; feederd exited 0"
