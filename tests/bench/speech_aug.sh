#!/usr/bin/env bash
# tests/bench/speech_aug.sh [CHUNKS] [ROUNDS] — feederd's wave pipeline
# against the speech augmentation people run today ("How good"),
# in one run, on this machine's cores.
#
# Both sides make training chunks of 200 frames (2 s at 16 kHz) of 80-bin
# Kaldi fbank with CMN over the chunk, batch 32, float32 (batch, 80, 200),
# from the same waveform datasets (packer pack audio --store wave): a random
# chunk, then, each with its probability, speed perturbation 0.9/1.1 (0.5),
# reverberation by a drawn RIR (0.6), noise/music/babble at Kaldi's SNRs
# (0.6), dither 1, SpecAugment (0.6: one time mask of up to 10 frames, one
# frequency mask of up to 8 bins). The options are written once, in
# speech_aug_torch.py (AUG), and used by both sides.
#   PyTorch  speech_aug_torch.py peer: a DataLoader (num_workers = cores)
#            augmenting as the wespeaker / Kaldi recipes do (torchaudio, scipy);
#   Feeder   speech_aug_torch.py feeder: feederd --workers cores serving the
#            same datasets, read by feeder.Loader in one Python process.
# Each side is timed over CHUNKS chunks (default 1280) after a warm-up that
# drains its prefetch; ROUNDS rounds (default 3) alternate the sides, with
# and without augmentation (fbank + CMN only), and the best of each is kept.
# Goals: >= 4x augmented, >= 5x without augmentation.
# Then the cost per chunk of each stage on one thread: feederd's pipeline
# through wave_stage_bench (the daemon's wave_pipeline.c, its own stage
# clock), and the peer's Dataset in one process (speech_aug_torch.py stages).
# The corpus is generated: gen-speech 20 speakers x 10 utterances of 2.5-5 s,
# gen-noise --count 5 (5 noise, 5 music, 5 speech files of 3-8 s), gen-rir
# --count 10. About 2 minutes on 2 cores with the defaults.
set -euo pipefail
. "$(dirname "$0")/bench_run.sh"
CHUNKS=${1:-1280}
ROUNDS=${2:-3}
BATCH=32
bench_build "python3-torch python3-torchaudio python3-scipy"
[ -x "$build/tools/gen/gen-rir" ] || skip "speech_aug.sh: built without the audio libraries (have_audio)"
need_python torch torchaudio scipy lmdb numpy cffi

ds=$datasets
"$genspeech" 20 10 "$tmp/speech" --seed 1 --min-dur 2.5 --max-dur 5 >&2
"$build/tools/gen/gen-noise" --seed 3 --count 5 "$tmp/noise" >&2
"$build/tools/gen/gen-rir" --seed 4 --count 10 "$tmp/rirs/rir" >&2   # one class folder
pack_audio speech "$tmp/speech" --store wave
pack_audio noise "$tmp/noise" --store wave
pack_audio rir "$tmp/rirs" --store wave

# The stage harness (tests/bench/meson.build: built wherever audio is).
harness=$build/tests/bench/wave_stage_bench
need_exe "$harness"

start_daemon --workers "$cores" --log-level warning || fail "$daemon_why"
peer=("$py" tests/bench/speech_aug_torch.py)
export PYTHONPATH=$build/client/python${PYTHONPATH:+:$PYTHONPATH}
common=(--chunks "$CHUNKS" --batch "$BATCH")
results=$tmp/results
: >"$results"
for round in $(seq "$ROUNDS"); do
  for aug in 1 0; do
    p=$("${peer[@]}" peer "$ds" --aug $aug --workers "$cores" "${common[@]}")
    f=$("${peer[@]}" feeder "$ds" --aug $aug --socket "$sock" "${common[@]}")
    printf '%s\n' "round $round aug $aug: pytorch $p" "round $round aug $aug: feeder $f" >&2
    printf '%s\t%s\t%s\n' "$aug" "$p" "$f" >>"$results"
  done
done
stop_daemon 10 || true
if [ -s "$daemon_log" ]; then echo "feederd log:" >&2; cat "$daemon_log" >&2; fi

