#!/bin/bash
# inspect.sh — packer inspect (text and --json) reports what the tree holds:
# kind, sample and class counts, total payload bytes (with --restart none,
# the sum of the file sizes), the per-class histogram and label names,
# min/max payload size; and for the default (tiled) pack the tiling share,
# the intervals, the sources' bytes and the size overhead, which agree with
# an independent reading of the records (dsread.py).
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 30 3 11
expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/tiled"
expect_rc 0 "$packer" inspect "$tmp/tiled"
out_has -E "^tiling: +30 of 30 records tiled by restart intervals \(100.0 %\), intervals of [0-9]+\.\.[0-9]+ MCUs"
expect_rc 0 "$packer" inspect "$tmp/tiled" --json
cp "$tmp/out" "$tmp/tiled.json"
"$py" "$here/dsread.py" "$tmp/tiled" >"$tmp/tiled.ds" || fail dsread
expect_rc 0 "$packer" pack images --restart none "$tmp/src" "$tmp/ds"
expect_rc 0 "$packer" inspect "$tmp/ds" --json
"$py" - "$tmp/src" "$tmp/tiled.json" "$tmp/tiled.ds" "$tmp/out" <<'PYEOF' || fail "inspect --json figures"
import json, os, sys
src, ds = sys.argv[1], json.load(open(sys.argv[3]))
j, p = json.load(open(sys.argv[2])), json.load(open(sys.argv[4]))  # tiled, --restart none
classes = sorted(os.listdir(src))
sizes = {c: [os.path.getsize(os.path.join(src, c, f)) for f in os.listdir(os.path.join(src, c))] for c in classes}
allsz = [s for c in classes for s in sizes[c]]
srcbytes = sum(allsz)
assert j["version"] == 3 and j["tiled"] == 30 and j["tiled_share"] == 1.0, j
assert j["source_bytes"] == srcbytes == ds["header"]["source_bytes"], (j["source_bytes"], srcbytes)
assert ds["header"]["tiled"] == 30 and all(s["flags"] == 1 and s["aux"] >= 1 for s in ds["samples"])
stored = sum(s["len"] for s in ds["samples"])
assert j["bytes"] == stored and abs(j["size_overhead"] - (stored / srcbytes - 1)) < 1e-4, j
auxes = sorted(s["aux"] for s in ds["samples"])
assert j["restart_mcus"]["min"] == auxes[0] and j["restart_mcus"]["max"] == auxes[-1], j["restart_mcus"]
assert p["kind"] == "jpeg", p["kind"]
assert p["samples"] == len(allsz) and p["classes"] == len(classes), (p["samples"], p["classes"])
assert p["bytes"] == srcbytes, (p["bytes"], srcbytes)
assert p["labels"] == classes, p["labels"]
assert p["histogram"] == [len(sizes[c]) for c in classes], p["histogram"]
assert p["payload_bytes"]["min"] == min(allsz) and p["payload_bytes"]["max"] == max(allsz)
assert p["tiled"] == 0 and p["size_overhead"] == 0, p
print("tiled: ok, overhead %+.2f %%" % (100 * j["size_overhead"]))
PYEOF
expect_rc 0 "$packer" inspect "$tmp/ds"
out_has "^samples: *30$"
out_has "^classes: *3$"
out_has -E "^ +1 +10  class_001$"
out_has "^tiling: *0 of 30 records"
expect_rc 1 "$packer" inspect "$tmp/nothing"
has "nothing"
echo "inspect: ok"
