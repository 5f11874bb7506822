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
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 6 2 3
made=$("$py" "$here/make_bombs.py" "$tmp/src/class_001") || fail "making the bombs"
SCANS=0
grep -qx zscans.jpg <<<"$made" && SCANS=1

expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds"
"$py" "$here/dsread.py" "$tmp/ds" >"$tmp/ds.json" || fail dsread
K=$(index_of "$tmp/ds.json" bomb.jpg)
expect_rc 1 "${timed[@]}" "$packer" verify --decode "$tmp/ds"
out_has "^sample $K: .*30000x30000 image is over the 134217728-pixel limit"
if [ $SCANS = 1 ]; then
	out_has "^sample $(index_of "$tmp/ds.json" zscans.jpg): .*progressive JPEG with more than 500 scans"
fi
bad_samples $((1 + SCANS))
peak_below 200000 "verify --decode of a 1.5 KB file"

expect_rc 0 "$packer" pack images --resize-shorter 32 "$tmp/src" "$tmp/ds2"
has "warning: .*class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit, skipped"
[ $SCANS = 0 ] || has "warning: .*class_001/zscans.jpg: .*more than 500 scans, skipped"
inspect_has "$tmp/ds2" '"samples":6,'
expect_rc 2 "$packer" pack images --strict --resize-shorter 32 "$tmp/src" "$tmp/ds3"
has "class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit (--strict)"
no_dest "$tmp/ds3"
echo "bomb: ok"
