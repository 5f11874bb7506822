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

pack_and_stop "$tmp/ds" data.mdb "$tmp/src"
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

pack_and_stop "$tmp/ds2" data.mdb "$tmp/src"
kill -INT $pid
kill -CONT $pid
wait $pid
rc=$?
[ $rc = 130 ] || fail "SIGINT: exit status $rc, expected 130 (killed by SIGINT)"
no_dest "$tmp/ds2"
echo "kill: ok"
