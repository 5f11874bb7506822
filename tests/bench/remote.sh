#!/bin/bash
# remote.sh — benchmark (not a test) of feederd serving a dataset from object
# storage against the same dataset served locally, by the same daemon, in the
# same run; and of the choice behind the shard cache, fetching each shard
# whole rather than each sample by a Range GET. The S3 server is moto on
# 127.0.0.1 (tests/lib/s3_server.sh), on the same cores as the daemon.
# The issue's bars: the warm cache within 5 % of the local dataset's
# images/s, a cold epoch (an empty cache) at >= 90 % of it.
#
# usage: tests/bench/remote.sh [REPEAT] [SHARD] [ROUNDS]
#   The photos of /tmp/real/src (Debian's wallpapers; else 220 generated
#   images, said in the output) resized once by packer (--resize-shorter
#   256) and packed tiled REPEAT times over (default 48): one data.mdb served
#   as "local", and the same records resharded (--shard-size SHARD, default
#   16M, packer's default shuffled order) and pushed, served as "remote".
#   ROUNDS rounds (default 3), each: a daemon with a new empty cache dir (the
#   whole dataset fits its limit) streams one epoch of local, one of remote
#   (cold: every shard fetched during it) and one more of remote (warm:
#   every shard a hit); then a daemon whose cache holds three blocks of the
#   default --shuffle-block 8 (24 shards: the block read now and 2 ahead,
#   what a stream wants) streams two epochs of remote (bounded: every shard
#   fetched again in every epoch), and one whose cache holds 3 shards with
#   --shuffle-block 1. Then the same daemon pinned to all cores but the
#   last, with one worker fewer, and moto and feeder-bench pinned to the
#   last core: one epoch local and one cold, the store's CPU kept off the
#   decode's cores as it is when the store is another machine. Then every
#   shard fetched by curl into /dev/null, 4 at once: the CPU that receiving
#   an epoch's bytes takes at the least (curl's and moto's), from which the
#   ceiling of the cold ratio on shared cores follows.
#   Local runs first in odd rounds, last in even ones. "vs local" is the
#   median of the rounds' ratios (each remote run against its round's local). feeder-bench takes batches of 32 of RandomResizedCrop 224
#   to f16, as the real-photograph benchmark of BENCHMARKS.md does; 2
#   workers (all cores). The table gives the median of the rounds.
#   Then one shard fetched whole against the same bytes in Range GETs of the
#   mean record's size, one after another and 4 at once: by curl (C, one
#   connection kept alive, as feederd's libcurl client) and by boto3.
# Environment: FEEDER_BUILD (default <source>/build), FEEDER_PHOTOS (default
# /tmp/real/src).
set -eu
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
REPEAT=${1:-48} SHARD=${2:-16M} ROUNDS=${3:-3}
PHOTOS=${FEEDER_PHOTOS:-/tmp/real/src}
BATCH=32 PAR=4
bench=$build/tools/feeder-bench
need_exe "$feederd" "$feederctl" "$packer" "$bench" "$s3_tool_exe"
need_python lmdb numpy
threads=$(nproc)
workers=$threads

# The sources, resized once by packer and written back out as JPEGs: the
# REPEAT copies then pack by lossless tiling alone.
if find "$PHOTOS" -name '*.jpg' 2>/dev/null | grep -q .; then
	origin="$(find "$PHOTOS" -name '*.jpg' | wc -l) photos of $PHOTOS"
	srcdir=$PHOTOS
else
	origin="220 generated images (tools/gen/gen-images: no photos in $PHOTOS)"
	gen_images "$tmp/gen" 220 5 1
	srcdir=$tmp/gen
fi
echo "resizing $origin ..." >&2
"$packer" pack images --threads "$threads" --resize-shorter 256 --restart none "$srcdir" "$tmp/base" \
	>/dev/null 2>"$tmp/pack-base.log" || fail "packer pack --resize-shorter: $(tail -n 2 "$tmp/pack-base.log")"
