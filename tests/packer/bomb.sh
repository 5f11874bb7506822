#!/bin/bash
# bomb.sh — decompression bombs (issue 13.10): a 1.5 KB JPEG whose header
# claims 30000 x 30000 pixels (9e8, over the 2^27 limit feederd applies).
#   - `verify --decode` reports that sample as bad, by index, naming the
#     pixel limit, and exits 1; its peak memory stays small (it never
#     allocates the claimed 2.7 GB);
#   - `pack --resize-shorter` skips the file with a warning naming it and
#     the limit (and packs the rest), or fails naming it under --strict.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 6 "$T/src" 2 3
$PY - "$T/src/class_001/bomb.jpg" <<'PYEOF' || fail "making the bomb"
import io, sys
from PIL import Image
b = io.BytesIO()
Image.new("RGB", (64, 48), (120, 30, 200)).save(b, "JPEG", quality=90)
data = bytearray(b.getvalue())
at = data.find(b"\xff\xc0")  # SOF0: length(2) precision(1) height(2) width(2)
assert at > 0
data[at + 5:at + 9] = (30000).to_bytes(2, "big") + (30000).to_bytes(2, "big")
assert len(data) < 2000, len(data)
open(sys.argv[1], "wb").write(data)
PYEOF

expect_rc 0 "$PACKER" pack images "$T/src" "$T/ds"
K=$($PY "$HERE/dsread.py" "$T/ds" | $PY -c "import json,sys; print([s['index'] for s in json.load(sys.stdin)['samples'] if s['name'].endswith('bomb.jpg')][0])")
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
[ "$(grep -c '^sample ' "$T/out")" = 1 ] || fail "more than one bad sample: $(cat "$T/out")"
if [ -s "$T/maxrss" ]; then
	kb=$(tail -1 "$T/maxrss")
	[ "$kb" -lt 200000 ] || fail "verify --decode peaked at $kb KB for a 1.5 KB file"
fi

expect_rc 0 "$PACKER" pack images --resize-shorter 32 "$T/src" "$T/ds2"
grep -q "warning: .*class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit, skipped" "$T/err" ||
	fail "--resize-shorter does not skip the bomb by name: $(cat "$T/err")"
expect_rc 0 "$PACKER" inspect --json "$T/ds2"
grep -q '"samples":6,' "$T/out" || fail "the bomb was stored: $(cat "$T/out")"
expect_rc 2 "$PACKER" pack images --strict --resize-shorter 32 "$T/src" "$T/ds3"
grep -q "class_001/bomb.jpg: 30000x30000 image is over the 134217728-pixel limit (--strict)" "$T/err" ||
	fail "--strict does not name the bomb: $(cat "$T/err")"
[ -e "$T/ds3" ] && fail "--strict left DEST"
echo "bomb: ok"
