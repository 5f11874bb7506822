#!/bin/bash
# fault_retry.sh — S3 answering 503, 500 and 503 SlowDown for shard objects
# (through s3_proxy.py in front of moto). A few times each, fewer than
# --fetch-tries: the epoch of the remote dataset is whole and right (every
# index once, labels and pixels those of the local copy) and the retries
# are counted in the cache's status. Always, for one shard: the stream
# fails with an error naming that object's s3:// URL, while a stream on a
# local dataset, running meanwhile, completes correctly; the daemon stays
# up and exits 0.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
remote_dataset 48 20K
[ "$remote_shards" -ge 4 ] || fail "expected 4 shards or more, got $remote_shards"
proxy_start

# Transient: 2 + 1 + 2 failures, 4 tries a request.
proxy_rules '[
 {"method": "GET", "path": "/bkt/ds/shard-00001\\.mdb", "action": "status", "status": 503, "times": 2},
 {"method": "GET", "path": "/bkt/ds/shard-00002\\.mdb", "action": "status", "status": 500, "times": 1},
 {"method": "GET", "path": "/bkt/ds/shard-00003\\.mdb", "action": "status", "status": 503, "code": "SlowDown", "times": 2}]'
start_proxied --fetch-tries 4
reference
fault_client "$tmp/epoch.log" remote
end=$(client_end "$tmp/epoch.log")
[[ $end == "ok 48 0" ]] || fail "the remote epoch through transient errors ended: $end"
check_epoch "$tmp/epoch.log" --all
injected=$(grep -c $'\tstatus:' "$proxy_log")
[ "$injected" = 5 ] || fail "the proxy injected $injected errors, expected 5: $(cat "$proxy_log")"
retries=$(cache_stat retries)
[ "$retries" -ge 5 ] || fail "cache.retries is $retries after 5 injected errors"
failures=$(cache_stat failures)
[ "$failures" = 0 ] || fail "cache.failures is $failures after errors that were retried"
stop_daemon || fail "$daemon_why"

# Permanent: every GET of shard 2 answers 503; a fresh cache.
bad=$(shard_key 2)
proxy_rules '[{"method": "GET", "path": "/bkt/ds/'"${bad//./\\\\.}"'", "action": "status", "status": 503, "times": -1}]'
: >"$proxy_log"
start_proxied --fetch-tries 3 --cache-dir "$tmp/cache2"
fault_spawn "$tmp/local.log" local --batch 2 --sleep 40
local_pid=$spawned
fault_client "$tmp/failing.log" remote
end=$(client_end "$tmp/failing.log")
[[ $end == error* ]] || fail "the stream of a shard that cannot be fetched ended: $end"
[[ $end == *"s3://bkt/ds/$bad"* ]] || fail "the stream's error does not name s3://bkt/ds/$bad: $end"
check_epoch "$tmp/failing.log"
first=$(shard_range 2)
delivered=$(grep -c '^S ' "$tmp/failing.log")
[ "$delivered" -le "${first%:*}" ] || fail "$delivered samples delivered, past shard 2's first index ${first%:*}"
exited "$local_pid" && fail "the local stream ended before the remote one failed: $(tail -n 3 "$tmp/local.log")"
daemon_alive
wait_client "$local_pid" "$tmp/local.log" 60
[[ $(client_end "$tmp/local.log") == "ok 48 0" ]] || fail "the local stream: $(client_end "$tmp/local.log")"
check_epoch "$tmp/local.log" --all
gets=$(grep -c $'^GET\t/bkt/ds/'"$bad" "$proxy_log")
[ "$gets" -ge 3 ] || fail "$gets GETs of $bad with --fetch-tries 3: $(cat "$proxy_log")"
failures=$(cache_stat failures)
[ "$failures" -ge 1 ] || fail "cache.failures is $failures after a shard could not be fetched"
stop_daemon || fail "$daemon_why"
echo "ok: retry: 5 injected 503/500/SlowDown answers retried ($retries retries counted), the epoch" \
	"whole and right; shard 2 always 503: $gets GETs, the stream failed after $delivered samples:" \
	"${end#error }; the local stream completed meanwhile; feederd exited 0"
