# victim.sh — sourced by fault tests after lib.sh: a stream that a fault hits
# (e2e_client survive) while an epoch of another dataset runs beside it
# (e2e_client epoch: labels and pixels checked).
# victim_run TAG NAME BATCHES OTHER EPOCH SECONDS COMMAND...: once the stream
# on NAME ($tmp/victimTAG.log) is streaming and the epoch of OTHER
# ($tmp/otherTAG.log) has started, COMMAND injects the fault; the stream's
# client must exit 0 within SECONDS (victim_ms: how long after COMMAND), the
# epoch within 20 s. result and msg: how the stream ended.
victim_run() {
	local log=$tmp/victim$1.log olog=$tmp/other$1.log name=$2 n=$3 other=$4 epoch=$5 limit=$6
	local vpid t0
	shift 6
	spawn_client "$log" survive "$name" "$n"
	vpid=$spawned
	wait_for "$log" STREAMING "$vpid"
	spawn_client "$olog" epoch "$other" "$epoch"
	t0=$(date +%s%N)
	"$@" || fail "injecting the fault: $*"
	wait_client "$vpid" "$log" "$limit"
	victim_ms=$((($(date +%s%N) - t0) / 1000000))
	wait_client "$spawned" "$olog" 20
	bg_pids=()
	result=$(survive_field "$log" result)
	msg=$(survive_field "$log" message)
}
