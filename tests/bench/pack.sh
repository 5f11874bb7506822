#!/bin/bash
# pack.sh — benchmark of `packer pack images` (not a test).
#
# usage: tests/bench/pack.sh [N]      (default N=20000)
#
# Generates N photo-like JPEGs with tools/gen/gen-images into
# /tmp/feeder-bench-images-N (kept and reused), then in one run measures
# files/s and MB/s of: (1) packer pack images; (2) the Python recipe people
# use today (tests/bench/folder2lmdb.py, after Efficient-PyTorch); (3) the
# I/O limit: reading every file once with cat, warm cache and, where the
# page cache can be dropped, cold (one cat stream, and 32 in parallel). Both
# packers write to the same disk folder and include their final sync (a
# dataset is not done until it is durable); each also runs into tmpfs
# (/dev/shm) when it has room, which shows the CPU side without the disk,
# and from a cold cache into tmpfs, which shows how well each reads from
# the disk. The packer rows store files as they are (--restart none: the
# data path against the read limit); one more row packs into tmpfs as
# packer does by default, transcoding every JPEG into restart-interval tiles
# on --threads workers, so its CPU cost shows beside the plain pack.
# Prints a markdown table.
# Environment: FEEDER_BUILD (default <source>/build), FEEDER_BENCH_OUT
# (default /tmp/feeder-bench-out).
set -eu
. "$(dirname "$0")/../lib/lib.sh"
N=${1:-20000}
IMG=/tmp/feeder-bench-images-$N
OUT=${FEEDER_BENCH_OUT:-/tmp/feeder-bench-out}
need_exe "$packer" "$genimg"
need_python lmdb
threads=$(nproc)

if [ ! -f "$IMG.complete" ]; then
	echo "generating $N images into $IMG ..." >&2
	rm -rf "$IMG"
	gen_images "$IMG" "$N" 100 1
	touch "$IMG.complete"
