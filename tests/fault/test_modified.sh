#!/bin/bash
# test_modified.sh — a served data.mdb overwritten in place (`cp` onto the
# same inode) while a stream reads it (the stream used to switch
# silently to the new bytes mid-epoch). The stream must end with "dataset
# 'x' was modified in place", a stream on another dataset delivers correct
# batches throughout, and after SIGHUP the new bytes are served as x, every
# sample of an epoch checked against the files on disk.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$here/victim.sh"
make_images x 24 3 3
make_images y 32 4 9
make_images other 24 3 5
start_daemon || fail "$daemon_why"
ino0=$(stat -c %i "$datasets/x/data.mdb")
victim_run "" x 100000 other 1 10 cp "$datasets/y/data.mdb" "$datasets/x/data.mdb"
[ "$(stat -c %i "$datasets/x/data.mdb")" = "$ino0" ] || fail "cp made a new inode"
[ "$result" = error ] || fail "the stream on x did not end: $(cat "$tmp/victim.log")"
# cp truncates first: a worker may meet the lost pages (SIGBUS) before the
# inotify event is handled, and the dataset is then retired as unreadable.
# Either way the stream ends with a clear error and nothing after the write
# is served as x.
[[ $msg == *"dataset 'x' was modified in place"* || $msg == *"dataset 'x' is unreadable"* ]] \
	|| fail "the stream on x ended with: $msg"
grep -q "was modified in place\|is unreadable" "$tmp/feederd.log" || fail "not logged"
# The new bytes are y's: after SIGHUP, x is served with y's 32 samples.
kill -HUP "$daemon_pid"
wait_served x 32
run_client epoch x 4 >"$tmp/new.log" 2>&1 || fail "x after SIGHUP: $(cat "$tmp/new.log")"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "ok: modified in place: $(survive_field "$tmp/victim.log" batches) batches, then: $msg;" \
	"other dataset $(samples_checked "$tmp/other.log") samples checked; after SIGHUP" \
	"$(samples_checked "$tmp/new.log") samples of the new bytes checked"
