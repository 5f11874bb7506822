#!/bin/bash
# counts.sh — a dataset whose header claims 2^61 samples, alone
# and together with LMDB's own entry count of the samples database forged to
# match (both are numbers stored in the file), and one claiming 2^32 - 1
# classes with the label table's count forged too. inspect, verify and cat
# must each end at once (under a 10 s timeout; they used to spin through
# 2^61 lookups) with exit 1, one line on stderr naming the dataset, and no
# report on stdout.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 4 2 6
# forge DIR FIELD VALUE [DB]: set the header's samples or classes to VALUE,
# and with DB also that named database's entry count in LMDB's main tree.
forge() {
	"$py" - "$@" <<'PYEOF' || fail "forging $*"
import struct, sys
import lmdb
d, field, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sys.argv[4].encode() if len(sys.argv) > 4 else None
env = lmdb.open(d, max_dbs=8, subdir=True, lock=False)
meta = env.open_db(b"meta", create=False)
with env.begin(write=True) as txn:
    h = bytearray(txn.get(b"header", db=meta))
    if field == "samples":
        struct.pack_into("<Q", h, 16, value)
    else:
        struct.pack_into("<I", h, 24, value)
    txn.put(b"header", bytes(h), db=meta)
env.close()
if db:
    # A named database's record in the main tree: node header (data size
    # 48, flags F_SUBDATA, key size), the name, then MDB_db, whose
    # md_entries is at byte 32. Patch every copy (older pages keep some).
    path = d + "/data.mdb"
    data = bytearray(open(path, "rb").read())
    pat = struct.pack("<HHHH", 48, 0, 2, len(db)) + db
    at, n = data.find(pat), 0
    while at >= 0:
        struct.pack_into("<Q", data, at + len(pat) + 32, value)
        n += 1
        at = data.find(pat, at + 1)
    assert n > 0, "no record of database %s" % db
    open(path, "r+b").write(data)
PYEOF
}
run() { # the read commands on $1 fail at once: exit 1, one line naming it
	local c
	for c in inspect verify cat; do
		expect_rc 1 timeout 10 "$packer" $c "$1" $([ $c != cat ] || echo 0)
		one_line
		has "$1"
		[ $c = cat ] || [ ! -s "$tmp/out" ] || fail "$c $1: stdout: $(head -c 300 "$tmp/out")"
	done
}
expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds0"
cp -r "$tmp/ds0" "$tmp/a" && forge "$tmp/a" samples $((1 << 61))
run "$tmp/a"
cp -r "$tmp/ds0" "$tmp/b" && forge "$tmp/b" samples $((1 << 61)) samples
run "$tmp/b"
cp -r "$tmp/ds0" "$tmp/c" && forge "$tmp/c" classes 4294967295 labels
run "$tmp/c"
expect_rc 0 "$packer" verify "$tmp/ds0"
echo "counts: ok"
