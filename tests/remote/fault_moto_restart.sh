#!/bin/bash
# fault_moto_restart.sh — the S3 server (moto) killed mid-epoch and
# started again on the same port, the dataset pushed to it again (moto
# keeps everything in memory). The cache holds a few of its shards (--cache-limit 1M)
# and there is one fetcher, so fetches are needed while the server is gone
# (refused connections, retried: --fetch-tries 12) and after it is back.
# The epoch completes with every index exactly once, labels and pixels
# those of the local copy. feederd is stopped (SIGSTOP) from the server's
# start until the push is done: a fetch answered 404 by the empty server
# is no fault of the network, and would fail the stream, rightly.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
remote_dataset 48 150K --resize-shorter 256
start_remote --fetch-tries 12 --fetchers 1 --cache-limit 1M --shuffle-block 1
reference
fault_spawn "$tmp/epoch.log" remote --batch 2 --sleep 100 --ready "$tmp/ready"
pid=$spawned
wait_until 20 test -e "$tmp/ready" || fail "the stream delivered nothing: $(cat "$tmp/epoch.log")"
s3_stop
sleep 1.5
exited "$pid" && fail "the stream ended while the server was gone: $(tail -n 3 "$tmp/epoch.log")"
before=$(grep -c '^S ' "$tmp/epoch.log")
kill -STOP "$daemon_pid"
s3_restart
s3_py mb bkt >/dev/null || fail "cannot create the bucket again"
"$packer" push "$tmp/shards" s3://bkt/ds >/dev/null 2>"$tmp/push2.log" \
	|| fail "packer push again: $(tail -n 2 "$tmp/push2.log")"
kill -CONT "$daemon_pid"
wait_client "$pid" "$tmp/epoch.log" 90
end=$(client_end "$tmp/epoch.log")
[[ $end == "ok 48 0" ]] || fail "the epoch across the restart ended: $end"
check_epoch "$tmp/epoch.log" --all
retries=$(cache_stat retries)
fetches=$(cache_stat fetches)
[ "$retries" -ge 1 ] || fail "no retry counted while the server was gone (cache.retries $retries)"
[ "$fetches" -gt "$remote_shards" ] || fail "$fetches fetches for $remote_shards shards: the cache did not evict"
stop_daemon || fail "$daemon_why"
echo "ok: moto_restart: moto killed after $before samples, back 1.5 s later; the epoch whole and" \
	"right (48 indices once each); $fetches fetches, $retries retries; feederd exited 0"
