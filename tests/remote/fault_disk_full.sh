#!/bin/bash
# fault_disk_full.sh — the shard cache on a tmpfs smaller than
# --cache-limit: writes into it fail with ENOSPC before the cache thinks it
# is full. The cache must evict to make room (or fail the stream with a
# clear sentence): an epoch is read, everything delivered is right (labels
# and pixels of the local copy; never a sample of a partly written shard),
# and no temporary file is left in the cache folder after feederd stops.
# Skips where tmpfs cannot be mounted (not root, no CAP_SYS_ADMIN).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
cache=$tmp/cache-tmpfs
mkdir "$cache"
mount -t tmpfs -o size=640k feeder-cache-test "$cache" 2>"$tmp/mount.err" \
	|| skip "cannot mount a tmpfs for the cache: $(cat "$tmp/mount.err")"
at_exit "umount -l '$cache'"
remote_dataset 48 150K --resize-shorter 256
total=$(awk '$1 == "shard" { s += $5 } END { print s }' "$tmp/shards/feeder.manifest")
[ "$total" -gt $((640 * 1024)) ] || fail "the shards ($total bytes) fit in the 640 KiB tmpfs"
[ "$shard_max" -lt $((640 * 1024 / 2)) ] || fail "the largest shard ($shard_max bytes) is too large for the test"
start_remote --cache-dir "$cache" --cache-limit 64M --fetchers 2 --shuffle-block 1
reference
fault_client "$tmp/epoch.log" remote
end=$(client_end "$tmp/epoch.log")
check_epoch "$tmp/epoch.log"
case $end in
"ok 48 0")
	check_epoch "$tmp/epoch.log" --all
	what="the epoch completed (the cache evicted)"
	;;
error*)
	[[ $end == *"$cache"* || $end == *"space"* ]] \
		|| fail "the stream failed without saying the cache is out of room: $end"
	what="the stream failed after $(grep -c '^S ' "$tmp/epoch.log") right samples: ${end#error }"
	;;
*) fail "the remote epoch on a full disk ended: $end" ;;
esac
fetches=$(cache_stat fetches)
daemon_alive
stop_daemon || fail "$daemon_why"
left=$(find "$cache" -name '.tmp-*')
[ -z "$left" ] || fail "temporary files left in the cache: $left"
# What is left under a shard's name is that whole shard.
for f in "$cache"/*-shard-*.mdb; do
	[ -e "$f" ] || continue
	want=$(awk -v k="${f##*-shard-}" '$1 == "shard" && $2 == "shard-" k { print $5 }' "$tmp/shards/feeder.manifest")
	[ "$(stat -c %s "$f")" = "$want" ] || fail "$f holds $(stat -c %s "$f") bytes, the shard $want"
done
echo "ok: disk_full: $((total / 1024)) KiB of shards, a 640 KiB tmpfs, --cache-limit 64M: $what;" \
	"$fetches fetches; no temporary file left; feederd exited 0"
