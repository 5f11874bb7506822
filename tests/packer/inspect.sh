#!/bin/bash
# inspect.sh — packer inspect (text and --json) reports what the tree holds:
# kind, sample and class counts, total payload bytes (the sum of the file
# sizes), the per-class histogram and label names, min/max payload size.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 30 "$T/src" 3 11
expect_rc 0 "$PACKER" pack images "$T/src" "$T/ds"
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
print("ok")
PYEOF
expect_rc 0 "$PACKER" inspect "$T/ds"
grep -q "^samples: *30$" "$T/out" || fail "text: samples line"
grep -q "^classes: *3$" "$T/out" || fail "text: classes line"
grep -Eq "^ +1 +10  class_001$" "$T/out" || fail "text: histogram line for class 1"
expect_rc 1 "$PACKER" inspect "$T/nothing"
grep -q "nothing" "$T/err" || fail "error names the path"
echo "inspect: ok"
