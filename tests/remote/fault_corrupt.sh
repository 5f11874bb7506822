#!/bin/bash
# fault_corrupt.sh — shard bodies altered on the way (s3_proxy.py flips a
# byte: the size is right, the CRC-32C is not). Once, for shard 1: fetched
# again (two GETs), and its samples are delivered right. Every time, for
# shard 3: the shard is bad; its samples are replaced like corrupt records
# (counted: at least its count; none of its indices delivered; every other
# index is, with the local copy's labels and pixels), the stream completes,
# and the daemon logs one line naming the shard.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
remote_dataset 48 20K
proxy_start
once=$(shard_key 1) always=$(shard_key 3) range=$(shard_range 3)
proxy_rules '[
 {"method": "GET", "path": "/bkt/ds/'"${once//./\\\\.}"'", "action": "flip", "times": 1},
 {"method": "GET", "path": "/bkt/ds/'"${always//./\\\\.}"'", "action": "flip", "times": -1}]'
start_proxied --fetch-tries 4
reference
fault_client "$tmp/epoch.log" remote
end=$(client_end "$tmp/epoch.log")
count=${range#*:}
[[ $end == "ok 48 "* ]] || fail "the remote epoch with a bad shard ended: $end"
replaced=${end#ok 48 }
[ "$replaced" -ge "$count" ] || fail "$replaced replacements, shard 3 holds $count samples"
check_epoch "$tmp/epoch.log" --all --skip "$range" --dups "$replaced"
g1=$(grep -c $'^GET\t/bkt/ds/'"$once" "$proxy_log")
[ "$g1" = 2 ] || fail "$once altered once was fetched $g1 times, expected 2: $(cat "$proxy_log")"
g3=$(grep -c $'^GET\t/bkt/ds/'"$always" "$proxy_log")
[ "$g3" = 2 ] || fail "$always altered every time was fetched $g3 times, expected 2 (then it is bad)"
lines=$(grep -c "$always" "$daemon_log")
[ "$lines" = 1 ] || fail "feederd logged $lines lines naming $always, expected 1: $(grep "$always" "$daemon_log")"
failures=$(cache_stat failures)
[ "$failures" -ge 1 ] || fail "cache.failures is $failures after a bad shard"
# A second epoch: the bad shard is not fetched again, its samples still replaced.
fault_client "$tmp/epoch2.log" remote --epoch 1
end2=$(client_end "$tmp/epoch2.log")
[[ $end2 == "ok 48 "* ]] || fail "the second epoch ended: $end2"
check_epoch "$tmp/epoch2.log" --all --skip "$range" --dups "${end2#ok 48 }"
stop_daemon || fail "$daemon_why"
echo "ok: corrupt: $once altered once: fetched twice, its samples right; $always altered always:" \
	"bad after 2 GETs, $replaced replacements for its $count samples, none delivered, the rest" \
	"right; logged once; feederd exited 0"
