#!/bin/bash
# roundtrip.sh — pack a generated ImageFolder tree with --restart none, then
# check every sample: payload bytes (packer cat) equal the source file, the
# label is the index of its folder in sorted order, the stored name is the
# relative path, samples come in (class, file name) order, and the CRC in the
# record is right. Packed again by default (tiled by restart intervals):
# every payload (packer cat) decodes, with PIL, to exactly the source's
# pixels, carries restart markers on a grid and is marked tiled.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 48 5 7
expect_rc 0 "$packer" pack images --restart none "$tmp/src" "$tmp/ds"
[ -f "$tmp/ds/data.mdb" ] || fail "no data.mdb"
compgen -G "$tmp/ds.tmp-*" >/dev/null && fail "temporary directory left behind"
"$py" "$here/dsread.py" "$tmp/ds" >"$tmp/ds.json" || fail "dsread.py"
"$py" - "$tmp/src" "$tmp/ds.json" >"$tmp/names" <<'PYEOF' || fail "dataset content"
import json, os, sys
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF
src, ds = sys.argv[1], json.load(open(sys.argv[2]))
classes = sorted(d for d in os.listdir(src))
files = [(c, os.path.join(c, f)) for c in classes for f in sorted(os.listdir(os.path.join(src, c)))]
assert ds["labels"] == classes, ds["labels"]
assert ds["header"]["samples"] == len(files) == len(ds["samples"]), "count"
assert ds["header"]["classes"] == len(classes) and ds["header"]["kind"] == 1
for i, (s, (c, rel)) in enumerate(zip(ds["samples"], files)):
    assert s["index"] == i and s["name"] == rel, (i, s["name"], rel)
    assert s["label"] == classes.index(c), (i, s["label"])
    assert s["len"] == os.path.getsize(os.path.join(src, rel)), (i, "len")
    # The record's CRC is CRC-32C of the payload (an independent
    # implementation), which is the file itself (packer cat shows below).
    assert i >= 6 or s["crc"] == crc32c(open(os.path.join(src, rel), "rb").read()), (i, "crc")
    print(rel)
PYEOF
mapfile -t names <"$tmp/names"
n=${#names[@]}
[ "$n" = 48 ] || fail "$n names"
for ((i = 0; i < n; i++)); do
	payload_is "$tmp/ds" $i "$tmp/src/${names[i]}"
done

expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/tiled"
"$py" "$here/dsread.py" "$tmp/tiled" >"$tmp/tiled.json" || fail "dsread.py"
mkdir "$tmp/cat"
for ((i = 0; i < n; i++)); do
	"$packer" cat "$tmp/tiled" $i >"$tmp/cat/$i.jpg" || fail "cat $i (tiled)"
done
"$py" - "$tmp/src" "$tmp/tiled.json" "$tmp/cat" <<'PYEOF' || fail "tiled content"
import json, struct, sys
import numpy as np
from PIL import Image
src, ds, cat = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
for s in ds["samples"]:
    data = open("%s/%d.jpg" % (cat, s["index"]), "rb").read()
    assert s["flags"] == 1 and s["aux"] >= 1, s
    dri = data.find(b"\xff\xdd")
    assert dri > 0 and struct.unpack(">H", data[dri + 4:dri + 6])[0] == s["aux"], (s["name"], "DRI")
    assert b"\xff\xd0" in data, (s["name"], "no restart marker")
    a = np.asarray(Image.open("%s/%s" % (src, s["name"])))
    b = np.asarray(Image.open("%s/%d.jpg" % (cat, s["index"])))
    assert a.shape == b.shape and (a == b).all(), (s["name"], "pixels differ")
print("tiled: %d payloads decode to their sources' pixels" % len(ds["samples"]))
PYEOF
echo "roundtrip: $n samples ok"
