#!/usr/bin/env bash
# test_train_e2e.sh — xvec through the whole system: gen-speech -> packer pack
# audio -> a real feederd -> `xvec train` (CPU) -> `xvec eval` on held-out
# speakers. Learning: training accuracy well above chance (1/20) and held-out
# EER below 20 %. Also: `--device cuda` fails with a clear reason here.
source "$FEEDER_SOURCE/tests/e2e/lib.sh"
xvec=$build/client/xvector/xvec
[ -x "$xvec" ] || skip "xvec is not built (needs OpenBLAS)"
"$build/tools/gen-speech" 20 30 "$tmp/train" --seed 1 >/dev/null || fail "gen-speech train"
"$build/tools/gen-speech" 10 12 "$tmp/test" --seed 2 >/dev/null || fail "gen-speech test"
for s in train test; do
	"$packer" pack audio "$tmp/$s" "$datasets/speech-$s" --features mfcc --ceps 30 >/dev/null 2>&1 \
		|| fail "pack audio $s"
done
start_daemon
common=(--socket "$sock" --batch 32 --width 128 --pool-width 256 --embed 64)
"$xvec" train --dataset speech-train "${common[@]}" --epochs 12 --chunk 100 --lr 0.003 \
	--noise-eps 0.1 --log-every 9 --out "$tmp/ckpt" >"$tmp/train.log" 2>&1 \
	|| { cat "$tmp/train.log"; fail "xvec train"; }
cat "$tmp/train.log"
acc=$(grep '^step ' "$tmp/train.log" | tail -1 | sed -E 's/.* acc ([0-9.]+) .*/\1/')
awk -v a="$acc" 'BEGIN { exit !(a > 0.3) }' || fail "final training accuracy $acc, want > 0.3 (chance 0.05)"
"$xvec" eval --checkpoint "$tmp/ckpt" --dataset speech-test --socket "$sock" --json \
	>"$tmp/eval.json" 2>"$tmp/eval.err" || { cat "$tmp/eval.err"; fail "xvec eval"; }
cat "$tmp/eval.json"
eer=$(json_get "$tmp/eval.json" eer)
n=$(json_get "$tmp/eval.json" utterances)
[ "$n" = 120 ] || fail "eval scored $n utterances, want 120"
awk -v e="$eer" 'BEGIN { exit !(e < 0.20) }' || fail "held-out EER $eer, want < 0.20"
"$xvec" embed --checkpoint "$tmp/ckpt" --dataset speech-test --socket "$sock" --out "$tmp/emb.txt" \
	>/dev/null || fail "xvec embed"
[ "$(wc -l <"$tmp/emb.txt")" = 120 ] || fail "embed wrote $(wc -l <"$tmp/emb.txt") lines"
[ "$(head -1 "$tmp/emb.txt" | wc -w)" = 66 ] || fail "embed line is not name + label + 64 values"
# Each line names its utterance (the dataset's names, in dataset order).
[ "$(cut -d' ' -f1 "$tmp/emb.txt" | sort -u | wc -l)" = 120 ] || fail "embed names are not 120 distinct"
head -1 "$tmp/emb.txt" | cut -d' ' -f1 | grep -qv '^#' || fail "embed wrote an index, not the utterance name: $(head -1 "$tmp/emb.txt" | cut -c1-40)"
if "$xvec" train --dataset speech-train --socket "$sock" --out "$tmp/c2" --device cuda 2>"$tmp/cuda.err"; then
	fail "--device cuda succeeded without a CUDA trainer"
fi
grep -q 'cuda' "$tmp/cuda.err" || fail "--device cuda error does not say why: $(cat "$tmp/cuda.err")"
stop_daemon
echo "PASS: final train acc $acc, held-out EER $eer"
