#!/usr/bin/env bash
# serve.sh — feederd serving a dataset from the bucket gives, through
# feeder.Loader (tests/remote/remote_client.py serve), exactly the local
# dataset's samples: each epoch every index once, with the label and the
# pixels the local data.mdb gives for that index, seed and epoch; in a
# shard-block order (--shuffle-block 2: at most 2 shards open at once); the
# same seed twice the same sequence, the second time from the warm cache
# (hits grow, fetches do not); another seed another order; a resume at
# batch k the tail of the uninterrupted epoch; two ranks disjoint,
# interleaving into the epoch.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"

# 300 photos in 6-8 shards
remote_dataset 300 120K
[ "$remote_shards" -ge 6 ] && [ "$remote_shards" -le 8 ] || fail "$remote_shards shards, wanted 6-8"
start_remote --shuffle-block 2
remote_client serve "$sock" "$feederctl" "$tmp/shards/feeder.manifest" 2 \
	|| fail "remote_client serve"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "PASS: $remote_shards shards from s3://bkt/ds served like the local dataset"