"$py" "$src/tests/bench/remote_bench.py" dump "$tmp/base" "$tmp/small" || fail "cannot write the resized photos"
(cd "$tmp/small" && find . -name '*.jpg' | sort) |
	awk -v r="$REPEAT" '{ split($0, p, "/"); l[NR] = substr($0, 3) "\t" p[2] }
	     END { for (k = 0; k < r; k++) for (i = 1; i <= NR; i++) print l[i] }' >"$tmp/repeat.tsv"
echo "packing $(wc -l <"$tmp/repeat.tsv") samples ..." >&2
pack_images local "$tmp/small" --list "$tmp/repeat.tsv"
"$packer" reshard "$datasets/local" "$tmp/shards" --shard-size "$SHARD" >/dev/null 2>"$tmp/reshard.log" \
	|| fail "packer reshard: $(tail -n 2 "$tmp/reshard.log")"
samples=$("$packer" inspect "$datasets/local" | awk '$1 == "samples:" { print $2 }')
mean=$("$packer" inspect "$datasets/local" | sed -n 's/.* mean \([0-9.]*\),.*/\1/p')
shards=$(awk '$1 == "shards" { print $2 }' "$tmp/shards/feeder.manifest")
shard_max=$(awk '$1 == "shard" && $5 > m { m = $5 } END { print m }' "$tmp/shards/feeder.manifest")
shard_bytes=$(awk '$1 == "shard" { s += $5 } END { print s }' "$tmp/shards/feeder.manifest")
[ "$shards" -ge 48 ] || fail "only $shards shards: give a smaller SHARD (the bounded runs want 24 to be a half or less)"
sync
cat "$datasets/local/data.mdb" >/dev/null

s3_start
s3_py mb bkt >/dev/null || fail "cannot create the bucket"
"$packer" push "$tmp/shards" s3://bkt/ds >/dev/null 2>"$tmp/push.log" || fail "packer push: $(tail -n 2 "$tmp/push.log")"
# Whatever moto spilled to its temporary files written back now, not
# during the first epoch.
sync

# One epoch of batches, the last partial batch left out.
epoch=$((samples / BATCH))
full_limit=$((shard_bytes * 2))
small_limit=$((shard_max * 3 * 8))
small1_limit=$((shard_max * 3))
cache_n=0
serve_workers=$workers
# serve LIMIT [FLAGS...]: a daemon (serve_workers workers) serving local and
# remote, its cache a new empty dir.
serve() {
	cache_n=$((cache_n + 1))
	start_daemon --workers "$serve_workers" --log-level warning --remote remote=s3://bkt/ds \
		--cache-dir "$tmp/cache-$cache_n" --cache-limit "$@" || fail "$daemon_why"
	wait_served remote "$samples"
}
# unserve: stop it and remove its cache, whose page cache the next run's
# cache then reuses (on this VM, memory the guest has not touched before
# costs a host fault a page; see BENCHMARKS.md).
unserve() {
	stop_daemon 10 || fail "$daemon_why"
	rm -rf "$tmp/cache-$cache_n"
}
# cache_json: the daemon's cache object
cache_json() {
	"$feederctl" --socket "$sock" --timeout 5000 status --json \
		| "$py" -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["cache"]))'
}
# stream NAME BATCHES ROW: feeder-bench's JSON, with the cache's counters
# before and after, appended to $tmp/runs.jsonl as row ROW.
# cpu_s PID: the CPU seconds PID has used so far (user + system).
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}
stream() {
	local c0 c1 fb m0 m1
	c0=$(cache_json)
	m0=$(cpu_s "$s3_pid")
	fb=$("${bench_wrap[@]}" "$bench" --socket "$sock" --dataset "$1" --datasets "$tmp/no-ceiling" --batch "$BATCH" \
		--size 224 --dtype f16 --batches "$2" --json 2>"$tmp/bench.err") \
		|| fail "feeder-bench $1: $(cat "$tmp/bench.err")"
	m1=$(cpu_s "$s3_pid")
	c1=$(cache_json)
	echo "{\"row\": \"$3\", \"round\": $round, \"bench\": $fb, \"c0\": $c0, \"c1\": $c1, \"store_cpu\": $(awk -v a="$m0" -v b="$m1" 'BEGIN { print b - a }')}" >>"$tmp/runs.jsonl"
	"$py" -c 'import json, sys
r = json.loads(sys.argv[1])
b, c0, c1 = r["bench"], r["c0"], r["c1"]
d = {k: c1[k] - c0[k] for k in ("hits", "misses", "fetches", "fetched_bytes", "wait_seconds")}
print("  round %d %s: %.0f images/s, start-up %.2f s, %d fetches (%.0f MB), %d hits, %d misses, "
      "wait %.2f s, cache peak %.0f MB, the S3 server used %.2f CPU s" % (r["round"], r["row"],
      b["images_per_s"], b["startup_s"], d["fetches"], d["fetched_bytes"] / 1e6, d["hits"],
      d["misses"], d["wait_seconds"], c1["peak_bytes"] / 1e6, r["store_cpu"]))' \
		"$(tail -n 1 "$tmp/runs.jsonl")" >&2
}

