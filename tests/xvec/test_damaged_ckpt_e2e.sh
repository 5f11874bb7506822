#!/usr/bin/env bash
# test_damaged_ckpt_e2e.sh — `xvec train --resume` and `xvec eval` refuse a
# damaged checkpoint with one line naming what is wrong, against a real
# feederd, instead of resuming somewhere wrong, training nothing or scoring
# NaN: a position whose sample count overflows (world 2, next batch 2^62),
# one past the dataset, epoch 2^63, another stream seed, a bad magic,
# pipeline 7, world 0, NaN or negative batch-norm statistics, an infinite
# Adam moment, a header size out of range, and a FIFO in place of the file
# (refused at once, not waited on). Each damaged copy has its CRC made right (ckpt_patch.py), so
# only the field checks can catch it; the undamaged checkpoint still resumes
# and evaluates.
. "$FEEDER_SOURCE/tests/xvec/xvec_lib.sh"
patch_ckpt() { "$py" "$here/ckpt_patch.py" "$tmp/good" "$tmp/$1" "${@:2}" || fail "ckpt_patch $*"; }
make_speech sp 4 6 3
start_daemon || fail "$daemon_why"
model=(--socket "$sock" --batch 4 --chunk 40 --timeout-ms 20000)
train=(train --dataset sp "${model[@]}" --width 16 --pool-width 24 --embed 12 --epochs 2)
"$xvec" "${train[@]}" --out "$tmp/good" --stop-after 2 >"$tmp/good.log" 2>&1 \
	|| fail "training the checkpoint: $(cat "$tmp/good.log")"
# Unchanged but for a recomputed CRC: the same bytes, so the CRC is the file's.
patch_ckpt same
cmp -s "$tmp/good" "$tmp/same" || fail "ckpt_patch.py does not reproduce the file's CRC"

# refused CMD NAME WORDS: xvec CMD on checkpoint NAME exits 1 within 20 s
# with exactly one line on stderr that contains WORDS, and starts nothing.
refused() {
	local cmd=$1 name=$2 words=$3 rc
	if [ "$cmd" = resume ]; then
		timeout 20 "$xvec" "${train[@]}" --out "$tmp/out" --resume "$tmp/$name" \
			>"$tmp/stdout" 2>"$tmp/stderr"
	else
		timeout 20 "$xvec" eval --dataset sp "${model[@]}" --checkpoint "$tmp/$name" \
			>"$tmp/stdout" 2>"$tmp/stderr"
	fi
	rc=$?
	[ $rc = 1 ] || fail "$cmd $name: exit $rc, want 1; stdout: $(head -c 300 "$tmp/stdout"); stderr: $(cat "$tmp/stderr")"
	[ "$(wc -l <"$tmp/stderr")" = 1 ] || fail "$cmd $name: not one line on stderr: $(cat "$tmp/stderr")"
	grep -qF -- "$words" "$tmp/stderr" || fail "$cmd $name: '$(cat "$tmp/stderr")' does not say '$words'"
	! grep -qE 'resuming from|elastic resume|^step |EER' "$tmp/stdout" \
		|| fail "$cmd $name: went on: $(cat "$tmp/stdout")"
	[ ! -e "$tmp/out" ] || fail "$cmd $name: wrote a checkpoint"
	echo "ok: $cmd $name: $(cat "$tmp/stderr")"
	refusals=$((refusals + 1))
}
refusals=0
# damaged NAME CMDS WORDS EDIT...: a copy of the good checkpoint with EDITs
# (ckpt_patch.py), refused by each of CMDS (resume, eval) saying WORDS.
damaged() {
	local cmd
	patch_ckpt "$1" "${@:4}"
	for cmd in $2; do
		refused "$cmd" "$1" "$3"
	done
}

# The position (blob offsets: epoch 8, next batch 16, seed 32, world 40,
# start sample 48, pipeline 56; the magic at 0).
damaged overflow resume "position: next batch 4611686018427387904" \
	blob+40:u32=2 blob+16:u64=4611686018427387904
damaged past resume \
	"position: next sample 28 (batch 7 of 4 samples, 1 rank) is beyond epoch 0's 24 samples" \
	blob+16:u64=7
damaged start resume "position: start sample 25 is beyond epoch 0's 24 samples" \
	blob+40:u32=2 blob+48:u64=25
damaged epoch resume "position: epoch 9223372036854775808" blob+8:u64=9223372036854775808
damaged seed resume "stream was seeded with --seed 9, not 1" blob+32:u64=9
damaged magic "resume eval" "position:" blob+0:u32=0
damaged pipeline eval "position: pipeline 7" blob+56:u32=7
damaged world "eval resume" "position: world 0" blob+40:u32=0

# The model (bn layer 3's means at float 64, its variances at 80, for
# width 16; the width at header byte 16).
damaged bnnan "resume eval" "bn3 running mean[2] is nan" "bn[66]=nan"
damaged bnneg "resume eval" "bn3 running variance[0] is -1" "bn[80]=-1"
damaged adam resume "Adam first moment of frame1.weight[3] is inf" "m[3]=inf"
damaged width "resume eval" "width 0" header+16:u32=0

# Not a regular file: refused at once (opening a FIFO with no writer would wait).
mkfifo "$tmp/fifo" || fail "mkfifo"
refused resume fifo "not a regular file"
refused eval fifo "not a regular file"

# The undamaged checkpoint still resumes and evaluates.
"$xvec" "${train[@]}" --out "$tmp/out" --resume "$tmp/good" >"$tmp/resume.log" 2>&1 \
	|| fail "resuming the good checkpoint: $(cat "$tmp/resume.log")"
grep -q "resuming from $tmp/good at epoch 0 batch 2" "$tmp/resume.log" \
	|| fail "the good checkpoint did not resume at epoch 0 batch 2: $(cat "$tmp/resume.log")"
"$xvec" eval --dataset sp "${model[@]}" --checkpoint "$tmp/out" >"$tmp/eval.log" 2>&1 \
	|| fail "evaluating: $(cat "$tmp/eval.log")"
grep -q '^EER ' "$tmp/eval.log" || fail "eval printed no EER: $(cat "$tmp/eval.log")"
stop_daemon || fail "$daemon_why"
echo "PASS: $refusals refusals of damaged checkpoints, one line each; the good one resumes and evaluates"
