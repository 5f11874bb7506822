#!/usr/bin/env bash
# shard_cache.sh — the shard cache (daemon/shard_cache.h) against a real S3
# server (moto on 127.0.0.1, checking every signature), through
# shard_cache_test: a sharded dataset pushed with packer push is read
# through a cache that holds two shards of its >= 6, every shard compared
# byte for byte and record by record with the local files, the folder's
# bytes never over the limit; a restarted cache adopts its files (no
# fetch; a stale temporary file is removed, a foreign file left alone, a
# damaged cached file fetched again); an object replaced by other bytes of
# the same size is FEEDER_ECORRUPT after exactly one refetch; a missing
# object's error names it.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
tool=$build/tests/store/shard_cache_test
need_exe "$tool" "$packer" "$s3_tool_exe"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"

make_images ds 48 3 5 --resize-shorter 64 --shard-size 24K
ds=$datasets/ds
n=$(sed -n 's/^shards //p' "$ds/feeder.manifest")
[ "$n" -ge 6 ] || fail "only $n shards"
"$packer" push "$ds" s3://bkt/ds >/dev/null 2>"$tmp/err" || fail "push: $(cat "$tmp/err")"
max=$(awk '$1 == "shard" && $5 > m { m = $5 } END { print m }' "$ds/feeder.manifest")
total=$(awk '$1 == "shard" { t += $5 } END { print t }' "$ds/feeder.manifest")
limit=$((2 * max))
size_of() { awk -v i="$1" '$1 == "shard" && k++ == i { print $5 }' "$ds/feeder.manifest"; }
name_of() { awk -v i="$1" '$1 == "shard" && k++ == i { print $2 }' "$ds/feeder.manifest"; }

# val NAME FILE: the value of line "NAME value" in FILE.
val() { sed -n "s/^$1 //p" "$2"; }
# run OUT ARGS...: shard_cache_test with the cache in $cache.
run() {
	local out=$1
	shift
	"$tool" "$cache" "$limit" bkt ds "$ds" "$@" >"$out" 2>"$tmp/err"
}
files_bytes() { find "$1" -type f -printf '%s\n' | awk '{ t += $1 } END { print t + 0 }'; }

# Every shard, in an order that is not the files' (odd ones, then even).
order=$(echo $(seq 1 2 $((n - 1))) $(seq 0 2 $((n - 1))))
cache=$tmp/cache
run "$tmp/r1" read $order || fail "read: $(cat "$tmp/err" "$tmp/r1")"
[ "$(val ok "$tmp/r1")" = "$n" ] || fail "not $n shards read equal: $(cat "$tmp/r1")"
[ "$(val peak_bytes "$tmp/r1")" -le "$limit" ] || fail "peak_bytes over $limit: $(cat "$tmp/r1")"
[ "$(val dir_peak "$tmp/r1")" -le "$limit" ] || fail "the folder held more than $limit bytes: $(cat "$tmp/r1")"
[ "$(files_bytes "$cache")" -le "$limit" ] || fail "the folder holds more than $limit bytes"
[ "$(val fetches "$tmp/r1")" -ge "$n" ] || fail "fewer than $n fetches: $(cat "$tmp/r1")"
[ "$(val fetched_bytes "$tmp/r1")" -ge "$total" ] || fail "fetched_bytes: $(cat "$tmp/r1")"
[ "$(val evictions "$tmp/r1")" -ge $((n - 3)) ] || fail "evictions: $(cat "$tmp/r1")"
[ $(($(val hits "$tmp/r1") + $(val misses "$tmp/r1"))) = "$n" ] || fail "hits + misses: $(cat "$tmp/r1")"
[ "$(val waited "$tmp/r1")" = yes ] || fail "the waits are not counted: $(cat "$tmp/r1")"
[ "$(val refetches "$tmp/r1")" = 0 ] && [ "$(val failures "$tmp/r1")" = 0 ] \
	|| fail "refetches or failures: $(cat "$tmp/r1")"
