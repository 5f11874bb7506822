#!/bin/bash
# symlinks.sh — links to folders in a source tree. A link loop
# (class_001/loop -> .), two links to '.' (an exponential walk if followed
# blindly), a link into another class's folder, a class folder that is a
# link to another class, and a link to a folder outside SRC:
#   - by default no link to a folder is followed: the pack ends (under a
#     timeout) with exactly the tree's real files, each link named in a
#     warning;
#   - with --follow-links each folder is walked once, recognised by
#     (device, inode): the outside folder's files are packed once, the loops
#     and second ways in are reported, no file (name or content) is packed
#     twice, and labels stay those of the real class folders.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 12 3 9
gen_images "$tmp/extra" 2 1 10
ln -s . "$tmp/src/class_001/loop"
ln -s . "$tmp/src/class_002/l1"
ln -s . "$tmp/src/class_002/l2"
ln -s ../class_001 "$tmp/src/class_000/into_001"
ln -s class_000 "$tmp/src/class_003"
ln -s "$tmp/extra/class_000" "$tmp/src/class_002/outside"

# check DS NSAMPLES NCLASSES: names unique, contents unique (CRC), labels
# those of the real class folder each name lies in.
check() {
	"$py" "$here/dsread.py" "$1" >"$tmp/ds.json" || fail "dsread $1"
	"$py" - "$tmp/ds.json" "$2" "$3" <<'PYEOF' || fail "content of $1"
import json, sys
ds, n, k = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
names = [s["name"] for s in ds["samples"]]
crcs = [s["crc"] for s in ds["samples"]]
assert len(names) == n == ds["header"]["samples"], (len(names), n, names)
assert len(set(names)) == n, "a name packed twice: %s" % names
assert len(set(crcs)) == n, "a file packed twice under two names: %s" % names
assert ds["labels"] == ["class_000", "class_001", "class_002"][:k], ds["labels"]
for s in ds["samples"]:
    assert ds["labels"][s["label"]] == s["name"].split("/")[0], s
    assert s["name"].count("/") == (2 if "/outside/" in s["name"] else 1), s["name"]
PYEOF
}

# (timeout's 124: the walk followed the link loops.)
expect_rc 0 timeout 20 "$packer" pack images "$tmp/src" "$tmp/ds"
for l in class_001/loop class_002/l1 class_002/l2 class_000/into_001 class_003 class_002/outside; do
	has "src/$l: a link to a folder, not followed"
done
check "$tmp/ds" 12 3

expect_rc 0 timeout 20 "$packer" pack images --follow-links "$tmp/src" "$tmp/ds2"
has "src/class_001/loop: the same folder as .*src/class_001, not walked again"
has "src/class_000/into_001: the same folder as .*src/class_001, not walked again"
has "src/class_003: the same folder as .*src/class_000, not a second class"
check "$tmp/ds2" 14 3
echo "symlinks: ok"
