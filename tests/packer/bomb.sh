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
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 6 "$T/src" 2 3
made=$($PY "$HERE/make_bombs.py" "$T/src/class_001") || fail "making the bombs"
SCANS=0
grep -qx zscans.jpg <<<"$made" && SCANS=1

expect_rc 0 "$PACKER" pack images "$T/src" "$T/ds"
index_of() { $PY "$HERE/dsread.py" "$T/ds" | $PY -c "import json,sys; print([s['index'] for s in json.load(sys.stdin)['samples'] if s['name'].endswith('$1')][0])"; }
K=$(index_of bomb.jpg)
# Peak memory, where GNU time is there and no sanitizer (ASan's shadow
# memory would dominate it).
timed=()
if [ -x /usr/bin/time ] && ! ldd "$PACKER" | grep -q libasan; then
	timed=(/usr/bin/time -f "%M" -o "$T/maxrss")
fi
"${timed[@]}" "$PACKER" verify --decode "$T/ds" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || { cat "$T/out" "$T/err" >&2; fail "verify --decode exited $rc, expected 1"; }
grep -q "^sample $K: .*30000x30000 image is over the 134217728-pixel limit" "$T/out" ||
	fail "verify does not name sample $K and the limit: $(cat "$T/out")"
if [ $SCANS = 1 ]; then
	S=$(index_of zscans.jpg)
	grep -q "^sample $S: .*progressive JPEG with more than 500 scans" "$T/out" ||
		fail "verify does not refuse the 601-scan JPEG (sample $S): $(cat "$T/out")"
fi
[ "$(grep -c '^sample ' "$T/out")" = $((1 + SCANS)) ] || fail "other samples reported bad: $(cat "$T/out")"
if [ -s "$T/maxrss" ]; then
	kb=$(tail -1 "$T/maxrss")
	[ "$kb" -lt 200000 ] || fail "verify --decode peaked at $kb KB for a 1.5 KB file"
fi

expect_rc 0 "$PACKER" pack images --resize-shorter 32 "$T/src" "$T/ds2"
grep -q "warning: .*class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit, skipped" "$T/err" ||
	fail "--resize-shorter does not skip the bomb by name: $(cat "$T/err")"
if [ $SCANS = 1 ]; then
	grep -q "warning: .*class_001/zscans.jpg: .*more than 500 scans, skipped" "$T/err" ||
		fail "--resize-shorter does not skip the 601-scan JPEG: $(cat "$T/err")"
fi
expect_rc 0 "$PACKER" inspect --json "$T/ds2"
grep -q '"samples":6,' "$T/out" || fail "the bomb was stored: $(cat "$T/out")"
expect_rc 2 "$PACKER" pack images --strict --resize-shorter 32 "$T/src" "$T/ds3"
grep -q "class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit (--strict)" "$T/err" ||
	fail "--strict does not name the bomb: $(cat "$T/err")"
[ -e "$T/ds3" ] && fail "--strict left DEST"
echo "bomb: ok"
