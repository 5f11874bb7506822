#!/bin/bash
# inspect.sh — packer inspect (text and --json) reports what the tree holds:
# kind, sample and class counts, total payload bytes (with --restart none,
# the sum of the file sizes), the per-class histogram and label names,
# min/max payload size; and for the default (tiled) pack the tiling share,
# the intervals, the sources' bytes and the size overhead, which agree with
# an independent reading of the records (dsread.py).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 30 3 11
expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/tiled"
expect_rc 0 "$packer" inspect "$tmp/tiled" --json
cp "$tmp/out" "$tmp/tiled.json"
"$py" "$here/dsread.py" "$tmp/tiled" >"$tmp/tiled.ds" || fail dsread
"$py" - "$tmp/src" "$tmp/tiled.json" "$tmp/tiled.ds" <<'PYEOF' || fail "inspect --json tiling figures"
import json, os, sys
src, j, ds = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
srcbytes = sum(os.path.getsize(os.path.join(src, c, f)) for c in os.listdir(src) for f in os.listdir(os.path.join(src, c)))
assert j["version"] == 3 and j["tiled"] == 30 and j["tiled_share"] == 1.0, j
assert j["source_bytes"] == srcbytes == ds["header"]["source_bytes"], (j["source_bytes"], srcbytes)
assert ds["header"]["tiled"] == 30 and all(s["flags"] == 1 and s["aux"] >= 1 for s in ds["samples"])
stored = sum(s["len"] for s in ds["samples"])
assert j["bytes"] == stored and abs(j["size_overhead"] - (stored / srcbytes - 1)) < 1e-4, j
auxes = sorted(s["aux"] for s in ds["samples"])
assert j["restart_mcus"]["min"] == auxes[0] and j["restart_mcus"]["max"] == auxes[-1], j["restart_mcus"]
print("tiled: ok, overhead %+.2f %%" % (100 * j["size_overhead"]))
PYEOF
expect_rc 0 "$packer" inspect "$tmp/tiled"
grep -Eq "^tiling: +30 of 30 records tiled by restart intervals \(100.0 %\), intervals of [0-9]+\.\.[0-9]+ MCUs" "$tmp/out" \
	|| fail "text: tiling line: $(grep tiling "$tmp/out")"
expect_rc 0 "$packer" pack images --restart none "$tmp/src" "$tmp/ds"
expect_rc 0 "$packer" inspect "$tmp/ds" --json
"$py" - "$tmp/src" "$tmp/out" <<'PYEOF' || fail "inspect --json figures"
import json, os, sys
src, j = sys.argv[1], json.load(open(sys.argv[2]))
classes = sorted(os.listdir(src))
sizes = {c: [os.path.getsize(os.path.join(src, c, f)) for f in os.listdir(os.path.join(src, c))] for c in classes}
allsz = [s for c in classes for s in sizes[c]]
assert j["kind"] == "jpeg", j["kind"]
assert j["samples"] == len(allsz) and j["classes"] == len(classes), (j["samples"], j["classes"])
assert j["bytes"] == sum(allsz), (j["bytes"], sum(allsz))
assert j["labels"] == classes, j["labels"]
assert j["histogram"] == [len(sizes[c]) for c in classes], j["histogram"]
assert j["payload_bytes"]["min"] == min(allsz) and j["payload_bytes"]["max"] == max(allsz)
assert j["tiled"] == 0 and j["size_overhead"] == 0, j
print("ok")
PYEOF
expect_rc 0 "$packer" inspect "$tmp/ds"
grep -q "^samples: *30$" "$tmp/out" || fail "text: samples line"
grep -q "^classes: *3$" "$tmp/out" || fail "text: classes line"
grep -Eq "^ +1 +10  class_001$" "$tmp/out" || fail "text: histogram line for class 1"
grep -q "^tiling: *0 of 30 records" "$tmp/out" || fail "text: tiling line of an untiled pack"
expect_rc 1 "$packer" inspect "$tmp/nothing"
grep -q "nothing" "$tmp/err" || fail "error names the path"
echo "inspect: ok"
