#!/bin/bash
# resize.sh — --resize-shorter N --quality Q: every stored image decodes with
# its shorter side exactly N and the source's aspect ratio, its pixels match
# an independent antialiased resize (PIL, bilinear) of the source closely,
# grayscale stays grayscale, every output is tiled by restart intervals as it
# is written, images already no larger than N keep their pixels exactly
# (tiled by lossless transcoding; byte for byte with --restart none), and
# the result does not depend on --threads.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
"$py" "$here/mkimages.py" 21 "$tmp/src" --classes 3 --min-side 90 --max-side 260 --seed 4 --smooth || fail mkimages
"$py" "$here/mkimages.py" 4 "$tmp/small" --classes 1 --min-side 30 --max-side 64 --seed 5 || fail mkimages
mv "$tmp/small/class_000" "$tmp/src/class_zzz_small"
expect_rc 0 "$packer" pack images --resize-shorter 64 --quality 92 --threads 3 "$tmp/src" "$tmp/ds"
expect_rc 0 "$packer" verify --decode "$tmp/ds"
"$py" "$here/dsread.py" "$tmp/ds" >"$tmp/ds.json" || fail dsread
expect_rc 0 "$packer" pack images --resize-shorter 64 --quality 92 --threads 1 "$tmp/src" "$tmp/ds1"
"$py" "$here/dsread.py" "$tmp/ds1" >"$tmp/ds1.json" || fail dsread
mkdir "$tmp/out.d"
for ((i = 0; i < 25; i++)); do
	"$packer" cat "$tmp/ds" $i >"$tmp/out.d/$i.jpg" || fail "cat $i"
done
"$py" - "$tmp/src" "$tmp/ds.json" "$tmp/out.d" "$tmp/ds1.json" <<'PYEOF' || fail "resized content"
import json, sys
import numpy as np
from PIL import Image
src, ds, outd = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
assert len(ds["samples"]) == 25, len(ds["samples"])
one = json.load(open(sys.argv[4]))["samples"]  # packed with --threads 1: the same records
assert [(s["crc"], s["len"], s["label"]) for s in ds["samples"]] == [(s["crc"], s["len"], s["label"]) for s in one]
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
expect_rc 0 "$packer" pack images --restart none --resize-shorter 64 --quality 92 "$tmp/src" "$tmp/ds0"
"$py" "$here/dsread.py" "$tmp/ds0" >"$tmp/ds0.json" || fail dsread
for i in $("$py" -c 'import json,sys; [print(s["index"]) for s in json.load(open(sys.argv[1]))["samples"] if s["name"].startswith("class_zzz_small/")]' "$tmp/ds0.json"); do
	name=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"][int(sys.argv[2])]["name"])' "$tmp/ds0.json" $i)
	"$packer" cat "$tmp/ds0" $i | cmp -s - "$tmp/src/$name" || fail "--restart none: $name not kept byte for byte"
done
"$py" -c 'import json,sys; s=json.load(open(sys.argv[1]))["samples"]; assert all(x["flags"] == 0 for x in s)' "$tmp/ds0.json" \
	|| fail "--restart none stored tiled records"
echo "resize: ok"
