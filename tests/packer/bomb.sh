#!/bin/bash
# bomb.sh — decompression bombs: a 1.5 KB JPEG whose header
# claims 30000 x 30000 pixels (9e8, over the 2^27 limit feederd applies).
#   - `verify --decode` reports that sample as bad, by index, naming the
#     pixel limit, and exits 1; its peak memory stays small (it never
#     allocates the claimed 2.7 GB);
#   - `pack --resize-shorter` skips the file with a warning naming it and
#     the limit (and packs the rest), or fails naming it under --strict.
# Its CPU sibling, where jpegtran is there to make one: a progressive JPEG
# of 601 scans (a valid full-precision scan repeated; libjpeg re-decodes the
# coefficients for each) is refused by both past 500 scans, as TurboJPEG's
# TJFLAG_LIMITSCANS does. Both made by make_bombs.py; feederd's side is
# tests/e2e/test_bomb.sh.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 6 2 3
made=$("$py" "$here/make_bombs.py" "$tmp/src/class_001") || fail "making the bombs"
SCANS=0
grep -qx zscans.jpg <<<"$made" && SCANS=1

expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds"
index_of() { "$py" "$here/dsread.py" "$tmp/ds" | "$py" -c "import json,sys; print([s['index'] for s in json.load(sys.stdin)['samples'] if s['name'].endswith('$1')][0])"; }
K=$(index_of bomb.jpg)
# Peak memory, where GNU time is there and no sanitizer (ASan's shadow
# memory would dominate it).
timed=()
if [ -x /usr/bin/time ] && ! ldd "$packer" | grep -q libasan; then
	timed=(/usr/bin/time -f "%M" -o "$tmp/maxrss")
fi
"${timed[@]}" "$packer" verify --decode "$tmp/ds" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "verify --decode exited $rc, expected 1"; }
grep -q "^sample $K: .*30000x30000 image is over the 134217728-pixel limit" "$tmp/out" ||
	fail "verify does not name sample $K and the limit: $(cat "$tmp/out")"
if [ $SCANS = 1 ]; then
	S=$(index_of zscans.jpg)
	grep -q "^sample $S: .*progressive JPEG with more than 500 scans" "$tmp/out" ||
		fail "verify does not refuse the 601-scan JPEG (sample $S): $(cat "$tmp/out")"
fi
[ "$(grep -c '^sample ' "$tmp/out")" = $((1 + SCANS)) ] || fail "other samples reported bad: $(cat "$tmp/out")"
if [ -s "$tmp/maxrss" ]; then
	kb=$(tail -1 "$tmp/maxrss")
	[ "$kb" -lt 200000 ] || fail "verify --decode peaked at $kb KB for a 1.5 KB file"
fi

expect_rc 0 "$packer" pack images --resize-shorter 32 "$tmp/src" "$tmp/ds2"
grep -q "warning: .*class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit, skipped" "$tmp/err" ||
	fail "--resize-shorter does not skip the bomb by name: $(cat "$tmp/err")"
if [ $SCANS = 1 ]; then
	grep -q "warning: .*class_001/zscans.jpg: .*more than 500 scans, skipped" "$tmp/err" ||
		fail "--resize-shorter does not skip the 601-scan JPEG: $(cat "$tmp/err")"
fi
expect_rc 0 "$packer" inspect --json "$tmp/ds2"
grep -q '"samples":6,' "$tmp/out" || fail "the bomb was stored: $(cat "$tmp/out")"
expect_rc 2 "$packer" pack images --strict --resize-shorter 32 "$tmp/src" "$tmp/ds3"
grep -q "class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit (--strict)" "$tmp/err" ||
	fail "--strict does not name the bomb: $(cat "$tmp/err")"
[ -e "$tmp/ds3" ] && fail "--strict left DEST"
echo "bomb: ok"
