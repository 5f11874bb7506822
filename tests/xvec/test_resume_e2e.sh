#!/usr/bin/env bash
# test_resume_e2e.sh — `xvec train --resume` continues with exactly the loss
# sequence of an uninterrupted run: the checkpoint holds weights, Adam state,
# step, BN statistics and the stream position (epoch, batch), and the daemon's
# stream at (seed, epoch, start batch) yields exactly the tail of the epoch.
. "$FEEDER_SOURCE/tests/xvec/xvec_lib.sh"
make_speech sp 4 10 5
start_daemon || fail "$daemon_why"
args=(--dataset sp --socket "$sock" --batch 8 --chunk 40 --width 16 --pool-width 24 --embed 12
	--epochs 3 --lr 0.01 --noise-eps 0.2 --dropout 0.1 --log-every 1)
"$xvec" train "${args[@]}" --out "$tmp/full" >"$tmp/full.log" || fail "uninterrupted run"
"$xvec" train "${args[@]}" --out "$tmp/part" --stop-after 7 >"$tmp/a.log" || fail "first half"
"$xvec" train "${args[@]}" --out "$tmp/part" --resume "$tmp/part" >"$tmp/b.log" || fail "resumed half"
grep -oE '^step [0-9]+ .* loss [^ ]+' "$tmp/full.log" >"$tmp/full.loss"
cat "$tmp/a.log" "$tmp/b.log" | grep -oE '^step [0-9]+ .* loss [^ ]+' >"$tmp/split.loss"
steps=$(wc -l <"$tmp/full.loss")
[ "$steps" -ge 12 ] || fail "only $steps steps logged"
diff "$tmp/full.loss" "$tmp/split.loss" || fail "resumed loss sequence differs from the uninterrupted one"
cmp -s "$tmp/full" "$tmp/part" || fail "final checkpoints differ"
grep -q 'resuming from' "$tmp/b.log" || fail "second run did not resume"
stop_daemon || fail "$daemon_why"
echo "PASS: $steps steps, identical losses and identical final checkpoint after resuming at step 7"
