#!/usr/bin/env bash
# loader_xvec.sh — the trainers, unchanged, fed from the bucket: a
# feeder.Loader training loop (a NumPy softmax regression, so that no
# PyTorch is needed) over two epochs of the remote photos, each index once
# per epoch with the local dataset's label and pixels, the loss finite;
# and `xvec train` on a speech dataset (MFCC features) packed into shards
# and pushed beside it, which must train (a finite loss each logged step, a
# checkpoint written) while the cache fetches its shards.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
xvec=$build/xvec/xvec
need_exe "$xvec"
need_audio

remote_dataset 200 80K
need_exe "$genspeech"
"$genspeech" 4 10 "$tmp/src-sp" --seed 5 --threads "$threads" >/dev/null || fail "gen-speech"
"$packer" pack audio --threads "$threads" --features mfcc --ceps 30 --shard-size 64K \
	"$tmp/src-sp" "$tmp/sp" >/dev/null 2>"$tmp/pack-sp.log" \
	|| fail "pack audio: $(tail -n 2 "$tmp/pack-sp.log")"
sp_shards=$(awk '$1 == "shards" { print $2 }' "$tmp/sp/feeder.manifest")
[ "${sp_shards:-0}" -ge 2 ] || fail "the speech dataset has ${sp_shards:-no} shards, wanted several"
"$packer" push "$tmp/sp" s3://bkt/sp >/dev/null 2>"$tmp/push-sp.log" \
	|| fail "push sp: $(tail -n 2 "$tmp/push-sp.log")"
start_remote --remote "remote=s3://bkt/ds,sp=s3://bkt/sp"
wait_served sp 40

remote_client epochs "$sock" remote 2 --train --like local \
	|| fail "feeder.Loader training from the bucket"
daemon_alive
before=$(cache_fetches)
"$xvec" train --dataset sp --socket "$sock" --batch 8 --chunk 40 --width 16 --pool-width 24 \
	--embed 12 --epochs 2 --lr 0.01 --log-every 1 --out "$tmp/ckpt" >"$tmp/xvec.log" 2>&1 \
	|| fail "xvec train from the bucket: $(tail -n 5 "$tmp/xvec.log")"
daemon_alive
after=$(cache_fetches)
steps=$(grep -c '^step ' "$tmp/xvec.log")
[ "$steps" -ge 4 ] || fail "xvec logged $steps steps: $(cat "$tmp/xvec.log")"
grep '^step ' "$tmp/xvec.log" | grep -oE 'loss [^ ]+' | awk '
	$2 !~ /^[0-9.eE+-]+$/ || $2 + 0 != $2 + 0 { bad = 1 }
	END { exit bad }' || fail "a loss is not finite: $(grep '^step ' "$tmp/xvec.log")"
[ -s "$tmp/ckpt" ] || fail "xvec wrote no checkpoint"
[ "$after" -gt "$before" ] || fail "the cache fetched nothing for sp ($before -> $after fetches)"
grep '^step ' "$tmp/xvec.log" | tail -n 1
stop_daemon || fail "$daemon_why"
echo "PASS: a Loader loop and xvec train ($steps steps, $sp_shards shards;" \
	"cache fetches $before -> $after) from the bucket"
