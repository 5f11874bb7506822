#!/bin/bash
# verify.sh — packer verify passes on a good dataset (with and without
# --decode), then names exactly the sample whose payload byte was flipped
# inside data.mdb, and exits 1. The byte is found by searching data.mdb for
# a 32-byte string taken from the middle of that sample's source file.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 20 2 5
# --restart none: the payloads are the source files, where the needle is
expect_rc 0 "$packer" pack images --restart none "$tmp/src" "$tmp/ds"
expect_rc 0 "$packer" verify "$tmp/ds"
out_has "20 samples.* 0 bad"
expect_rc 0 "$packer" verify --decode "$tmp/ds"
K=13
name=$("$py" "$here/dsread.py" "$tmp/ds" | "$py" -c "import json,sys; print(json.load(sys.stdin)['samples'][$K]['name'])")
"$py" - "$tmp/src/$name" "$tmp/ds/data.mdb" <<'PYEOF' || fail "corrupting sample $K"
import sys
src = open(sys.argv[1], "rb").read()
data = bytearray(open(sys.argv[2], "rb").read())
mid = len(src) // 2
needle = src[mid:mid + 32]
at = data.find(needle)
assert at >= 0 and data.find(needle, at + 1) < 0, "needle not unique"
data[at + 5] ^= 0x40
open(sys.argv[2], "r+b").write(data)
PYEOF
expect_rc 1 "$packer" verify "$tmp/ds"
out_has -i "^sample $K: .*crc"
bad_samples 1
out_has "1 bad"
# --decode still reports the CRC failure of the same sample.
expect_rc 1 "$packer" verify --decode "$tmp/ds"
out_has "^sample $K:"

# A file that passes the packer's magic check but is not a decodable JPEG
# (its CRC is right): it cannot be transcoded, so it is stored as it is
# (untiled) and plain verify passes; verify --decode names it.
mkdir -p "$tmp/src2/a"
cp "$tmp/src/class_000/"* "$tmp/src2/a/"
printf '\xff\xd8\xff\xe0garbage that is no JPEG at all' >"$tmp/src2/a/zz_broken.jpg"
expect_rc 0 "$packer" pack images -v "$tmp/src2" "$tmp/ds2"
has "zz_broken.jpg: stored as it is, not tiled"
expect_rc 0 "$packer" verify "$tmp/ds2"
last=$(( $(ls "$tmp/src2/a" | wc -l) - 1 ))
expect_rc 1 "$packer" verify --decode "$tmp/ds2"
out_has "^sample $last: JPEG"
bad_samples 1
# A record whose label was changed (its payload and payload CRC intact):
# version 2 records carry a CRC of their header, so verify reports header
# damage for exactly that sample (it used to pass unnoticed).
expect_rc 0 "$packer" pack images --force "$tmp/src" "$tmp/ds3"
K=5
"$py" - "$tmp/ds3" $K <<'PYEOF' || fail "changing the label of sample $K"
import lmdb, struct, sys
env = lmdb.open(sys.argv[1], max_dbs=8, subdir=True)
with env.begin(write=True) as txn:
    db = env.open_db(b"samples", txn=txn)
    key = struct.pack(">Q", int(sys.argv[2]))
    v = bytearray(txn.get(key, db=db))
    struct.pack_into("<I", v, 0, (struct.unpack_from("<I", v, 0)[0] + 1) % 3)
    txn.put(key, bytes(v), db=db)
env.close()
PYEOF
rm -f "$tmp/ds3/lock.mdb"
expect_rc 1 "$packer" verify "$tmp/ds3"
out_has "^sample $K: .*record header damaged"
bad_samples 1
echo "verify: ok"
