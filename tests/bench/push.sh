#!/bin/bash
# push.sh — benchmark of `packer push` (not a test) against its peer, the
# parallel upload `aws s3 cp --recursive` does, in boto3's own engine
# (tests/bench/push_boto3.py: one s3transfer TransferManager, the same
# number of threads), to the same S3 server: moto on 127.0.0.1
# (tests/lib/s3_server.sh, signatures not checked). The issue's bar:
# packer push at >= 80 % of the peer's MB/s.
#
# usage: tests/bench/push.sh [N] [SHARD] [JOBS]
#   N images (default 3000, ~250 MB) packed as they are (--restart none)
#   into shards of SHARD (default 32M); JOBS threads each (default 8).
# Two rows per uploader: parts of 64M (packer's default: each shard one
# PUT; boto3 with the same threshold) and of 8M (boto3's default: every
# shard a multipart upload). Each row is the best of 3 runs, each run to a
# fresh prefix. Prints a markdown table and the ratios.
# Environment: FEEDER_BUILD (default <source>/build).
set -eu
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
N=${1:-3000} SHARD=${2:-32M} JOBS=${3:-8}
IMG=/tmp/feeder-bench-images-$N
need_exe "$packer" "$genimg"
threads=$(nproc)

if [ ! -f "$IMG.complete" ]; then
	echo "generating $N images into $IMG ..." >&2
	rm -rf "$IMG"
	gen_images "$IMG" "$N" 100 1
	touch "$IMG.complete"
fi
echo "packing into shards of $SHARD ..." >&2
pack_images ds "$IMG" --restart none --shard-size "$SHARD"
ds=$datasets/ds
files=$(find "$ds" -name '*.mdb' | wc -l)
bytes=$(find "$ds" -name '*.mdb' -printf '%s\n' | awk '{s += $1} END {print s}')
# The uploaders read the same files: the page cache holds them for both.
cat "$ds"/*.mdb >/dev/null
# The peer uploads the shard files (the manifest is packer's own).
mkdir "$tmp/shards"
ln "$ds"/*.mdb "$tmp/shards/"

s3_start
s3_py mb bench

now() { date +%s.%N; }
run_id=0
RESULTS=()
# best NAME CMD...: the fastest of 3 runs of CMD, each to a fresh prefix
# ($prefix), and the bucket emptied after each so moto's memory stays flat.
# timed=outside: the whole process (packer's start, its manifest's PUT);
# timed=self: the seconds CMD prints first (the peer's uploads alone).
best() {
	local name=$1 b="" i t0 t1
	shift
	for i in 1 2 3; do
		run_id=$((run_id + 1))
		prefix=run$run_id
		t0=$(now)
		"$@" >"$tmp/run.out" 2>"$tmp/run.err" || { cat "$tmp/run.err" >&2; fail "$name failed"; }
		t1=$(now)
		# The peer times itself, without Python's start and imports.
		[ "$timed" = self ] && t0=0 t1=$(cut -d' ' -f1 "$tmp/run.out")
		b=$(awk -v a="$t0" -v c="$t1" -v b="$b" 'BEGIN {d = c - a; printf "%.3f", (b == "" || d < b) ? d : b}')
		s3_py rb bench >/dev/null && s3_py mb bench >/dev/null
	done
	RESULTS+=("$name|$b")
	echo "  $name: best of 3, $b s" >&2
}
push() { "$packer" push "$ds" "s3://bench/$prefix" --jobs "$JOBS" --part-size "$1"; }
peer() { "$s3_venv/bin/python" "$src/tests/bench/push_boto3.py" "$tmp/shards" bench "$prefix" "$JOBS" "$1"; }
echo "uploading $files shards, $bytes bytes, $JOBS at once ..." >&2
timed=outside
best "packer push, parts of 64M" push 64M
timed=self
best "boto3 TransferManager, parts of 64M" peer $((64 << 20))
timed=outside
best "packer push, parts of 8M" push 8M
timed=self
best "boto3 TransferManager, parts of 8M" peer $((8 << 20))

secs() { for r in "${RESULTS[@]}"; do [ "${r%%|*}" = "$1" ] && echo "${r#*|}"; done; }
echo
echo "### packer push vs boto3 to moto on loopback: $files shards, $(awk -v b="$bytes" 'BEGIN {printf "%.1f MB", b / 1e6}'), $JOBS threads ($(nproc) CPUs, $(uname -r))"
echo
echo "| what | seconds | MB/s |"
echo "|---|---:|---:|"
for r in "${RESULTS[@]}"; do
	awk -v n="${r%%|*}" -v s="${r#*|}" -v b="$bytes" 'BEGIN {printf "| %s | %.2f | %.1f |\n", n, s, b / s / 1e6}'
done
echo
ratio() { awk -v a="$(secs "$2")" -v b="$(secs "$1")" 'BEGIN {printf "%.2f", a / b}'; }
echo "- packer push / boto3, parts of 64M: $(ratio "packer push, parts of 64M" "boto3 TransferManager, parts of 64M") (target >= 0.80)"
echo "- packer push / boto3, parts of 8M: $(ratio "packer push, parts of 8M" "boto3 TransferManager, parts of 8M") (target >= 0.80)"
echo "- packer push is timed as a whole process, its manifest's PUT included; boto3 from its first upload to its last, without Python's start"
exit 0
