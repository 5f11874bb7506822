#!/usr/bin/env bash
# test_plot.sh — `xvec plot` replaces --out only with a whole picture: when
# it fails (a missing log, a log with no finite loss) the previous SVG is
# left as it was and no temporary file stays beside it. Values that are not
# finite (a diverged loss written as nan or inf) are left out of their curve
# and counted on stderr, never written as coordinates; a log whose steps are
# too large for their spacing to show still draws, in bounded time.
. "$FEEDER_SOURCE/tests/xvec/xvec_lib.sh"
line() { # step loss accuracy wait
	echo "{\"step\": $1, \"epoch\": 0, \"batch\": $1, \"loss\": $2, \"accuracy\": $3, \"samples_per_s\": 100.0, \"data_wait\": $4, \"lr\": 0.001}"
}
for s in 1 2 3 4 5 6; do line $s "$((7 - s)).5" 0.$s 0.01; done >"$tmp/good.jsonl"
"$xvec" plot "$tmp/good.jsonl" --out "$tmp/out.svg" >/dev/null 2>"$tmp/err" || fail "plot: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "a finite log gave warnings: $(cat "$tmp/err")"
cp "$tmp/out.svg" "$tmp/before.svg"
[ "$(grep -c '<polyline' "$tmp/out.svg")" = 3 ] || fail "not three curves"

# kept CASE: the plot fails and out.svg is the previous picture, alone.
kept() {
	[ -s "$tmp/out.svg" ] && cmp -s "$tmp/out.svg" "$tmp/before.svg" \
		|| fail "$1: the previous plot was changed ($(wc -c <"$tmp/out.svg") bytes)"
	if ls "$tmp" | grep -q 'out.svg.tmp'; then fail "$1: a temporary file was left: $(ls "$tmp")"; fi
}
! "$xvec" plot "$tmp/missing.jsonl" --out "$tmp/out.svg" >/dev/null 2>"$tmp/err" \
	|| fail "plot of a missing log succeeded"
grep -q missing.jsonl "$tmp/err" || fail "the error does not name the log: $(cat "$tmp/err")"
kept "missing log"
for s in 1 2 3; do line $s nan 0.5 0.01; line $((s + 3)) inf 0.5 0.01; done >"$tmp/diverged.jsonl"
! "$xvec" plot "$tmp/diverged.jsonl" --out "$tmp/out.svg" >/dev/null 2>"$tmp/err" \
	|| fail "plot of a log without a finite loss succeeded"
grep -q 'finite' "$tmp/err" || fail "the refusal does not say why: $(cat "$tmp/err")"
kept "no finite loss"

# Some losses not finite: left out, counted, never drawn.
{ line 1 3.5 0.1 0.01; line 2 inf 0.2 0.01; line 3 nan 0.3 0.01; line 4 -inf 0.4 0.01
  line 5 1.5 0.5 inf; line 6 1.0 0.6 0.01; } >"$tmp/some.jsonl"
"$xvec" plot "$tmp/some.jsonl" --out "$tmp/some.svg" >/dev/null 2>"$tmp/err" \
	|| fail "plot with some non-finite values: $(cat "$tmp/err")"
grep -q '4 values that are not finite numbers left out' "$tmp/err" \
	|| fail "stderr does not count the 4 values left out: $(cat "$tmp/err")"
if grep -qiE 'nan|inf' "$tmp/some.svg"; then fail "non-finite coordinates written: $(grep -iE 'nan|inf' "$tmp/some.svg" | head -3)"; fi
loss_pts=$(grep -o 'stroke="#1f5fbf" stroke-width="2" points="[^"]*"' "$tmp/some.svg" | grep -o '[0-9.]*,[0-9.]*' | wc -l)
[ "$loss_pts" = 3 ] || fail "the loss curve has $loss_pts points, want the 3 finite ones"

# Steps 1e17 apart by 16: tick steps below the doubles' spacing there.
{ line 100000000000000000 2.0 0.1 0.01; line 100000000000000016 1.0 0.2 0.01; } >"$tmp/big.jsonl"
timeout 10 "$xvec" plot "$tmp/big.jsonl" --out "$tmp/big.svg" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "plot of large steps: exit $rc (124: it hung): $(cat "$tmp/err")"
echo "PASS: failed plots keep the previous file; 4 non-finite values left out and counted; large steps drawn"
