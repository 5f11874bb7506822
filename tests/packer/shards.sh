#!/bin/bash
# shards.sh — sharded datasets (--shard-size, proto/manifest.h): the same
# sources packed as one data.mdb and as shards of several sizes (one below
# every sample's size: a shard each) in the walk's order (--order walk)
# give the same records, names and labels at every global index (packer
# cat, and shardcheck.py reading the files with python3-lmdb, CRC-32C of
# every shard included); by default (--order shuffled) the records are a
# permutation of those, not the identity, the same for the same seed byte
# for byte and another for another seed, a rejected file leaving no gap;
# each shard opens alone; inspect and verify see the whole dataset and
# verify names a damaged shard; reshard single -> sharded (shuffled) ->
# single (in that order) keeps every sample; a killed sharded pack leaves
# nothing; bad --shard-size and --order values are refused.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 24 3 11

# cat_same A B N: packer cat gives the same bytes for every index of both.
cat_same() {
	local i
	for ((i = 0; i < $3; i++)); do
		"$packer" cat "$1" $i >"$tmp/a" || fail "cat $1 $i"
		"$packer" cat "$2" $i >"$tmp/b" || fail "cat $2 $i"
		cmp -s "$tmp/a" "$tmp/b" || fail "sample $i of $2 differs from $1's"
	done
}
sizeof() { stat -c %s "$1"; }

# --restart none (payloads are the files, read straight into the records)
# and the default tiling (records rewritten by the workers).
for mode in none auto; do
	expect_rc 0 "$packer" pack images --restart $mode "$tmp/src" "$tmp/one-$mode"
	for size in 1 300K 1M; do
		ds=$tmp/sh-$mode-$size
		expect_rc 0 "$packer" pack images --restart $mode --shard-size $size --order walk "$tmp/src" "$ds"
		compgen -G "$ds.tmp-*" >/dev/null && fail "temporary folder left beside $ds"
		bytes=$(case $size in *K) echo $((${size%K} * 1024)) ;; *M) echo $((${size%M} * 1048576)) ;; *) echo $size ;; esac)
		n=$("$py" "$here/shardcheck.py" "$tmp/one-$mode" "$ds" $bytes) || fail "shardcheck $ds"
		[ "$size" != 1 ] || [ "$n" = 24 ] || fail "--shard-size 1: $n shards, not one per sample"
		[ "$size" != 1M ] || [ "$n" -lt 24 ] || fail "--shard-size 1M: $n shards"
		cat_same "$tmp/one-$mode" "$ds" 24
		expect_rc 0 "$packer" verify "$ds"
		out_has "24 samples.* 0 bad"
		out_has "$n shard files, 0 damaged"
	done
done
# the default order: a permutation of the walk's
ds=$tmp/shuf-none
expect_rc 0 "$packer" pack images --restart none --shard-size 300K "$tmp/src" "$ds"
"$py" "$here/shardcheck.py" --perm "$tmp/one-none" "$ds" 307200 >/dev/null || fail "shardcheck --perm $ds"
expect_rc 0 "$packer" verify "$ds"
out_has "24 samples.* 0 bad"

