#!/usr/bin/env bash
# cache_limit.sh — a remote dataset of 8 shards through a cache of room for
# 2 (--cache-limit 2 x the largest shard, --shuffle-block 1): two full
# epochs through feeder.Loader, each index once per epoch with the local
# dataset's label and pixels for it, while the cache evicts and fetches
# again; and the cache never held more than its limit, both by its own
# account (peak_bytes of feederctl status --json) and on disk: its folder,
# sampled every 20 ms through the run, never held more bytes than the limit
# (the shards being fetched, in their .tmp- files, included: their room is
# reserved before the fetch). Prints both peaks.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"

# 400 photos at a shorter side of 128: 8 shards of ~600 KB (the smallest
# cache_limit is 1 MiB).
remote_dataset 400 450K --resize-shorter 128
[ "$remote_shards" = 8 ] || fail "$remote_shards shards, wanted 8"
limit=$((2 * shard_max))
start_remote --shuffle-block 1 --cache-limit "$limit"

# The folder's bytes, each file once (a file being renamed may be listed
# under both names), the highest seen in $tmp/du-peak.
cache_bytes() {
	find "$tmp/cache" -type f -printf '%i %s\n' 2>/dev/null | sort -u |
		awk '{ s += $2 } END { print s + 0 }'
}
sampler() {
	local peak=0 b
	while :; do
		b=$(cache_bytes)
		if [ "$b" -gt "$peak" ]; then
			peak=$b
			echo "$peak" >"$tmp/du-peak.new" && mv "$tmp/du-peak.new" "$tmp/du-peak"
		fi
		sleep 0.02
	done
}
echo 0 >"$tmp/du-peak"
sampler &
bg_pids+=($!)

remote_client epochs "$sock" remote 2 --like local || fail "remote_client epochs"
daemon_alive
read -r du_peak <"$tmp/du-peak"
"$py" - "$tmp/status.json" "$limit" "$du_peak" "$remote_shards" <<'PY' || fail "the cache's bounds"
import json, sys
c = json.load(open(sys.argv[1]))["cache"]
limit, du_peak, shards = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print("cache limit %d bytes: peak_bytes %d (feederctl), peak on disk %d (sampled); "
      "%d fetches of %d shards, %d hits, %d misses, %.2f s waited"
      % (limit, c["peak_bytes"], du_peak, c["fetches"], shards, c["hits"], c["misses"],
         c["wait_seconds"]))
ok = True
if c["limit"] != limit:
    print("FAIL: feederctl says the limit is %d" % c["limit"]); ok = False
if not 0 < c["peak_bytes"] <= limit:
    print("FAIL: peak_bytes %d exceeds the limit %d" % (c["peak_bytes"], limit)); ok = False
if not 0 < du_peak <= limit:
    print("FAIL: the cache folder held %d bytes, limit %d" % (du_peak, limit)); ok = False
# Two epochs of 8 shards through room for 2: shards were fetched again.
if c["fetches"] <= shards:
    print("FAIL: %d fetches: the limit never forced a shard out" % c["fetches"]); ok = False
if c["failures"]:
    print("FAIL: %d failed fetches" % c["failures"]); ok = False
sys.exit(0 if ok else 1)
PY
stop_daemon || fail "$daemon_why"
echo "PASS: two epochs through a cache of 2 shards' room, never above it"
