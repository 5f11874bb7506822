#!/usr/bin/env bash
# test_mpi.sh — `mpirun -np N xvec train` against real feederd processes
# (skipped, with the reason, without mpirun or an xvec built with MPI):
#  1. equivalence: 2 ranks x batch 16 with --sync-bn give the model of 1 rank
#     x batch 32 after 20 steps (training noise on, dropout 0), within 1e-5
#     relative, and every rank's parameters are equal after every step
#     (--check-replicas); per-rank batch-norm keeps the replicas equal too.
#     At --lr 1e-5: Adam moves a parameter by about lr whatever its gradient's
#     size, and some gradients are zero in exact arithmetic (the bias of a
#     unit that is active for the whole batch ahead of batch-norm), so their
#     rounding noise, which the all-reduce changes, becomes steps of +-lr:
#     the runs differ by ~0.64 lr at any lr (4.9e-3 relative at 1e-3, 6e-6
#     at 1e-5). test_xvec_dp checks the first step's averaged gradient
#     (2e-7) and 20 steps at 1e-3 where no such unit occurs.
#  2. two "nodes": 4 ranks, ranks 0-1 on one feederd and 2-3 on another,
#     each daemon with its own copy of the dataset, train together; each
#     daemon's log shows only its node's ranks;
#  4. elastic resume: 2 ranks stop after 3 steps of 8 (48 of the epoch's 64
#     samples); the checkpoint resumes with 1 rank and with 4 ranks (batch
#     4): by the ranks' --trace files, every sample of the epoch is trained
#     on exactly once across the stopped and the resumed run.
#  3. a killed daemon: SIGKILL node 2's feederd mid-run; the job ends (no
#     hang) with one line per rank naming it: node 2's ranks say the daemon
#     went away (or, one with a batch still in its ring, that another rank
#     failed), ranks 0 and 1 that another rank failed.
. "$FEEDER_SOURCE/tests/xvec/xvec_lib.sh"
diff_tool=$build/tests/xvec/ckpt_diff
command -v mpirun >/dev/null || skip "mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)"
"$xvec" --help 2>&1 | grep -q "data parallel in this build: MPI" \
	|| skip "xvec was built without MPI ($("$xvec" --help 2>&1 | grep 'data parallel in this build'))"
# Open MPI refuses root unless told; several ranks share these 2 cores.
mpi=(mpirun --oversubscribe --mca btl self,vader)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
# In the sanitizer build, Open MPI's own allocations (many in plugins it
# unloads at MPI_Finalize, so no name to suppress) are reported as leaks;
# ours are checked by test_xvec_dp, which needs no MPI. Memory errors are
# still caught here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

make_speech speech 8 8 3 --features mfcc --ceps 20
start_daemon || fail "$daemon_why"
model=(--dataset speech --width 32 --pool-width 48 --embed 16 --chunk 40 --epochs 100
	--noise-eps 0.1 --dropout 0 --log-every 5)

# 1. Equivalence.
"$xvec" train "${model[@]}" --socket "$sock" --batch 32 --steps 20 --lr 1e-5 --out "$tmp/one" \
	>"$tmp/one.log" 2>&1 || { cat "$tmp/one.log"; fail "xvec train, one process"; }
"${mpi[@]}" -np 2 "$xvec" train "${model[@]}" --socket "$sock" --batch 16 --steps 20 --lr 1e-5 --sync-bn \
	--check-replicas --out "$tmp/two" >"$tmp/two.log" 2>&1 \
	|| { cat "$tmp/two.log"; fail "mpirun -np 2 xvec train --sync-bn"; }
cat "$tmp/two.log"
grep -q "data parallel: 2 ranks (MPI" "$tmp/two.log" || fail "rank 0 does not say it runs on 2 ranks"
grep -q "batch 16 per rank = 32 global, batch-norm over all ranks" "$tmp/two.log" \
	|| fail "the data-parallel line does not give the batches"
grep -Eq "the gradient all-reduce took [0-9.]+% of rank 0's time" "$tmp/two.log" \
	|| fail "no all-reduce share in the summary"
[ "$(grep -c '^trained ' "$tmp/two.log")" = 1 ] || fail "not exactly one summary (rank 0 speaks for the job)"
grep -Eq "^waiting for data, per rank: [0-9.]+% [0-9.]+%$" "$tmp/two.log" || fail "no per-rank data wait"
d=$("$diff_tool" "$tmp/one" "$tmp/two") || fail "ckpt_diff"
echo "2 x 16 (sync-bn) vs 1 x 32: $d"
rel=$(echo "$d" | sed -E 's/.* relative ([^ ]+) .*/\1/')
steps=$(echo "$d" | sed -E 's/.* steps ([0-9]+) ([0-9]+)$/\1 \2/')
[ "$steps" = "20 20" ] || fail "steps $steps, want 20 20"
awk -v r="$rel" 'BEGIN { exit !(r <= 1e-5) }' || fail "parameters differ by $rel relative (> 1e-5)"
# The loss sequence agrees too (rank 0 logs the global batch's mean loss).
paste <(grep '^step ' "$tmp/one.log" | awk '{print $8}') <(grep '^step ' "$tmp/two.log" | awk '{print $8}') |
	awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * ($1 < 0 ? -$1 : $1) + 1e-6) bad = 1 } END { exit bad }' \
	|| fail "the logged losses of the two runs differ"