[ "$(stat -c %a "$cache")" = 700 ] || fail "the cache folder is not 0700"
compgen -G "$cache/.tmp-*" >/dev/null && fail "temporary files left: $(ls -a "$cache")"
last=${order##* }
last_name=$(name_of "$last")
ls "$cache" | grep -Eq "^[0-9a-f]{16}-$last_name\$" || fail "no cached $last_name: $(ls "$cache")"

# Restart: the last shard read is still there and is adopted (checked,
# not fetched), the first read again after it is a hit. A stale temporary
# file goes; a foreign file stays; a file of the cache's pattern that the
# set does not name is removed first when room is needed.
: >"$cache/.tmp-0123456789abcdef-$last_name-deadbeef"
echo notes >"$cache/notes.txt"
head -c 1000 /dev/urandom >"$cache/0123456789abcdef-other.mdb"
first=${order%% *}
run "$tmp/r2" get "$last" "$last" "$first" || fail "restart: $(cat "$tmp/err" "$tmp/r2")"
[ "$(val ok "$tmp/r2")" = 3 ] || fail "restart: $(cat "$tmp/r2")"
[ "$(val fetches "$tmp/r2")" = 1 ] && [ "$(val fetched_bytes "$tmp/r2")" = "$(size_of "$first")" ] \
	|| fail "restart: more fetched than shard $first: $(cat "$tmp/r2")"
[ "$(val hits "$tmp/r2")" = 1 ] || fail "restart: the second read is not a hit: $(cat "$tmp/r2")"
[ $(($(files_bytes "$cache") - 6)) -le "$limit" ] || fail "restart: the folder is over the limit: $(ls -l "$cache")"
[ -e "$cache/.tmp-0123456789abcdef-$last_name-deadbeef" ] && fail "the stale temporary file was kept"
[ -e "$cache/0123456789abcdef-other.mdb" ] && fail "the unnamed cache file was kept when room was needed"
[ "$(cat "$cache/notes.txt")" = notes ] || fail "a foreign file was touched"

# A cached file damaged on disk is fetched again before its first use.
file=$(ls "$cache" | grep -E "^[0-9a-f]{16}-$last_name\$")
printf 'X' | dd of="$cache/$file" bs=1 seek=100 conv=notrunc status=none
run "$tmp/r3" get "$last" || fail "damaged file: $(cat "$tmp/err" "$tmp/r3")"
[ "$(val ok "$tmp/r3")" = 1 ] && [ "$(val fetches "$tmp/r3")" = 1 ] \
	&& [ "$(val refetches "$tmp/r3")" = 0 ] || fail "damaged file: $(cat "$tmp/r3")"

# An object replaced by other bytes of its size: FEEDER_ECORRUPT after
# exactly one refetch, and again without a fetch on the next read; a
# missing object: its error names it; the others still read.
bad=2 gone=3 okay=4
head -c "$(size_of $bad)" /dev/urandom >"$tmp/junk"
s3_tool put bkt "ds/$(name_of $bad)" "$tmp/junk" 2>"$tmp/err" || fail "put junk: $(cat "$tmp/err")"
s3_tool delete bkt "ds/$(name_of $gone)" 2>"$tmp/err" || fail "delete: $(cat "$tmp/err")"
cache=$tmp/cache2
run "$tmp/r4" get $bad $bad $gone $okay || fail "damaged objects: $(cat "$tmp/err" "$tmp/r4")"
[ "$(grep -c "^rc -10001$" "$tmp/r4")" = 2 ] || fail "not FEEDER_ECORRUPT twice: $(cat "$tmp/r4")"
[ "$(val refetches "$tmp/r4")" = 1 ] || fail "not exactly one refetch: $(cat "$tmp/r4")"
grep -q "^err s3://bkt/ds/$(name_of $bad) disagrees with its manifest twice: CRC-32C [0-9a-f]* where the manifest says" "$tmp/r4" \
	|| fail "the corrupt object's sentence: $(cat "$tmp/r4")"
grep -q "^rc -2$" "$tmp/r4" || fail "the missing object's code: $(cat "$tmp/r4")"
grep -q "^err s3://bkt/ds/$(name_of $gone): " "$tmp/r4" || fail "the missing object's sentence: $(cat "$tmp/r4")"
[ "$(val ok "$tmp/r4")" = 1 ] && [ "$(val fetches "$tmp/r4")" = 1 ] && [ "$(val failures "$tmp/r4")" = 2 ] \
	|| fail "damaged objects: $(cat "$tmp/r4")"
[ "$(ls -A "$cache" | grep -c .)" = 1 ] || fail "files other than shard $okay's left: $(ls -A "$cache")"
echo "shard_cache: $n shards through a cache of 2 ($limit bytes), restart adopted, corrupt and missing objects refused"
