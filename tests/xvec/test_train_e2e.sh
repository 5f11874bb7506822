#!/usr/bin/env bash
# test_train_e2e.sh — xvec through the whole system: gen-speech -> packer pack
# audio -> a real feederd -> `xvec train` (CPU) -> `xvec eval` on held-out
# speakers. Learning: training accuracy well above chance (1/20) and held-out
# EER below 20 %. Also: `--device cuda` fails with a clear reason here.
. "$FEEDER_SOURCE/tests/xvec/xvec_lib.sh"
make_speech speech-train 20 30 1 --features mfcc --ceps 30
make_speech speech-test 10 12 2 --features mfcc --ceps 30
start_daemon || fail "$daemon_why"
common=(--socket "$sock" --batch 32 --width 128 --pool-width 256 --embed 64)
"$xvec" train --dataset speech-train "${common[@]}" --epochs 12 --chunk 100 --lr 0.003 \
	--noise-eps 0.1 --log-every 9 --out "$tmp/ckpt" --log "$tmp/train.jsonl" >"$tmp/train.log" 2>&1 \
	|| { cat "$tmp/train.log"; fail "xvec train"; }
cat "$tmp/train.log"
acc=$(grep '^step ' "$tmp/train.log" | tail -1 | sed -E 's/.* acc ([0-9.]+) .*/\1/')
awk -v a="$acc" 'BEGIN { exit !(a > 0.3) }' || fail "final training accuracy $acc, want > 0.3 (chance 0.05)"
"$xvec" eval --checkpoint "$tmp/ckpt" --dataset speech-test --socket "$sock" --json \
	--det "$tmp/det.svg" >"$tmp/eval.json" 2>"$tmp/eval.err" || { cat "$tmp/eval.err"; fail "xvec eval"; }
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
! "$xvec" train --dataset speech-train --socket "$sock" --out "$tmp/c2" --device cuda 2>"$tmp/cuda.err" \
	|| fail "--device cuda succeeded without a CUDA trainer"
grep -q 'cuda' "$tmp/cuda.err" || fail "--device cuda error does not say why: $(cat "$tmp/cuda.err")"
# The pictures: the log has one object per log line with the
# figures of that line; the DET plot is well-formed SVG with the EER point
# where eval --json puts the EER; xvec plot draws the log's three curves.
"$xvec" plot "$tmp/train.jsonl" --out "$tmp/train.svg" >/dev/null 2>"$tmp/plot.err" \
	|| fail "xvec plot: $(cat "$tmp/plot.err")"
"$py" - "$tmp/train.jsonl" "$tmp/train.log" "$tmp/det.svg" "$eer" "$tmp/train.svg" <<'PY' \
	|| fail "log and plots"
import json, sys, xml.etree.ElementTree as ET
jl, log, det, eer, plot = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
rows = [json.loads(l) for l in open(jl)]
lines = [l for l in open(log) if l.startswith("step ")]
assert len(rows) == len(lines) and len(rows) > 3, (len(rows), len(lines))
for r, l in zip(rows, lines):
    f = l.split()
    assert r["step"] == int(f[1]) and abs(r["loss"] - float(f[7])) <= 1e-6 * abs(r["loss"]), (r, l)
    assert abs(r["accuracy"] - float(f[9])) < 1e-3 and 0 <= r["data_wait"] <= 1 and r["lr"] == 0.003
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(det).getroot()
c = root.find(".//s:circle[@id='eer']", ns)
assert c is not None and abs(float(c.get("data-eer")) - eer) < 1e-6, (c.attrib if c is not None else None, eer)
assert len(root.findall(".//s:polyline", ns)) == 1
# The marker's place, from the axes as drawn: the x tick labels "1" and
# "10" (%) give the normal-deviate scale, and the EER sits at probit(eer)
# on both axes; the DET curve passes within a few pixels of it.
from statistics import NormalDist
z = NormalDist().inv_cdf
xt = {t.text: float(t.get("x")) for t in root.findall(".//s:text", ns) if t.get("text-anchor") == "middle" and t.text in ("1", "10")}
yt = {t.text: float(t.get("y")) for t in root.findall(".//s:text", ns) if t.get("text-anchor") == "end" and t.text in ("1", "10")}
def at(p, lo, hi):  # lo, hi: positions of 1 % and 10 %
    return lo + (hi - lo) * (z(p) - z(0.01)) / (z(0.10) - z(0.01))
cx, cy = float(c.get("cx")), float(c.get("cy"))
ex, ey = at(eer, xt["1"], xt["10"]), at(eer, yt["1"] - 4, yt["10"] - 4)
assert abs(cx - ex) < 1.0 and abs(cy - ey) < 1.0, (cx, cy, ex, ey)
pts = [tuple(map(float, q.split(","))) for q in root.find(".//s:polyline", ns).get("points").split()]
def seg(a, b):  # distance from the marker to segment a-b
    (x0, y0), (x1, y1) = a, b
    dx, dy = x1 - x0, y1 - y0
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((cx - x0) * dx + (cy - y0) * dy) / (dx * dx + dy * dy)))
    return ((x0 + t * dx - cx) ** 2 + (y0 + t * dy - cy) ** 2) ** 0.5
near = min(seg(a, b) for a, b in zip(pts, pts[1:]))
assert near < 6.0, f"the DET curve passes {near:.1f} px from the EER marker"
p = ET.parse(plot).getroot()
assert len(p.findall(".//s:polyline", ns)) == 3
print(f"{len(rows)} log lines match; DET EER marker {c.get('data-eer')} = eval {eer} at ({cx}, {cy}), "
      f"{near:.1f} px from the curve; plot has 3 curves")
PY
stop_daemon || fail "$daemon_why"
echo "PASS: final train acc $acc, held-out EER $eer"