# Per-rank batch-norm (DDP's default): another model, still equal replicas.
"${mpi[@]}" -np 2 "$xvec" train "${model[@]}" --socket "$sock" --batch 16 --steps 10 \
	--check-replicas --out "$tmp/perrank" >"$tmp/perrank.log" 2>&1 \
	|| { cat "$tmp/perrank.log"; fail "mpirun -np 2 xvec train (per-rank batch-norm)"; }
grep -q "batch-norm per rank" "$tmp/perrank.log" || fail "per-rank batch-norm not said"

# 2. Two "nodes": a second feederd with its own copy of the dataset.
node2=$tmp/node2
mkdir -p "$node2/datasets"
cp -r "$datasets/speech" "$node2/datasets/"
node1_pid=$daemon_pid
sock=$node2/feederd.sock datasets=$node2/datasets daemon_log=$node2/feederd.log \
	start_daemon --workers 1 --log-level info || fail "node 2: $daemon_why"
node2_pid=$daemon_pid
bg_pids+=("$node2_pid")
daemon_pid=$node1_pid
# Each rank uses its node's socket, as FEEDER_SOCKET does on a real node.
cat >"$tmp/node.sh" <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" -lt 2 ]; then FEEDER_SOCKET=$sock; else FEEDER_SOCKET=$node2/feederd.sock; fi
export FEEDER_SOCKET
exec "\$@"
EOF
chmod +x "$tmp/node.sh"
"${mpi[@]}" -np 4 "$tmp/node.sh" "$xvec" train "${model[@]}" --batch 8 --steps 12 --check-replicas \
	--out "$tmp/four" >"$tmp/four.log" 2>&1 || { cat "$tmp/four.log"; fail "4 ranks on two daemons"; }
grep -q "data parallel: 4 ranks" "$tmp/four.log" || fail "4 ranks not said"
ranks_of() { grep -o 'rank [0-9]/4' "$1" | sort -u | tr '\n' ' '; }
served="node 1's feederd served $(ranks_of "$tmp/feederd.log"), node 2's $(ranks_of "$node2/feederd.log")"
[ "$served" = "node 1's feederd served rank 0/4 rank 1/4 , node 2's rank 2/4 rank 3/4 " ] || fail "$served"
echo "two nodes: $served"

# 4. Elastic resume (on node 1's daemon).
"${mpi[@]}" -np 2 "$xvec" train "${model[@]}" --socket "$sock" --batch 8 --steps 3 --epochs 1 \
	--trace "$tmp/el-a" --out "$tmp/el" >"$tmp/el.log" 2>&1 || { cat "$tmp/el.log"; fail "elastic: first run"; }
for w in 1 4; do
	b=$(( w == 1 ? 8 : 4 ))
	"${mpi[@]}" -np $w "$xvec" train "${model[@]}" --socket "$sock" --batch $b --epochs 1 \
		--resume "$tmp/el" --trace "$tmp/el-b$w" --out "$tmp/el-$w" >"$tmp/el-$w.log" 2>&1 \
		|| { cat "$tmp/el-$w.log"; fail "elastic: resume with $w ranks"; }
	grep -q "elastic resume: 2 ranks had taken 48 of the 64 samples of epoch 0; $w ranks share the rest" \
		"$tmp/el-$w.log" || { cat "$tmp/el-$w.log"; fail "elastic: no elastic resume line"; }
	cat "$tmp"/el-a.* "$tmp"/el-b$w.* | awk '$1 == 0 {print $2}' | sort -n >"$tmp/el-seen"
	[ "$(wc -l <"$tmp/el-seen")" = 64 ] && [ "$(sort -nu "$tmp/el-seen" | wc -l)" = 64 ] \
		|| fail "elastic 2 -> $w ranks: $(wc -l <"$tmp/el-seen") samples trained on, $(sort -nu "$tmp/el-seen" | wc -l) distinct, of 64"
	echo "elastic: 2 ranks took 48 samples, $w rank(s) the other 16: each of the 64 once"
done

# 3. Node 2's daemon dies mid-run.
spawn "$tmp/killed.log" "${mpi[@]}" -np 4 "$tmp/node.sh" "$xvec" train "${model[@]}" --batch 8 \
	--epochs 100000 --log-every 1 --out "$tmp/killed"
job=$spawned
stepped() {
	kill -0 "$job" 2>/dev/null || { cat "$tmp/killed.log"; fail "the job ended before the kill"; }
	[ "$(grep -c '^step ' "$tmp/killed.log")" -ge 3 ]
}
wait_until 60 stepped
kill -9 "$node2_pid"
t0=$(date +%s)
wait_until 120 exited "$job" \
	|| { cat "$tmp/killed.log"; fail "the job still runs 120 s after the daemon died"; }
wait "$job" && fail "the job succeeded without a daemon"
echo "killed daemon: the job ended $(( $(date +%s) - t0 )) s later; its lines:"
grep '^xvec: rank' "$tmp/killed.log"
# Every rank has its line; node 2's ranks say the daemon went away (one of
# them may still have had a batch in its ring and stop for the other).
for r in 0 1 2 3; do
	[ "$(grep -c "^xvec: rank $r of 4: " "$tmp/killed.log")" = 1 ] || fail "rank $r has no one line"
done
grep -E "^xvec: rank [23] of 4: .*feederd closed the connection" "$tmp/killed.log" >/dev/null \
	|| fail "no rank of node 2 says its daemon went away"
for r in 0 1; do
	grep -E "^xvec: rank $r of 4: (training: )?stopping: another rank failed" "$tmp/killed.log" >/dev/null \
		|| fail "rank $r does not say another rank failed"
done
stop_daemon || fail "$daemon_why"
echo "ok: xvec under mpirun"
