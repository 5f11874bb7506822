#!/bin/bash
# resize.sh — --resize-shorter N --quality Q: every stored image decodes with
# its shorter side exactly N and the source's aspect ratio, its pixels match
# an independent antialiased resize (PIL, bilinear) of the source closely,
# grayscale stays grayscale, every output is tiled by restart intervals as it
# is written, images already no larger than N keep their pixels exactly
# (tiled by lossless transcoding; byte for byte with --restart none), and
# the result does not depend on --threads.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
$PY "$HERE/mkimages.py" 21 "$T/src" --classes 3 --min-side 90 --max-side 260 --seed 4 --smooth || fail mkimages
$PY "$HERE/mkimages.py" 4 "$T/small" --classes 1 --min-side 30 --max-side 64 --seed 5 || fail mkimages
mv "$T/small/class_000" "$T/src/class_zzz_small"
expect_rc 0 "$PACKER" pack images --resize-shorter 64 --quality 92 --threads 3 "$T/src" "$T/ds"
expect_rc 0 "$PACKER" verify --decode "$T/ds"
$PY "$HERE/dsread.py" "$T/ds" >"$T/ds.json" || fail dsread
n=$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["samples"]))' "$T/ds.json")
[ "$n" = 25 ] || fail "$n samples"
mkdir "$T/out.d"
for ((i = 0; i < n; i++)); do
	"$PACKER" cat "$T/ds" $i >"$T/out.d/$i.jpg" || fail "cat $i"
done
$PY - "$T/src" "$T/ds.json" "$T/out.d" <<'PYEOF' || fail "resized content"
import json, sys
import numpy as np
from PIL import Image
src, ds, outd = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
worst = 0
for s in ds["samples"]:
    a = Image.open("%s/%s" % (src, s["name"]))
    b = Image.open("%s/%d.jpg" % (outd, s["index"]))
    b.load()
    assert b.format == "JPEG" and b.mode == a.mode, (s["name"], b.mode, a.mode)
    sw, sh = a.size
    assert s["flags"] == 1 and s["aux"] >= 1, (s["name"], "not tiled")
    if min(sw, sh) <= 64:
        assert (np.asarray(a) == np.asarray(b)).all(), (s["name"], "kept image's pixels changed")
        continue
    w, h = b.size
    assert min(w, h) == 64, (s["name"], a.size, b.size)
    want_long = round(max(sw, sh) * 64 / min(sw, sh))
    assert max(w, h) == want_long, (s["name"], a.size, b.size)
    # Luma only: the re-encode subsamples chroma 4:2:0, which at this size
    # differs from the reference by more than any resize error would.
    ref = np.asarray(a.resize((w, h), Image.BILINEAR).convert("L"), dtype=np.float64)
    got = np.asarray(b.convert("L"), dtype=np.float64)
    diff = np.abs(ref - got).mean()
    worst = max(worst, diff)
    assert diff < 1.0, (s["name"], a.size, b.size, diff)
print("resized ok, worst mean abs difference %.2f" % worst)
PYEOF
expect_rc 0 "$PACKER" pack images --resize-shorter 64 --quality 92 --threads 1 "$T/src" "$T/ds1"
$PY "$HERE/dsread.py" "$T/ds1" >"$T/ds1.json" || fail dsread
$PY - "$T/ds.json" "$T/ds1.json" <<'PYEOF' || fail "--threads changes the result"
import json, sys
a, b = (json.load(open(p))["samples"] for p in sys.argv[1:3])
assert [(s["crc"], s["len"], s["label"]) for s in a] == [(s["crc"], s["len"], s["label"]) for s in b]
PYEOF
expect_rc 0 "$PACKER" pack images --restart none --resize-shorter 64 --quality 92 "$T/src" "$T/ds0"
$PY "$HERE/dsread.py" "$T/ds0" >"$T/ds0.json" || fail dsread
for i in $($PY -c 'import json,sys; [print(s["index"]) for s in json.load(open(sys.argv[1]))["samples"] if s["name"].startswith("class_zzz_small/")]' "$T/ds0.json"); do
	name=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"][int(sys.argv[2])]["name"])' "$T/ds0.json" $i)
	"$PACKER" cat "$T/ds0" $i | cmp -s - "$T/src/$name" || fail "--restart none: $name not kept byte for byte"
done
$PY -c 'import json,sys; s=json.load(open(sys.argv[1]))["samples"]; assert all(x["flags"] == 0 for x in s)' "$T/ds0.json" \
	|| fail "--restart none stored tiled records"
echo "resize: ok"