# The store on a core of its own: moto (every thread) and feeder-bench on
# the last core, feederd on the others.
last=$((threads - 1))
bench_wrap=()
own_core() {
	taskset -a -p -c "$1" "$s3_pid" >/dev/null || fail "taskset cannot pin moto"
}
# The least an epoch's bytes cost to bring in, row "floor": every shard
# whole by curl into /dev/null, 4 at once (curl's and moto's CPU seconds),
# and as many bytes written into a new file beside the caches (dd's).
awk -v url="$AWS_ENDPOINT_URL/bkt/ds" -v user="$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -v region="$AWS_REGION" \
	'$1 == "shard" { if (n++) print "next"
		printf "url = \"%s/%s\"\noutput = \"/dev/null\"\nuser = \"%s\"\naws-sigv4 = \"aws:amz:%s:s3\"\nfail\n", url, $2, user, region }' \
	"$tmp/shards/feeder.manifest" >"$tmp/all.cfg"
# child_cpu CMD...: the CPU seconds CMD used, user + system.
child_cpu() {
	"$py" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)' "$@"
}
floor() {
	local m0 m1 recv write w
	m0=$(cpu_s "$s3_pid")
	recv=$(child_cpu curl -s -Z --parallel-max "$PAR" -K "$tmp/all.cfg") || fail "curl cannot GET every shard"
	m1=$(cpu_s "$s3_pid")
	# Twice, the cheaper kept: the first may land in memory this VM's
	# guest has not touched yet (a host fault a page), the second reuses
	# the first's.
	write=
	for _ in 1 2; do
		w=$(child_cpu dd if=/dev/zero of="$tmp/floor.bin" bs=512K count=$(((shard_bytes + 524287) / 524288)) status=none) \
			|| fail "dd cannot write $tmp/floor.bin"
		rm -f "$tmp/floor.bin"
		write=$(awk -v a="${write:-$w}" -v b="$w" 'BEGIN { print (b < a ? b : a) }')
	done
	echo "{\"row\": \"floor\", \"round\": $round, \"recv_cpu\": $recv, \"write_cpu\": $write, \"store_cpu\": $(awk -v a="$m0" -v b="$m1" 'BEGIN { print b - a }')}" >>"$tmp/runs.jsonl"
	echo "  round $round floor: every shard by curl used $recv CPU s, the S3 server $(awk -v a="$m0" -v b="$m1" 'BEGIN { print b - a }'); writing as many bytes, $write" >&2
}

