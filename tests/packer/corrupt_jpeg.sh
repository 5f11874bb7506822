#!/bin/bash
# corrupt_jpeg.sh — JPEGs that libjpeg decodes only with warnings: a
# truncated file, one whose header claims more rows than its data holds,
# one with junk before its EOI marker, and a small truncated one (no larger
# than the resize target, so it would be kept byte for byte). libjpeg
# fills what is missing with grey and carries on; feederd treats any warning
# as an error, so packer must too:
#   - `pack --resize-shorter` skips each with a warning naming the file and
#     stores only the clean images (which then verify --decode cleanly), or
#     fails naming the first under --strict;
#   - packed as they are, `verify --decode` reports exactly those samples,
#     by index, and exits 1.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
"$py" "$here/mkimages.py" 6 "$tmp/src" --classes 2 --min-side 120 --max-side 200 --seed 8 || fail mkimages
"$py" - "$tmp/src/class_001" <<'PYEOF' || fail "making the broken files"
import io, random, sys
from PIL import Image
d = sys.argv[1]
rng = random.Random(3)
def jpeg(w, h):
    im = Image.new("RGB", (w, h))
    im.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(w * h)])
    b = io.BytesIO()
    im.save(b, "JPEG", quality=90)
    return bytearray(b.getvalue())
a = jpeg(200, 150)
open(d + "/trunc.jpg", "wb").write(a[:len(a) * 6 // 10])
b = jpeg(200, 150)
at = b.find(b"\xff\xc0")  # SOF0: length(2) precision(1) height(2) width(2)
b[at + 5:at + 7] = (300).to_bytes(2, "big")
open(d + "/tall.jpg", "wb").write(b)
c = jpeg(200, 150)
assert c[-2:] == b"\xff\xd9"
open(d + "/junk.jpg", "wb").write(c[:-2] + b"junk" + c[-2:])
s = jpeg(40, 30)
open(d + "/small_trunc.jpg", "wb").write(s[:len(s) * 6 // 10])
PYEOF
bad="trunc.jpg tall.jpg junk.jpg small_trunc.jpg"

expect_rc 0 "$packer" pack images --resize-shorter 64 "$tmp/src" "$tmp/ds"
for f in $bad; do
	has "warning: .*class_001/$f: JPEG: .*, skipped"
done
inspect_has "$tmp/ds" '"samples":6,'
expect_rc 0 "$packer" verify --decode "$tmp/ds"

expect_rc 2 "$packer" pack images --strict --resize-shorter 64 "$tmp/src" "$tmp/ds2"
has "class_001/junk.jpg: JPEG: .*(--strict)"
no_dest "$tmp/ds2"

expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds3"
expect_rc 1 "$packer" verify --decode "$tmp/ds3"
"$py" "$here/dsread.py" "$tmp/ds3" >"$tmp/ds3.json" || fail dsread
for f in $bad; do
	out_has "^sample $(index_of "$tmp/ds3.json" "/$f"): JPEG: "
done
bad_samples 4
out_has "10 samples.* 4 bad"
echo "corrupt_jpeg: ok"
