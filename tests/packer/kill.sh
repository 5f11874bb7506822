#!/bin/bash
# kill.sh — a pack killed midway leaves no dataset. SIGKILL: DEST does not
# appear; the leftover DEST.tmp-XXXXXX is not a dataset (inspect rejects it)
# and the next pack into the same DEST removes it. SIGINT: neither DEST nor
# the temporary directory remains. "Midway" is made certain by stopping the
# pack (SIGSTOP) once its temporary data file exists, then checking that DEST
# has not appeared, before the real signal is sent.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
"$py" "$here/mkimages.py" 200 "$tmp/src" --classes 3 --min-side 500 --max-side 700 || fail "mkimages"

# Start a slow pack (resize on one thread) and stop it in the middle.
start_and_stop() {
	"$packer" pack images --resize-shorter 300 --threads 1 "$tmp/src" "$1" 2>"$tmp/pack.err" &
	pid=$!
	local t0=$SECONDS
	until compgen -G "$1.tmp-*/data.mdb" >/dev/null; do
		kill -0 $pid 2>/dev/null || fail "pack ended before its data file appeared: $(cat "$tmp/pack.err")"
		((SECONDS - t0 > 20)) && fail "no temporary data file after 20 s"
		sleep 0.01
	done
	kill -STOP $pid
	[ -e "$1" ] && fail "pack finished before it could be stopped"
	return 0
}

start_and_stop "$tmp/ds"
kill -KILL $pid
wait $pid 2>/dev/null
[ -e "$tmp/ds" ] && fail "SIGKILL: DEST exists"
left=$(compgen -G "$tmp/ds.tmp-*") || fail "SIGKILL: expected the temporary directory to remain"
expect_rc 1 "$packer" inspect "$left"
expect_rc 1 "$packer" verify "$left"

# The next pack into the same DEST cleans the leftover and succeeds.
expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds"
has "removed .*ds.tmp-.*interrupted"
compgen -G "$tmp/ds.tmp-*" >/dev/null && fail "leftover temporary directory not removed"
expect_rc 0 "$packer" verify "$tmp/ds"

start_and_stop "$tmp/ds2"
kill -INT $pid
kill -CONT $pid
wait $pid
rc=$?
[ $rc = 130 ] || fail "SIGINT: exit status $rc, expected 130 (killed by SIGINT)"
no_dest "$tmp/ds2"
echo "kill: ok"