echo "$samples samples ($shards shards of <= $((shard_max >> 20)) MiB, $((shard_bytes >> 20)) MiB), $epoch batches of $BATCH an epoch, $ROUNDS rounds ..." >&2
: >"$tmp/runs.jsonl"
load=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
	serve "$full_limit"
	# local before the remote runs in odd rounds, after them in even ones:
	# a load that changes during a round (a shared machine) biases neither.
	[ $((round % 2)) = 0 ] || stream local "$epoch" local
	stream remote "$epoch" cold
	stream remote "$epoch" warm
	[ $((round % 2)) = 1 ] || stream local "$epoch" local
	unserve
	serve "$small_limit"
	stream remote $((epoch * 2)) bounded
	unserve
	serve "$small1_limit" --shuffle-block 1
	stream remote $((epoch * 2)) bounded1
	unserve
	if [ "$threads" -ge 2 ]; then
		own_core "$last"
		daemon_wrap=(taskset -c "0-$((last - 1))") bench_wrap=(taskset -c "$last") serve_workers=$last
		serve "$full_limit"
		[ $((round % 2)) = 0 ] || stream local "$epoch" own_local
		stream remote "$epoch" own_cold
		[ $((round % 2)) = 1 ] || stream local "$epoch" own_local
		unserve
		daemon_wrap=() bench_wrap=() serve_workers=$workers
		own_core "0-$last"
	fi
	floor
done

# Whole shard against Range GETs of its records' mean size, on the same
# moto: the largest shard's object.
key=ds/$(awk -v m="$shard_max" '$1 == "shard" && $5 == m { print $2; exit }' "$tmp/shards/feeder.manifest")
record=${mean%.*}
url=$AWS_ENDPOINT_URL/bkt/$key
echo "whole $key ($shard_max bytes) against Range GETs of $record bytes ..." >&2
# curl_cfg [RANGES]: a curl config of one GET of the whole object, or of one
# GET per span of RECORD bytes; every block signs its own (--next resets).
curl_cfg() {
	awk -v size="$shard_max" -v rec="$1" -v url="$url" -v user="$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-v region="$AWS_REGION" 'function block(r) {
			if (n++) print "next"
			printf "url = \"%s\"\noutput = \"/dev/null\"\nuser = \"%s\"\naws-sigv4 = \"aws:amz:%s:s3\"\nfail\n", url, user, region
			if (r != "") printf "range = \"%s\"\n", r
		}
		BEGIN { if (rec == 0) block(""); else for (o = 0; o < size; o += rec) block(o "-" (o + rec < size ? o + rec : size) - 1) }'
}
curl_cfg 0 >"$tmp/whole.cfg"
curl_cfg "$record" >"$tmp/ranges.cfg"
requests=$(grep -c '^url' "$tmp/ranges.cfg")
now() { date +%s.%N; }
# median3 CMD...: the median seconds of 3 runs of CMD.
median3() {
	local i t0 ts=()
	for i in 1 2 3; do
		t0=$(now)
		"$@" >/dev/null 2>"$tmp/get.err" || fail "$*: $(tail -n 2 "$tmp/get.err")"
		ts+=("$(awk -v a="$t0" -v b="$(now)" 'BEGIN {print b - a}')")
	done
	printf '%s\n' "${ts[@]}" | sort -g | sed -n 2p
}
curl -s -K "$tmp/whole.cfg" || fail "curl cannot GET $url"
t_tool=$(median3 s3_tool get bkt "$key" "$tmp/got")
cmp -s "$tmp/got" "$tmp/shards/${key#ds/}" || fail "s3_tool get brought other bytes"
t_cwhole=$(median3 curl -s -K "$tmp/whole.cfg")
t_cseq=$(median3 curl -s -K "$tmp/ranges.cfg")
t_cpar=$(median3 curl -s -Z --parallel-max "$PAR" -K "$tmp/ranges.cfg")
boto=$("$s3_venv/bin/python" "$src/tests/bench/remote_bench.py" ranges bkt "$key" "$record" "$PAR" 3) \
	|| fail "remote_bench.py ranges"

