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
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 6 2 4
truncate -s 60M "$tmp/src/class_000/fake1.jpg" "$tmp/src/class_000/fake2.jpg" "$tmp/src/class_001/fake3.jpg" ||
	fail truncate
truncate -s 700M "$tmp/src/class_001/big.jpg" || fail truncate

expect_rc 0 "${timed[@]}" "$packer" pack images "$tmp/src" "$tmp/ds"
for f in class_000/fake1.jpg class_000/fake2.jpg class_001/fake3.jpg; do
	has "warning: .*$f: not a JPEG file, skipped"
done
has "warning: .*class_001/big.jpg: larger than the 64 MiB limit (--max-file-size), skipped"
peak_below 100000 "pack images"
inspect_has "$tmp/ds" '"samples":6,'

expect_rc 0 "${timed[@]}" "$packer" pack images --max-file-size 1G "$tmp/src" "$tmp/ds2"
has "warning: .*class_001/big.jpg: not a JPEG file, skipped"
peak_below 100000 "pack images --max-file-size 1G"

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
has "warning: .*class_000/large.jpg: larger than the 1 MiB limit (--max-file-size), skipped"
expect_rc 2 "$packer" pack images --strict --max-file-size 1M "$tmp/src" "$tmp/ds4"
has "class_000/large.jpg: larger than the 1 MiB limit (--max-file-size) (--strict)"
expect_rc 0 "$packer" pack images --max-file-size 2M "$tmp/src" "$tmp/ds5"
inspect_has "$tmp/ds5" '"samples":7,'
expect_rc 2 "$packer" pack images --max-file-size 12X "$tmp/src" "$tmp/ds6"
has "max-file-size '12X'"
expect_rc 2 "$packer" pack images --max-file-size 2G "$tmp/src" "$tmp/ds6"
echo "bigfile: ok"
