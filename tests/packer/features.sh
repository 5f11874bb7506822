#!/bin/bash
# features.sh — inspect and verify on a features dataset (packed by
# `packer pack audio` from tools/gen/gen-speech output): inspect reports kind,
# feat_dim, dtype and frame/duration statistics that match the records;
# verify passes, then names the sample whose matrix holds an infinity (with
# its CRC made consistent, so only the finiteness check can catch it) and
# the sample whose header claims the wrong number of frames.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
need_exe "$genspeech"
need_audio
"$genspeech" 3 3 "$tmp/sp" --seed 3 --min-dur 0.8 --max-dur 1.5 >/dev/null || fail "gen-speech"
expect_rc 0 "$packer" pack audio --dtype f16 "$tmp/sp" "$tmp/ds"
expect_rc 0 "$packer" inspect --json "$tmp/ds"
cp "$tmp/out" "$tmp/inspect.json"
"$py" "$here/dsread.py" "$tmp/ds" >"$tmp/ds.json" || fail dsread
"$py" - "$tmp/inspect.json" "$tmp/ds.json" <<'PYEOF' || fail "inspect figures"
import json, sys
j, ds = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fr = [s["frames"] for s in ds["samples"]]
assert j["kind"] == "features" and j["samples"] == 9 and j["classes"] == 3, j
assert j["feat_dim"] == ds["header"]["feat_dim"] and j["dtype"] == "f16", j
assert j["frames"]["total"] == sum(fr) and j["frames"]["min"] == min(fr) and j["frames"]["max"] == max(fr)
assert abs(j["duration_s"]["total"] - sum(fr) * 0.01) < 1e-6, j["duration_s"]
assert j["bytes"] == sum(s["len"] for s in ds["samples"]) == 2 * ds["header"]["feat_dim"] * sum(fr)
assert j["histogram"] == [3, 3, 3], j["histogram"]
PYEOF
expect_rc 0 "$packer" inspect "$tmp/ds"
out_has "^features: *feat_dim [0-9]*, dtype f16"
out_has "^duration: "
expect_rc 0 "$packer" verify "$tmp/ds"

# Sample 4: an f16 infinity at frame 1, column 2, CRC recomputed.
# Sample 7: its header claims one frame fewer than the payload holds.
for k in 4 7; do "$packer" cat "$tmp/ds" $k >"$tmp/p$k" || fail "cat $k"; done
"$py" - "$tmp/ds/data.mdb" "$tmp/p4" "$tmp/p7" "$(grep -o '"feat_dim":[0-9]*' "$tmp/inspect.json" | cut -d: -f2)" <<'PYEOF' || fail "corrupting"
import struct, sys
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF
data = bytearray(open(sys.argv[1], "rb").read())
dim = int(sys.argv[4])
def locate(p):
    at = data.find(p)
    assert at >= 32 and data.find(p, at + 1) < 0, "payload not found once"
    return at
p4 = bytearray(open(sys.argv[2], "rb").read())
at = locate(bytes(p4))
p4[2 * (dim + 2):2 * (dim + 2) + 2] = struct.pack("<H", 0x7C00)
data[at:at + len(p4)] = p4
H = 32  # record header (format version 2): its last 4 bytes are a CRC of the first 28
def seal(at):
    struct.pack_into("<I", data, at - H + 28, crc32c(bytes(data[at - H:at - H + 28])))
struct.pack_into("<I", data, at - H + 8, crc32c(p4))
seal(at)
p7 = open(sys.argv[3], "rb").read()
at = locate(p7)
frames = struct.unpack_from("<I", data, at - H + 12)[0]
struct.pack_into("<I", data, at - H + 12, frames - 1)
seal(at)
open(sys.argv[1], "r+b").write(data)
PYEOF
expect_rc 1 "$packer" verify "$tmp/ds"
out_has "^sample 4: .*frame 1, column 2 is not finite"
out_has "^sample 7: "
bad_samples 2
echo "features: ok"
