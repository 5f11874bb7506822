#!/bin/bash
# fault_manifest.sh — another dataset pushed to the same prefix while a
# stream reads the remote one (--remote-check 1). feederd retires the
# version it served (registry.c take_remote): the running stream ends with
# an error saying that dataset 'remote' changed at s3://bkt/ds, the samples
# it delivered before being the old version's, right; a new stream reads
# the new version (its sample count, classes, labels and pixels, checked
# against a local copy of it).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
make_images new 24 3 11
"$packer" pack images --threads "$threads" --resize-shorter 64 --shard-size 20K --order walk \
	"$tmp/src-new" "$tmp/shards-new" >/dev/null 2>"$tmp/pack-new.log" \
	|| fail "packer pack the new version: $(tail -n 2 "$tmp/pack-new.log")"
remote_dataset 48 20K
start_remote --remote-check 1
reference
# Every shard of the old version in the cache first: the push overwrites
# their objects before its manifest, and an old shard fetched in between
# would disagree with the old manifest (a bad shard, not what this tests).
fault_client "$tmp/warm.log" remote
[[ $(client_end "$tmp/warm.log") == "ok 48 0" ]] || fail "the first epoch: $(client_end "$tmp/warm.log")"
check_epoch "$tmp/warm.log" --all
fault_spawn "$tmp/old.log" remote --batch 2 --sleep 200 --ready "$tmp/old.ready"
old_pid=$spawned
wait_until 20 test -e "$tmp/old.ready" || fail "the slow stream delivered nothing: $(cat "$tmp/old.log")"
"$packer" push "$tmp/shards-new" s3://bkt/ds >/dev/null 2>"$tmp/push-new.log" \
	|| fail "packer push of the new version: $(tail -n 2 "$tmp/push-new.log")"
wait_until 15 exited "$old_pid" || fail "the stream of the old version still runs 15 s after the push"
end=$(client_end "$tmp/old.log")
[[ $end == error* ]] || fail "the stream of the old version ended: $end"
[[ $end == *"dataset 'remote' changed at s3://bkt/ds"* ]] || fail "the old stream's error: $end"
check_epoch "$tmp/old.log"
old_n=$(grep -c '^S ' "$tmp/old.log")
[ "$old_n" -lt 48 ] || fail "the old stream delivered all 48 samples before ending"
wait_served remote 24
ref_log=$tmp/ref-new.log
fault_client "$ref_log" new
[[ $(client_end "$ref_log") == "ok 24 0" ]] || fail "the new local copy: $(client_end "$ref_log")"
fault_client "$tmp/new.log" remote
end_new=$(client_end "$tmp/new.log")
[[ $end_new == "ok 24 0" ]] || fail "a stream on the new version ended: $end_new"
check_epoch "$tmp/new.log" --all
labels=$(awk '$1 == "S" { print $3 }' "$tmp/new.log" | sort -u | tr '\n' ' ')
[ "$labels" = "0 1 2 " ] || fail "the new version's labels: $labels (3 classes)"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "ok: manifest: the old version's stream ended after $old_n samples (right): ${end#error };" \
	"a new stream read the new version: 24 samples in 3 classes, right; feederd exited 0"
