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
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 6 2 4
truncate -s 60M "$tmp/src/class_000/fake1.jpg" "$tmp/src/class_000/fake2.jpg" "$tmp/src/class_001/fake3.jpg" ||
	fail truncate
truncate -s 700M "$tmp/src/class_001/big.jpg" || fail truncate
timed=()
if [ -x /usr/bin/time ] && ! ldd "$packer" | grep -q libasan; then
	timed=(/usr/bin/time -f "%M" -o "$tmp/maxrss")
fi
peak_ok() { # peak RSS under 100 MB, where measured
	[ -s "$tmp/maxrss" ] || return 0
	local kb
	kb=$(tail -1 "$tmp/maxrss")
	[ "$kb" -lt 100000 ] || fail "$1: peak memory $kb KB"
}

"${timed[@]}" "$packer" pack images "$tmp/src" "$tmp/ds" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "pack images"; }
for f in class_000/fake1.jpg class_000/fake2.jpg class_001/fake3.jpg; do
	grep -q "warning: .*$f: not a JPEG file, skipped" "$tmp/err" || fail "$f: $(cat "$tmp/err")"
done
grep -q "warning: .*class_001/big.jpg: larger than the 64 MiB limit (--max-file-size), skipped" "$tmp/err" ||
	fail "big.jpg: $(cat "$tmp/err")"
peak_ok "pack images"
expect_rc 0 "$packer" inspect --json "$tmp/ds"
grep -q '"samples":6,' "$tmp/out" || fail "$(cat "$tmp/out")"

rm -f "$tmp/maxrss"
"${timed[@]}" "$packer" pack images --max-file-size 1G "$tmp/src" "$tmp/ds2" >"$tmp/out" 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; fail "pack images --max-file-size 1G"; }
grep -q "warning: .*class_001/big.jpg: not a JPEG file, skipped" "$tmp/err" || fail "1G: $(cat "$tmp/err")"
peak_ok "pack images --max-file-size 1G"

rm "$tmp"/src/class_00?/fake?.jpg "$tmp/src/class_001/big.jpg"
"$py" - "$tmp/src/class_000/large.jpg" <<'PYEOF' || fail "making a large JPEG"
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(5)
Image.fromarray(rng.integers(0, 256, (900, 1000, 3), dtype=np.uint8)).save(sys.argv[1], quality=95)
PYEOF
size=$(stat -c %s "$tmp/src/class_000/large.jpg")
[ "$size" -gt $((1 << 20)) ] || fail "large.jpg is only $size bytes"
expect_rc 0 "$packer" pack images --max-file-size 1M "$tmp/src" "$tmp/ds3"
grep -q "warning: .*class_000/large.jpg: larger than the 1 MiB limit (--max-file-size), skipped" "$tmp/err" ||
	fail "--max-file-size 1M: $(cat "$tmp/err")"
expect_rc 2 "$packer" pack images --strict --max-file-size 1M "$tmp/src" "$tmp/ds4"
grep -q "class_000/large.jpg: larger than the 1 MiB limit (--max-file-size) (--strict)" "$tmp/err" ||
	fail "--strict: $(cat "$tmp/err")"
expect_rc 0 "$packer" pack images --max-file-size 2M "$tmp/src" "$tmp/ds5"
expect_rc 0 "$packer" inspect --json "$tmp/ds5"
grep -q '"samples":7,' "$tmp/out" || fail "--max-file-size 2M: $(cat "$tmp/out")"
expect_rc 2 "$packer" pack images --max-file-size 12X "$tmp/src" "$tmp/ds6"
grep -q "max-file-size '12X'" "$tmp/err" || fail "$(cat "$tmp/err")"
expect_rc 2 "$packer" pack images --max-file-size 2G "$tmp/src" "$tmp/ds6"
echo "bigfile: ok"