# One thread each, no daemon: where a chunk's time goes.
hs1=$("$harness" --datasets "$ds" --aug 1 --json)
hs0=$("$harness" --datasets "$ds" --aug 0 --json)
ps1=$("${peer[@]}" stages "$ds" --aug 1 --chunks 300 --batch "$BATCH")
ps0=$("${peer[@]}" stages "$ds" --aug 0 --chunks 300 --batch "$BATCH")
printf 'wave_stage_bench: %s\n' "$hs1" "$hs0" >&2
printf 'pytorch stages: %s\n' "$ps1" "$ps0" >&2

"$py" - "$results" "$hs1" "$hs0" "$ps1" "$ps0" "$cores" "$CHUNKS" "$ROUNDS" "$BATCH" <<'PY'
import json, sys
results, cores, chunks, rounds, batch = sys.argv[1], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]
hs = {1: json.loads(sys.argv[2]), 0: json.loads(sys.argv[3])}
ps = {1: json.loads(sys.argv[4]), 0: json.loads(sys.argv[5])}
runs = {1: ([], []), 0: ([], [])}
for line in open(results):
    aug, p, f = line.rstrip("\n").split("\t")
    runs[int(aug)][0].append(json.loads(p)["chunks_per_s"])
    runs[int(aug)][1].append(json.loads(f)["chunks_per_s"])
speed = ps[1].get("speed", "?")
print(f"\nSpeech augmentation: 200 utterances (20 speakers, 2.5-5 s), 15 noise/music/speech files, "
      f"10 RIRs; chunks of 200 frames -> 80-bin fbank + CMN, float32 (batch {batch}, 80, 200); "
      f"{cores} cores; best of {rounds} runs of {chunks} chunks each\n")
print("| pipeline | augmented chunks/s | no augmentation chunks/s |")
print("|---|---:|---:|")
best = {a: (max(runs[a][0]), max(runs[a][1])) for a in (1, 0)}
print(f"| PyTorch DataLoader ({cores} workers; torchaudio {speed} speed, scipy fftconvolve, "
      f"kaldi.fbank) | {best[1][0]:.1f} | {best[0][0]:.1f} |")
print(f"| feederd ({cores} workers) + feeder.Loader | {best[1][1]:.1f} | {best[0][1]:.1f} |")
r1, r0 = best[1][1] / best[1][0], best[0][1] / best[0][0]
print(f"| ratio (goal: >= 4x augmented, >= 5x not) | {r1:.2f}x {'(met)' if r1 >= 4 else '(NOT met)'} "
      f"| {r0:.2f}x {'(met)' if r0 >= 5 else '(NOT met)'} |")
for a in (1, 0):
    print(f"\nruns, {'augmented' if a else 'no augmentation'}: PyTorch "
          + " ".join(f"{x:.1f}" for x in runs[a][0]) + "; feederd "
          + " ".join(f"{x:.1f}" for x in runs[a][1]) + " chunks/s")

stages = [("read", "read the record"), ("chunk", "cut the chunk"), ("speed", "speed"),
          ("reverb", "reverb"), ("noise", "noise (feederd: + dither)"),
          ("features", "fbank + CMN (PyTorch: + dither)"), ("specaug", "SpecAugment"),
          ("collate", "collate (PyTorch)")]
for a in (1, 0):
    h, p = hs[a], ps[a]
    print(f"\nCost per chunk on one thread, {'augmented' if a else 'no augmentation'} "
          f"(feederd: wave_stage_bench, {h['chunks']} chunks, best of {h['repeats']}; "
          f"PyTorch: its Dataset in one process, 300 chunks)\n")
    print("| stage | feederd ms | PyTorch ms | PyTorch / feederd |")
    print("|---|---:|---:|---:|")
    for k, name in stages:
        hv, pv = h.get(k + "_ms"), p.get(k + "_ms")
        ratio = f"{pv / hv:.1f}x" if hv and pv and hv >= 0.005 else ""
        hs_ = f"{hv:.3f}" if hv is not None else "-"
        ps_ = f"{pv:.3f}" if pv is not None else "-"
        print(f"| {name} | {hs_} | {ps_} | {ratio} |")
    print(f"| total (thread CPU time) | {h['cpu_ms']:.3f} | {p['cpu_ms']:.3f} | "
          f"{p['cpu_ms'] / h['cpu_ms']:.1f}x |")
    print(f"| chunks/s/core | {h['chunks_per_s_core']:.0f} | {p['chunks_per_s_core']:.0f} | |")
print("\nStages are timed on the wall clock and scaled per chunk by its CPU/wall ratio "
      "(preemption by other work removed); totals are thread CPU time.")
PY
