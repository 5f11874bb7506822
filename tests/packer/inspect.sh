#!/bin/bash
# inspect.sh — packer inspect (text and --json) reports what the tree holds:
# kind, sample and class counts, total payload bytes (with --restart none,
# the sum of the file sizes), the per-class histogram and label names,
# min/max payload size; and for the default (tiled) pack the tiling share,
# the intervals, the sources' bytes and the size overhead, which agree with
# an independent reading of the records (dsread.py).
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 30 "$T/src" 3 11
expect_rc 0 "$PACKER" pack images "$T/src" "$T/tiled"
expect_rc 0 "$PACKER" inspect "$T/tiled" --json
cp "$T/out" "$T/tiled.json"
$PY "$HERE/dsread.py" "$T/tiled" >"$T/tiled.ds" || fail dsread
$PY - "$T/src" "$T/tiled.json" "$T/tiled.ds" <<'PYEOF' || fail "inspect --json tiling figures"
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
expect_rc 0 "$PACKER" inspect "$T/tiled"
grep -Eq "^tiling: +30 of 30 records tiled by restart intervals \(100.0 %\), intervals of [0-9]+\.\.[0-9]+ MCUs" "$T/out" \
	|| fail "text: tiling line: $(grep tiling "$T/out")"
expect_rc 0 "$PACKER" pack images --restart none "$T/src" "$T/ds"
expect_rc 0 "$PACKER" inspect "$T/ds" --json
$PY - "$T/src" "$T/out" <<'PYEOF' || fail "inspect --json figures"
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
expect_rc 0 "$PACKER" inspect "$T/ds"
grep -q "^samples: *30$" "$T/out" || fail "text: samples line"
grep -q "^classes: *3$" "$T/out" || fail "text: classes line"
grep -Eq "^ +1 +10  class_001$" "$T/out" || fail "text: histogram line for class 1"
grep -q "^tiling: *0 of 30 records" "$T/out" || fail "text: tiling line of an untiled pack"
expect_rc 1 "$PACKER" inspect "$T/nothing"
grep -q "nothing" "$T/err" || fail "error names the path"
echo "inspect: ok"