"$py" - "$tmp/runs.jsonl" "$origin" "$REPEAT" "$samples" "$shards" "$shard_bytes" "$shard_max" "$mean" \
	"$workers" "$ROUNDS" "$full_limit" "$small_limit" "$epoch" "$load" "$PAR" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
origin, repeat, samples, shards, sbytes, smax, mean, workers, rounds, full, small, epoch, load, par = sys.argv[2:]
workers = int(workers)
print(f"\n### feederd: local data.mdb vs remote (moto on 127.0.0.1), {samples} samples "
      f"({origin}, --resize-shorter 256, x{repeat}), mean {float(mean) / 1e3:.1f} kB; "
      f"{shards} shards, {int(sbytes) / 1e6:.1f} MB; batch 32, RandomResizedCrop 224, f16; "
      f"{workers} workers; median of {rounds} rounds; load average before: {load}\n")
print("| run | images/s | vs local | fetch wait share | S3 server's CPU share | fetched MB | hits / misses | start-up s | rounds, images/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
rows = {}
for r in runs:
    rows.setdefault(r["row"], []).append(r)
floors = rows.pop("floor")
label = {"local": "local (one data.mdb)",
         "cold": f"remote, cold (empty cache, limit {int(full) / 1e6:.0f} MB), 1 epoch",
         "warm": "remote, warm (every shard cached), 1 epoch",
         "bounded": f"remote, cache limit {int(small) / 1e6:.0f} MB (3 blocks of 8 shards), 2 epochs",
         "bounded1": f"remote, cache limit {int(small) / 8e6:.0f} MB (3 shards), --shuffle-block 1, 2 epochs",
         "own_local": f"local, the S3 server and feeder-bench on a core of their own ({workers - 1} workers on the others)",
         "own_cold": "remote, cold, the S3 server and feeder-bench on a core of their own"}
# Each run against the local run of its round on the same cores.
base = {"own_local": "own_local", "own_cold": "own_local"}
local = {k: {x["round"]: x["bench"]["images_per_s"] for x in rows.get(k, [])}
         for k in ("local", "own_local")}
ratio = {k: statistics.median(x["bench"]["images_per_s"] / local[base.get(k, "local")][x["round"]]
                              for x in v)
         for k, v in rows.items()}
med = {k: statistics.median(x["bench"]["images_per_s"] for x in v) for k, v in rows.items()}
server = {}
for k in ("local", "cold", "warm", "bounded", "bounded1", "own_local", "own_cold"):
    v = rows.get(k, [])
    if not v:
        continue
    share, mb, hits, misses, st, cpu = [], [], [], [], [], []
    w = workers - 1 if k.startswith("own_") else workers
    for x in v:
        b, c0, c1 = x["bench"], x["c0"], x["c1"]
        share.append((c1["wait_seconds"] - c0["wait_seconds"]) / (w * b["seconds"]))
        cpu.append(x["store_cpu"] / (workers * b["seconds"]))
        mb.append((c1["fetched_bytes"] - c0["fetched_bytes"]) / 1e6)
        hits.append(c1["hits"] - c0["hits"])
        misses.append(c1["misses"] - c0["misses"])
        st.append(b["startup_s"])
    each = ", ".join(f"{x['bench']['images_per_s']:.0f}" for x in v)
    server[k] = statistics.median(cpu)
    print(f"| {label[k]} | {med[k]:.0f} | {ratio[k]:.3f} | "
          f"{statistics.median(share) * 100:.1f} % | {server[k] * 100:.1f} % | "
          f"{statistics.median(mb):.0f} | "
          f"{statistics.median(hits):.0f} / {statistics.median(misses):.0f} | "
          f"{statistics.median(st):.2f} | {each} |")
print()
print(f"- warm / local: {ratio['warm']:.3f} (target >= 0.95); "
      f"cold / local: {ratio['cold']:.3f} (target >= 0.90): medians of the rounds' ratios; "
      f"of the medians: {med['warm'] / med['local']:.3f} and {med['cold'] / med['local']:.3f}")
print(f"- the S3 server (moto, Python) runs on the same {workers} cores as the decode: "
      f"cold / local with its CPU share taken out, {ratio['cold']:.3f} / (1 - "
      f"{server['cold']:.3f}) = {ratio['cold'] / (1 - server['cold']):.3f}")
# The ceiling on shared cores: the local epoch's seconds, plus the least
# CPU that bringing its bytes in takes (the server's during the cold epoch,
# a receiver that keeps nothing: curl into /dev/null, and writing as many
# bytes into a file) spread over the cores.
floor = {x["round"]: x for x in floors}
cold = {x["round"]: x for x in rows["cold"]}
lsec = {x["round"]: x["bench"]["seconds"] for x in rows["local"]}
least = {r: cold[r]["store_cpu"] + floor[r]["recv_cpu"] + floor[r]["write_cpu"] for r in cold}
ceil = statistics.median(lsec[r] / (lsec[r] + least[r] / workers) for r in cold)
med_f = {k: statistics.median(f[k] for f in floors) for k in ("recv_cpu", "write_cpu", "store_cpu")}
print(f"- the least that bringing the epoch's {int(sbytes) / 1e6:.0f} MB in costs: receiving it "
      f"(curl into /dev/null, {par} at once) {med_f['recv_cpu']:.2f} CPU s, the S3 server "
      f"{med_f['store_cpu']:.2f}, writing it into a new file {med_f['write_cpu']:.2f}; on {workers} "
      f"shared cores a cold epoch can reach at most {ceil:.3f} of local, and reached "
      f"{ratio['cold'] / ceil:.3f} of that")
if "own_cold" in ratio:
    print(f"- with the S3 server on a core of its own, as on a machine of its own: cold / local "
          f"{ratio['own_cold']:.3f} (target >= 0.90), both on {workers - 1} of the {workers} cores")
need = med["local"] * float(mean) / 1e6
print(f"- the decode consumes {need:.1f} MB/s of records at the local rate; fetch wait share = "
      "the cache's wait_seconds / (workers x the run's seconds)")
PY
"$py" - "$boto" "$shard_max" "$record" "$requests" "$t_tool" "$t_cwhole" "$t_cseq" "$t_cpar" "$PAR" "$key" <<'PY'
import json, sys
boto = json.loads(sys.argv[1])
size, record, requests = (int(a) for a in sys.argv[2:5])
t_tool, t_cwhole, t_cseq, t_cpar = (float(a) for a in sys.argv[5:9])
par, key = sys.argv[9], sys.argv[10]
print(f"\n### one shard ({key}, {size / 1e6:.1f} MB) whole vs {requests} Range GETs of {record} bytes "
      f"(the mean record), moto on 127.0.0.1, median of 3\n")
print("| how | requests | seconds | MB/s | requests/s |")
print("|---|---:|---:|---:|---:|")
def row(name, n, s):
    print(f"| {name} | {n} | {s:.3f} | {size / s / 1e6:.1f} | {n / s:.0f} |")
row("s3_tool get (feederd's C client, whole process)", 1, t_tool)
row("curl, whole object (whole process)", 1, t_cwhole)
row("curl, Range GETs one after another (one connection)", requests, t_cseq)
row(f"curl, Range GETs {par} at once", requests, t_cpar)
row("boto3, whole object", 1, boto["whole"]["seconds"])
row("boto3, Range GETs one after another", requests, boto["ranges_sequential"]["seconds"])
row(f"boto3, Range GETs {par} at once", requests, boto[f"ranges_parallel_{par}"]["seconds"])
print(f"\n- whole / ranges, curl: {t_cseq / t_cwhole:.0f}x faster than one after another, "
      f"{t_cpar / t_cwhole:.0f}x than {par} at once")
PY
exit 0