# --order: the same seed gives the same files, another seed another order
# (of the same records); the seed is in the recorded command line.
# names_of DS: DS's (either layout) sample names in global index order.
names_of() {
	"$py" - "$1" <<'PYEOF'
import os, sys, lmdb
d = sys.argv[1]
m = os.path.join(d, "feeder.manifest")
files = ([os.path.join(d, l.split(" ")[1]) for l in open(m) if l.startswith("shard ")]
         if os.path.exists(m) else [d])
for f in files:
    env = lmdb.open(f, readonly=True, lock=False, max_dbs=8, subdir=not os.path.exists(m))
    with env.begin() as txn:
        for _, v in txn.cursor(db=env.open_db(b"names", txn=txn, create=False)):
            print(v.decode())
PYEOF
}
# same_files A B: the folders hold the same files, byte for byte.
same_files() {
	[ "$(ls "$1")" = "$(ls "$2")" ] || fail "$1 and $2 hold other files"
	local f
	for f in "$1"/*; do
		cmp -s "$f" "$2/$(basename "$f")" || fail "$(basename "$f") of $1 and $2 differs"
	done
}
# the same command twice (DEST is in the recorded command line)
ds=$tmp/shuf-none
mv "$ds" "$tmp/first"
expect_rc 0 "$packer" pack images --restart none --shard-size 300K "$tmp/src" "$ds"
same_files "$tmp/first" "$ds"
expect_rc 0 "$packer" pack images --restart none --shard-size 300K --order-seed 7 "$tmp/src" "$tmp/seed7"
"$py" "$here/shardcheck.py" --perm "$tmp/one-none" "$tmp/seed7" >/dev/null || fail "shardcheck seed 7"
names_of "$ds" >"$tmp/n0" || fail "names of $ds"
names_of "$tmp/seed7" >"$tmp/n7" || fail "names of seed7"
[ "$(wc -l <"$tmp/n0")" = 24 ] || fail "names: $(cat "$tmp/n0")"
cmp -s "$tmp/n0" "$tmp/n7" && fail "seeds 0 and 7 give the same order"
expect_rc 0 "$packer" inspect "$tmp/seed7"
out_has "options: .*--order-seed 7"
# --order walk without --shard-size packs what a pack without it does;
# --order shuffled without it is one data.mdb in seed 0's order
expect_rc 0 "$packer" pack images --restart none --order walk "$tmp/src" "$tmp/walk1"
expect_rc 0 "$packer" pack images --restart none --order shuffled "$tmp/src" "$tmp/shuf1"
[ "$(ls "$tmp/shuf1")" = data.mdb ] || fail "--order shuffled alone: $(ls "$tmp/shuf1")"
for d in one-none walk1 shuf1; do
	"$py" "$here/dsread.py" "$tmp/$d" >"$tmp/$d.json" || fail "dsread $d"
done
"$py" - "$tmp/one-none.json" "$tmp/walk1.json" "$tmp/shuf1.json" <<'PYEOF' || fail "--order without --shard-size"
import json, sys
one, walk, shuf = (json.load(open(f)) for f in sys.argv[1:])
for j in (walk, shuf):
    assert j["header"]["options"] != one["header"]["options"]
    j["header"]["options"] = one["header"]["options"]
assert walk == one, "--order walk changed the dataset"
assert shuf["header"] == one["header"] and shuf["labels"] == one["labels"]
key = lambda s: (s["name"], s["label"], s["crc"], s["len"])
a, b = [key(s) for s in one["samples"]], [key(s) for s in shuf["samples"]]
assert sorted(a) == sorted(b) and a != b, "--order shuffled is not a permutation"
assert [s["index"] for s in shuf["samples"]] == list(range(24))
PYEOF
names_of "$tmp/shuf1" | cmp -s - "$tmp/n0" || fail "--order shuffled alone: not seed 0's order"
# a rejected file is named and leaves no gap in the indices
cp -r "$tmp/src" "$tmp/srcbad"
first_class=$(ls "$tmp/srcbad" | head -1)
echo "not a jpeg" >"$tmp/srcbad/$first_class/zz-bad.jpg"
expect_rc 0 "$packer" pack images --restart none --shard-size 300K "$tmp/srcbad" "$tmp/withbad"
has "zz-bad.jpg: not a JPEG file, skipped"
"$py" "$here/shardcheck.py" --perm "$tmp/one-none" "$tmp/withbad" >/dev/null || fail "shardcheck withbad"
expect_rc 0 "$packer" verify "$tmp/withbad"
out_has "24 samples.* 0 bad"

# inspect: the whole dataset's figures, then the shards; --json's array.
ds=$tmp/sh-none-300K
n=$(ls "$ds" | grep -c '^shard-')
expect_rc 0 "$packer" inspect "$ds"
out_has "^samples:   24$"
out_has "^classes:   3$"
out_has "^shards:    $n (feeder.manifest)"
[ "$(grep -c '^  shard-[0-9]*\.mdb ' "$tmp/out")" = "$n" ] || fail "inspect lists not $n shards"
expect_rc 0 "$packer" inspect "$tmp/one-none"
out_has "^samples:   24$"
grep -q "^shards:" "$tmp/out" && fail "inspect of a single dataset lists shards"
expect_rc 0 "$packer" inspect --json "$ds"
"$py" - "$tmp/out" "$ds" "$n" <<'PYEOF' || fail "inspect --json shards"
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["samples"] == 24 and len(j["shards"]) == int(sys.argv[3]), j
first = 0
for s in j["shards"]:
    assert s["first"] == first and s["samples"] >= 1, s
    assert s["bytes"] == os.path.getsize(os.path.join(sys.argv[2], s["name"])), s
    first += s["samples"]
assert first == 24 and sum(j["histogram"]) == 24
PYEOF
# each shard alone is an ordinary dataset counting its own samples
for f in "$ds"/shard-*.mdb; do
	want=$(grep "^shard $(basename "$f") " "$ds/feeder.manifest" | cut -d' ' -f4)
	expect_rc 0 "$packer" inspect "$f"
	out_has "^samples:   $want$"
	expect_rc 0 "$packer" cat "$f" 0
done

# cat: the global index, and its range
expect_rc 2 "$packer" cat "$ds" 24
has "index 24 out of range (.* has 24 samples)"

# reshard: single -> shards (shuffled by default, the same for the same
# seed) -> single (their order) -> other shards (--order walk: that order),
# every sample kept, the header's totals too
expect_rc 0 "$packer" reshard "$tmp/one-auto" "$tmp/rs1" --shard-size 500K
"$py" "$here/shardcheck.py" --perm "$tmp/one-auto" "$tmp/rs1" 512000 >/dev/null || fail "shardcheck rs1"
expect_rc 0 "$packer" verify "$tmp/rs1"
out_has "24 samples.* 0 bad"
expect_rc 0 "$packer" reshard "$tmp/one-auto" "$tmp/rs1b" --shard-size 500K --order shuffled --order-seed 0
same_files "$tmp/rs1" "$tmp/rs1b"
expect_rc 0 "$packer" reshard "$tmp/one-auto" "$tmp/rs1c" --shard-size 500K --order-seed 5
names_of "$tmp/rs1" >"$tmp/r1" && names_of "$tmp/rs1c" >"$tmp/r5" || fail "names of rs1"
cmp -s "$tmp/r1" "$tmp/r5" && fail "reshard: seeds 0 and 5 give the same order"
expect_rc 0 "$packer" reshard "$tmp/rs1" "$tmp/rs3" --single
[ -f "$tmp/rs3/data.mdb" ] && [ ! -e "$tmp/rs3/feeder.manifest" ] || fail "reshard --single layout"
"$py" "$here/shardcheck.py" "$tmp/rs3" "$tmp/rs1" >/dev/null || fail "reshard --single changed the order"
expect_rc 0 "$packer" reshard "$tmp/rs1" "$tmp/rs3w" --single --order walk
same_files "$tmp/rs3" "$tmp/rs3w"
expect_rc 0 "$packer" reshard "$tmp/rs3" "$tmp/rs2" --shard-size 1 --order walk
"$py" "$here/shardcheck.py" "$tmp/rs3" "$tmp/rs2" 1 >/dev/null || fail "shardcheck rs2"
expect_rc 0 "$packer" verify "$tmp/rs2"
out_has "24 samples.* 0 bad"
"$py" "$here/dsread.py" "$tmp/one-auto" >"$tmp/j1" || fail "dsread"
"$py" "$here/dsread.py" "$tmp/rs3" >"$tmp/j3" || fail "dsread"
"$py" - "$tmp/j1" "$tmp/j3" <<'PYEOF' || fail "reshard changed the dataset"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["header"] == b["header"] and a["labels"] == b["labels"], "header or labels"
key = lambda s: sorted((x["name"], x["label"], x["crc"], x["len"], x["flags"], x["aux"]) for x in s)
assert key(a["samples"]) == key(b["samples"]), "samples"
assert [x["name"] for x in a["samples"]] != [x["name"] for x in b["samples"]], "not shuffled"
PYEOF
expect_rc 2 "$packer" reshard "$tmp/rs1" "$tmp/rs3" --single
has "already exists (use --force"
expect_rc 0 "$packer" reshard --force "$tmp/rs1" "$tmp/rs3" --single
expect_rc 2 "$packer" reshard "$tmp/rs1" "$tmp/rs4"
one_line
has "give one of --shard-size SIZE and --single"
expect_rc 2 "$packer" reshard "$tmp/rs1" "$tmp/rs4" --single --shard-size 1M
has "give one of"
no_dest "$tmp/rs4"
expect_rc 2 "$packer" reshard "$tmp/rs1" "$tmp/rs4" --single --order random
one_line
has "reshard: --order 'random' is not"
no_dest "$tmp/rs4"
# --force replaces a sharded dataset (and a pack over it is a single one)
expect_rc 0 "$packer" pack images --force --restart none "$tmp/src" "$tmp/rs1"
[ -f "$tmp/rs1/data.mdb" ] && [ "$(ls "$tmp/rs1")" = data.mdb ] || fail "--force over shards"

# verify: a flipped byte in a shard's file names the shard; one in a
# record's payload names that sample by its global index too
ds=$tmp/sh-none-300K
victim=shard-00001.mdb
first=$(grep "^shard $victim " "$ds/feeder.manifest" | cut -d' ' -f3)
"$py" - "$ds/$victim" <<'PYEOF' || fail "corrupting $victim"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
# the last record's payload lies near the end of the used pages: flip a
# byte in a JPEG's entropy-coded data, found by its 0xffda marker
at = data.rfind(b"\xff\xda")
assert at > 0
data[at + 400] ^= 0x10
open(sys.argv[1], "r+b").write(data)
PYEOF
expect_rc 1 "$packer" verify "$ds"
out_has "^shard $victim: .*the manifest says .*damaged"
out_has "1 damaged"
out_has "1 bad"
bad=$(sed -n 's/^sample \([0-9]*\): .*/\1/p' "$tmp/out")
[ -n "$bad" ] && [ "$bad" -ge "$first" ] || fail "bad sample '$bad' is not in $victim (from $first)"
# a shard of the wrong size is named when the dataset is loaded
truncate -s -4096 "$ds/shard-00002.mdb"
expect_rc 1 "$packer" inspect "$ds"
one_line
has "shard-00002.mdb: .* bytes, the manifest says"

# bad --shard-size values: one line, exit 2, nothing written
for bad in 0 abc -5 1X 2.5M ""; do
	expect_rc 2 "$packer" pack images --shard-size "$bad" "$tmp/src" "$tmp/bad"
	one_line
	has "--shard-size '$bad' is not a size from 1 to"
	no_dest "$tmp/bad"
done
expect_rc 2 "$packer" reshard "$tmp/one-auto" "$tmp/bad" --shard-size 0
has "reshard: --shard-size '0' is not a size"
expect_rc 2 "$packer" pack images --shard-size 2T "$tmp/src" "$tmp/bad"
has "--shard-size '2T' is not a size from 1 to 1024G"

# a sharded pack killed midway leaves nothing behind (SIGINT), or a
# leftover the next pack removes (SIGKILL)
"$py" "$here/mkimages.py" 60 "$tmp/big" --classes 2 --min-side 500 --max-side 700 || fail "mkimages"
pack_and_stop "$tmp/k1" shard-00002.mdb "$tmp/big" --shard-size 1
kill -INT $pid
kill -CONT $pid
wait $pid
rc=$?
[ $rc = 130 ] || fail "SIGINT: exit status $rc, expected 130"
no_dest "$tmp/k1"
pack_and_stop "$tmp/k2" shard-00002.mdb "$tmp/big" --shard-size 1
kill -KILL $pid
wait $pid 2>/dev/null
[ -e "$tmp/k2" ] && fail "SIGKILL: DEST exists"
compgen -G "$tmp/k2.tmp-*/shard-00000.mdb" >/dev/null || fail "SIGKILL: no leftover shards"
expect_rc 0 "$packer" pack images --restart none --shard-size 1M "$tmp/big" "$tmp/k2"
has "removed .*k2.tmp-.*interrupted"
compgen -G "$tmp/k2.tmp-*" >/dev/null && fail "leftover not removed"
expect_rc 0 "$packer" verify "$tmp/k2"

# pack audio --shard-size: the same utterances as the single dataset
if "$packer" pack audio --help >/dev/null 2>&1 && [ -x "$genspeech" ]; then
	"$genspeech" 3 3 "$tmp/sp" --seed 3 --min-dur 0.8 --max-dur 1.5 >/dev/null || fail "gen-speech"
	expect_rc 0 "$packer" pack audio --store wave "$tmp/sp" "$tmp/a1"
	expect_rc 0 "$packer" pack audio --store wave --shard-size 40K --order walk "$tmp/sp" "$tmp/a2"
	"$py" "$here/shardcheck.py" "$tmp/a1" "$tmp/a2" 40960 >/dev/null || fail "shardcheck audio"
	na=$("$py" "$here/dsread.py" "$tmp/a1" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["header"]["samples"])')
	[ "$na" -gt 3 ] || fail "audio: $na samples"
	cat_same "$tmp/a1" "$tmp/a2" "$na"
	expect_rc 0 "$packer" pack audio --store wave --shard-size 40K "$tmp/sp" "$tmp/a3"
	"$py" "$here/shardcheck.py" --perm "$tmp/a1" "$tmp/a3" 40960 >/dev/null || fail "shardcheck --perm audio"
	expect_rc 0 "$packer" inspect "$tmp/a3"
	out_has "options: .* order=shuffled order-seed=0$"
	expect_rc 0 "$packer" verify "$tmp/a3"
fi
echo "shards: ok"