fi
FILES=$(find "$IMG" -type f | wc -l)
BYTES=$(find "$IMG" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
mkdir -p "$OUT"

now() { date +%s.%N; }
RESULTS=()
# best NAME K SETUP CMD...: the fastest of K timed runs of CMD (SETUP, untimed,
# before each), appended as "NAME|seconds" to the results: the two rows the
# packer's ratio compares (warm read, packing into tmpfs) are memory-bound,
# and on this shared VM one run in three may take twice as long (the kernel's
# copies slow down, not our code: sys time doubles); the best of three
# compares like with like. run NAME CMD...: one timed run.
best() {
	local name=$1 k=$2 setup=$3 t0 t1 b="" i
	shift 3
	for ((i = 0; i < k; i++)); do
		$setup
		t0=$(now)
		"$@"
		t1=$(now)
		b=$(awk -v a="$t0" -v c="$t1" -v b="$b" 'BEGIN {d = c - a; printf "%.3f", (b == "" || d < b) ? d : b}')
	done
	RESULTS+=("$name|$b")
	echo "  $name: $([ "$k" = 1 ] || echo "best of $k, ")$b s" >&2
}
run() { best "$1" 1 : "${@:2}"; }
read_all() { find "$IMG" -type f -print0 | xargs -0 cat >/dev/null; }
read_par() { find "$IMG" -type f -print0 | xargs -0 -P 32 -n 64 cat >/dev/null; }
drop_caches() { sync && echo 3 2>/dev/null >/proc/sys/vm/drop_caches; }

echo "read limit ..." >&2
read_all # warm the cache
best "read, warm cache (find, xargs cat)" 3 : read_all
COLD="cold: not measurable here"
if drop_caches; then
	run "read, cold cache (find, xargs cat)" read_all
	drop_caches
	run "read, cold cache (find, xargs -P 32 cat)" read_par
	COLD=""
	read_all
else
	COLD="$COLD (cannot write /proc/sys/vm/drop_caches: $(touch /proc/sys/vm/drop_caches 2>&1 | sed 's/.*: //'))"
fi

pack_packer() { rm -rf "$1"; sync; run "$2" "$packer" pack images --restart none "$IMG" "$1"; }
pack_tiled() { rm -rf "$1"; sync; run "$2" "$packer" pack images "$IMG" "$1"; }
pack_python() { rm -rf "$1" "$1-lock"; sync; run "$2" "$py" "$src/tests/bench/folder2lmdb.py" "$IMG" "$1"; }
echo "packing to $OUT ..." >&2
pack_packer "$OUT/packer-ds" "packer pack images -> disk"
pack_python "$OUT/python.lmdb" "python folder2lmdb -> disk"
rm -rf "$OUT/packer-ds" "$OUT/python.lmdb" "$OUT/python.lmdb-lock"
SHM=0
if [ -d /dev/shm ] && [ "$(df -k --output=avail /dev/shm | tail -1)" -gt $((BYTES * 3 / 1024)) ]; then
	SHM=1
	echo "packing to /dev/shm ..." >&2
	shm_clean() { rm -rf /dev/shm/feeder-bench-packer; sync; }
	best "packer pack images -> tmpfs" 3 shm_clean "$packer" pack images --restart none "$IMG" /dev/shm/feeder-bench-packer
	rm -rf /dev/shm/feeder-bench-packer
	pack_tiled /dev/shm/feeder-bench-packer "packer pack images, tiled (default) -> tmpfs"
	TILED_BYTES=$(du -sb /dev/shm/feeder-bench-packer/data.mdb | cut -f1)
	rm -rf /dev/shm/feeder-bench-packer
	pack_python /dev/shm/feeder-bench-python.lmdb "python folder2lmdb -> tmpfs"
	rm -rf /dev/shm/feeder-bench-python.lmdb /dev/shm/feeder-bench-python.lmdb-lock
	if [ -z "$COLD" ]; then
		echo "packing from a cold cache to /dev/shm ..." >&2
		drop_caches
		pack_packer /dev/shm/feeder-bench-packer "packer pack images, cold cache -> tmpfs"
		rm -rf /dev/shm/feeder-bench-packer
		drop_caches
		pack_python /dev/shm/feeder-bench-python.lmdb "python folder2lmdb, cold cache -> tmpfs"
		rm -rf /dev/shm/feeder-bench-python.lmdb /dev/shm/feeder-bench-python.lmdb-lock
	fi
fi

secs() { for r in "${RESULTS[@]}"; do [ "${r%%|*}" = "$1" ] && echo "${r#*|}"; done; }
echo
echo "### packer pack images: $FILES files, $(awk -v b="$BYTES" 'BEGIN {printf "%.1f MB", b / 1e6}') ($(nproc) CPUs, $(uname -r))"
echo
echo "| what | seconds | files/s | MB/s |"
echo "|---|---:|---:|---:|"
for r in "${RESULTS[@]}"; do
	s=${r#*|}
	awk -v n="${r%%|*}" -v s="$s" -v f="$FILES" -v b="$BYTES" \
		'BEGIN {printf "| %s | %.2f | %.0f | %.1f |\n", n, s, f / s, b / s / 1e6}'
done
[ -n "$COLD" ] && echo "| read, cold cache | $COLD | | |"
echo
ratio() { awk -v a="$(secs "$2")" -v b="$(secs "$1")" 'BEGIN {printf "%.2f", a / b}'; }
echo "- packer / python (disk): $(ratio "packer pack images -> disk" "python folder2lmdb -> disk")x"
[ $SHM = 1 ] && echo "- packer / python (tmpfs): $(ratio "packer pack images -> tmpfs" "python folder2lmdb -> tmpfs")x"
[ $SHM = 1 ] && [ -z "$COLD" ] && echo "- packer / python (cold cache, tmpfs): $(ratio "packer pack images, cold cache -> tmpfs" "python folder2lmdb, cold cache -> tmpfs")x"
echo "- packer / warm read limit (disk): $(ratio "packer pack images -> disk" "read, warm cache (find, xargs cat)")"
[ $SHM = 1 ] && echo "- packer / warm read limit (tmpfs): $(ratio "packer pack images -> tmpfs" "read, warm cache (find, xargs cat)")"
[ $SHM = 1 ] && echo "- tiled packing / plain packing (tmpfs): $(ratio "packer pack images, tiled (default) -> tmpfs" "packer pack images -> tmpfs") (transcoding on $(nproc) threads); tiled data.mdb $TILED_BYTES bytes for $BYTES bytes of files"
exit 0
