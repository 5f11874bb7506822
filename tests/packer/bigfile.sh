#!/bin/bash
# bigfile.sh — large files that are not images: three sparse
# 60 MB files named .jpg (under the size cap) and a sparse 700 MB one (over
# it) among real JPEGs.
#   - pack images skips each with a warning naming it: "not a JPEG file"
#     (refused from its first bytes) and "larger than the 64 MiB limit
#     (--max-file-size)" (refused from its size), packs the rest, and its
#     peak memory stays far below the files' size: nothing is read whole
#     (where GNU time is there and no sanitizer inflates memory);
#   - with --max-file-size 1G the 700 MB file is refused from its first
#     bytes, again without being read whole;
#   - --max-file-size 1M skips a real 1.5 MB JPEG (fatal under --strict);
#     a malformed size is a usage error.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 6 "$T/src" 2 4
truncate -s 60M "$T/src/class_000/fake1.jpg" "$T/src/class_000/fake2.jpg" "$T/src/class_001/fake3.jpg" ||
	fail truncate
truncate -s 700M "$T/src/class_001/big.jpg" || fail truncate
timed=()
if [ -x /usr/bin/time ] && ! ldd "$PACKER" | grep -q libasan; then
	timed=(/usr/bin/time -f "%M" -o "$T/maxrss")
fi
peak_ok() { # peak RSS under 100 MB, where measured
	[ -s "$T/maxrss" ] || return 0
	local kb
	kb=$(tail -1 "$T/maxrss")
	[ "$kb" -lt 100000 ] || fail "$1: peak memory $kb KB"
}

"${timed[@]}" "$PACKER" pack images "$T/src" "$T/ds" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "pack images"; }
for f in class_000/fake1.jpg class_000/fake2.jpg class_001/fake3.jpg; do
	grep -q "warning: .*$f: not a JPEG file, skipped" "$T/err" || fail "$f: $(cat "$T/err")"
done
grep -q "warning: .*class_001/big.jpg: larger than the 64 MiB limit (--max-file-size), skipped" "$T/err" ||
	fail "big.jpg: $(cat "$T/err")"
peak_ok "pack images"
expect_rc 0 "$PACKER" inspect --json "$T/ds"
grep -q '"samples":6,' "$T/out" || fail "$(cat "$T/out")"

rm -f "$T/maxrss"
"${timed[@]}" "$PACKER" pack images --max-file-size 1G "$T/src" "$T/ds2" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "pack images --max-file-size 1G"; }
grep -q "warning: .*class_001/big.jpg: not a JPEG file, skipped" "$T/err" || fail "1G: $(cat "$T/err")"
peak_ok "pack images --max-file-size 1G"

rm "$T"/src/class_00?/fake?.jpg "$T/src/class_001/big.jpg"
$PY - "$T/src/class_000/large.jpg" <<'PYEOF' || fail "making a large JPEG"
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(5)
Image.fromarray(rng.integers(0, 256, (900, 1000, 3), dtype=np.uint8)).save(sys.argv[1], quality=95)
PYEOF
size=$(stat -c %s "$T/src/class_000/large.jpg")
[ "$size" -gt $((1 << 20)) ] || fail "large.jpg is only $size bytes"
expect_rc 0 "$PACKER" pack images --max-file-size 1M "$T/src" "$T/ds3"
grep -q "warning: .*class_000/large.jpg: larger than the 1 MiB limit (--max-file-size), skipped" "$T/err" ||
	fail "--max-file-size 1M: $(cat "$T/err")"
expect_rc 2 "$PACKER" pack images --strict --max-file-size 1M "$T/src" "$T/ds4"
grep -q "class_000/large.jpg: larger than the 1 MiB limit (--max-file-size) (--strict)" "$T/err" ||
	fail "--strict: $(cat "$T/err")"
expect_rc 0 "$PACKER" pack images --max-file-size 2M "$T/src" "$T/ds5"
expect_rc 0 "$PACKER" inspect --json "$T/ds5"
grep -q '"samples":7,' "$T/out" || fail "--max-file-size 2M: $(cat "$T/out")"
expect_rc 2 "$PACKER" pack images --max-file-size 12X "$T/src" "$T/ds6"
grep -q "max-file-size '12X'" "$T/err" || fail "$(cat "$T/err")"
expect_rc 2 "$PACKER" pack images --max-file-size 2G "$T/src" "$T/ds6"
echo "bigfile: ok"
