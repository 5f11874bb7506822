#!/usr/bin/env bash
# tests/bench/xvec_quality.sh — does the GPU trainer learn as well as the CPU
# reference? The quickstart's speech recipe (tools/quickstart, steps 5, 8, 9)
# trained twice on the same data with the same seed, `xvec train --device
# cuda` and `--device cpu`, each checkpoint evaluated the same way (`xvec
# eval` on the CPU) on held-out speakers; prints both EERs and whether they
# are within 2 points (not a test; about a minute on a GPU machine).
#
#   gen-speech 20 x 30 (seed 1) and 10 held-out x 12 (seed 2) -> packer pack
#   audio --features mfcc --ceps 30 -> feederd -> xvec train (widths
#   128/256/64, batch 32, chunk 100, 12 epochs, lr 0.003, noise eps 0.1,
#   seed 1) -> xvec eval --json
#
# Without a CUDA device the cuda row reads "skipped: <reason>" and the CPU
# row runs for 1 epoch (DRY=1, chosen automatically: the CI dry run; its
# EER says only that the path works).
# Environment (besides bench_run.sh's): EPOCHS (12; 1 when DRY), time
# budgets in seconds T_DATA (60), T_TRAIN (120 each), T_EVAL (60 each).
set -uo pipefail
# shellcheck source=tests/bench/bench_run.sh
. "$(dirname "$0")/bench_run.sh"
bench_init xvec_quality
cores=$(nproc)
xvec=$build/xvec/xvec

bench_probe
EPOCHS=${EPOCHS:-$([ "$DRY" = 1 ] && echo 1 || echo 12)}
echo "xvec_quality: device: ${gpu:-none ($gpu_why)}; DRY=$DRY, $EPOCHS epochs" >&2

data_ok=1
for spec in "train 20 30 1" "test 10 12 2"; do
	read -r name spk utt seed <<<"$spec"
	bench_run "gen_$name" "${T_DATA:-60}" "$build/tools/gen/gen-speech" "$spk" "$utt" \
		"$tmp/$name" --seed "$seed" --threads "$cores" &&
		bench_run "pack_$name" "${T_DATA:-60}" "$build/packer/packer" pack audio \
			--threads "$cores" "$tmp/$name" "$datasets/speech-$name" --features mfcc \
			--ceps 30 || data_ok=0
	rm -rf "${tmp:?}/$name"
done

recipe=(--dataset speech-train --epochs "$EPOCHS" --batch 32 --chunk 100 --lr 0.003
	--noise-eps 0.1 --width 128 --pool-width 256 --embed 64 --seed 1 --log-every 100)
if [ "$data_ok" = 1 ] && bench_daemon feederd --workers "$cores"; then
	for dev in cuda cpu; do
		if [ $dev = cuda ] && [ -n "$gpu_why" ]; then
			bench_skip "train_$dev" "$gpu_why"
			continue
		fi
		bench_run "train_$dev" "${T_TRAIN:-120}" "$xvec" train --socket "$sock" "${recipe[@]}" \
			--device $dev --out "$tmp/$dev.ckpt" &&
			bench_run "eval_$dev" "${T_EVAL:-60}" "$xvec" eval --socket "$sock" \
				--checkpoint "$tmp/$dev.ckpt" --dataset speech-test --json
	done
	bench_daemon_stop
else
	for dev in cpu cuda; do bench_skip "train_$dev" "no dataset or no feederd"; done
fi

py=$(find_python json) || { echo "xvec_quality: $py" >&2; exit 1; }
"$py" - "$src/tests/bench" "$LOGDIR" "${gpu:-no device}" "$cores" "$EPOCHS" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[1])
from bench_table import Steps, row, met  # noqa: E402

st = Steps(sys.argv[2], "xvec_quality")
gpu, cores, epochs = sys.argv[3], sys.argv[4], sys.argv[5]


def trained(dev):
    """(samples/s, seconds, data wait %) from train's summary line."""
    for line in st.lines(f"train_{dev}"):
        m = re.match(r"trained \d+ steps in ([0-9.]+) s: ([0-9.]+) samples/s, .*?([0-9.]+)%", line)
        if m:
            return float(m.group(2)), float(m.group(1)), float(m.group(3))
    return None


print(f"### x-vector quality, GPU vs CPU trainer ({gpu}; {cores} cores)\n")
print(f"Quickstart speech recipe: 20 speakers x 30 utterances, 10 held-out x 12; widths "
      f"128/256/64, batch 32, chunk 100, {epochs} epochs, seed 1; eval on the CPU.\n")
row("trainer", "held-out EER", "minDCF(0.01)", "training")
row("---", "---", "---", "---")
eer = {}
for dev in ("cuda", "cpu"):
    t, r = trained(dev), st.json(f"eval_{dev}")
    if not t:
        row(f"xvec --device {dev}", st.why(f"train_{dev}"), "—", "—")
        continue
    train = f"{t[1]:.1f} s, {t[0]:,.0f} samples/s, data wait {t[2]:.1f} %"
    if r:
        eer[dev] = 100 * r["eer"]
        row(f"xvec --device {dev}", f"{eer[dev]:.2f} %", f"{r['min_dcf']:.4f}", train)
    else:
        row(f"xvec --device {dev}", st.why(f"eval_{dev}"), "—", train)
if len(eer) == 2:
    d = eer["cuda"] - eer["cpu"]
    print(f"\nEER difference cuda - cpu: {d:+.2f} points; within 2 points: {met(abs(d) <= 2)}")
else:
    print("\nEER difference cuda - cpu: n/a (both rows are needed)")
print(f"\nLogs and commands: {st.dir} (xvec_quality.commands)")
PY
bench_exit
