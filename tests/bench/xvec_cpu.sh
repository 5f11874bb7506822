#!/usr/bin/env bash
# tests/bench/xvec_cpu.sh [STEPS] — training samples/s of the x-vector TDNN on
# this machine's CPU cores, in one run:
#   1. xvec train --device cpu fed by feederd (the real data path)
#   2. the same with the batches already in memory (--in-memory: no data path)
#   3. the same model in PyTorch (Debian's python3-torch), its DataLoader
#      reading the same features dataset through python3-lmdb
# Paper widths (512/1500/512), 30-dim MFCC, batch 32, chunk 200, noise 0.1.
# Also trains the small quickstart model to report the held-out EER.
set -euo pipefail
. "$(dirname "$0")/bench_run.sh"
STEPS=${1:-12}
bench_build python3-torch
need_python torch numpy lmdb
make_speech sp-train 40 30 1 --features mfcc --ceps 30
make_speech sp-test 10 12 2 --features mfcc --ceps 30
start_daemon --workers "$cores" --log-level warning || fail "$daemon_why"
export FEEDER_SOCKET=$sock
x=$build/xvec/xvec
paper=(--batch 32 --chunk 200 --width 512 --pool-width 1500 --embed 512 --noise-eps 0.1 --lr 0.001)
# The first 2 steps of each run warm up (allocation, page faults); the figure
# is samples/s over the following STEPS steps.
rate() { grep '^step ' "$1" | tail -1 | sed -E 's/.* samples\/s ([0-9.]+) wait ([0-9.]+)%.*/\1 \2/'; }
"$x" train --dataset sp-train "${paper[@]}" --epochs 100 --steps $((STEPS + 2)) --log-every 2 \
  --out "$tmp/warm.ckpt" >"$tmp/warm.log"   # warm the page cache and the daemon
"$x" train --dataset sp-train "${paper[@]}" --epochs 100 --steps 2 --log-every 2 \
  --out "$tmp/a.ckpt" >/dev/null
# Fed and in-memory runs alternate three times (the machine is shared: a
# single pair mostly measures its neighbours); the medians are reported, and
# the daemon's own CPU time over the fed runs (/proc/PID/stat).
ticks() { awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
feds=() fedwaits=() mems=() dticks=0 fedms=0
for round in 1 2 3; do
  t0=$(ticks); s0=$(now_ms)
  "$x" train --dataset sp-train "${paper[@]}" --epochs 100 --steps $((STEPS + 2)) \
    --log-every $((STEPS + 2)) --out "$tmp/fed.ckpt" >"$tmp/fed.log"
  t1=$(ticks); s1=$(now_ms)
  dticks=$((dticks + t1 - t0)); fedms=$((fedms + s1 - s0))
  "$x" train --dataset sp-train "${paper[@]}" --epochs 100 --steps $((STEPS + 2)) \
    --log-every $((STEPS + 2)) --in-memory 4 --out "$tmp/mem.ckpt" >"$tmp/mem.log"
  read -r f fw < <(rate "$tmp/fed.log")
  read -r m _ < <(rate "$tmp/mem.log")
  feds+=("$f") fedwaits+=("$fw") mems+=("$m")
  echo "round $round: fed $f samples/s (wait $fw %), in memory $m samples/s" >&2
done
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
fed=$(median "${feds[@]}") fedwait=$(median "${fedwaits[@]}") mem=$(median "${mems[@]}")
dcpu=$("$py" -c "print($dticks / $(getconf CLK_TCK) / ($fedms / 1000) * 100)")
tj=$("$py" tests/bench/xvec_torch.py "$datasets/sp-train" --batch 32 --chunk 200 \
  --steps "$STEPS" --threads "$cores" --workers 1 --noise-eps 0.1)
echo "pytorch: $tj" >&2
pt=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["samples_per_s"])' "$tj")
# The small model of the quickstart, trained for real, for the EER figure.
"$x" train --dataset sp-train --batch 32 --chunk 100 --width 128 --pool-width 256 --embed 64 \
  --epochs 8 --lr 0.003 --noise-eps 0.1 --log-every 1000 --out "$tmp/small.ckpt" >"$tmp/small.log"
ev=$("$x" eval --checkpoint "$tmp/small.ckpt" --dataset sp-test --json)
"$py" - "$fed" "$fedwait" "$mem" "$pt" "$ev" "$cores" "$STEPS" "$dcpu" "${feds[*]}" "${mems[*]}" <<'PY'
import json, sys
fed, fedwait, mem, pt = (float(a) for a in sys.argv[1:5])
ev = json.loads(sys.argv[5]); cores, steps = sys.argv[6], sys.argv[7]
dcpu, feds, mems = float(sys.argv[8]), sys.argv[9], sys.argv[10]
print(f"\nx-vector TDNN 512/1500/512, 30-dim MFCC, batch 32 x 200 frames, noise eps 0.1, {cores} cores, {steps} steps\n")
print("| trainer | samples/s | vs PyTorch |")
print("|---|---:|---:|")
print(f"| PyTorch {__import__('torch').__version__} (same model, DataLoader over python3-lmdb) | {pt:.1f} | 1.00x |")
print(f"| xvec --device cpu, batches in memory | {mem:.1f} | {mem / pt:.2f}x |")
print(f"| xvec --device cpu, fed by feederd | {fed:.1f} | {fed / pt:.2f}x |")
print(f"\n(medians of 3 alternating runs: fed {feds}, in memory {mems} samples/s)")
print(f"data path cost: {(1 - fed / mem) * 100:.1f} % of in-memory throughput (medians); xvec's own measure of step time waiting for data: {fedwait:.1f} %; feederd's CPU time during the fed runs: {dcpu:.2f} % of their wall time")
print(f"held-out EER (10 unseen speakers x 12 utterances, small model 128/256/64, 8 epochs): {ev['eer'] * 100:.1f} %, minDCF(0.01) {ev['min_dcf']:.3f}")
PY
