# bench_run.sh — sourced by the benchmark scripts, on top of the shell test
# fixture (tests/lib/lib.sh: src, build, the work folder $tmp and its
# $datasets, the daemon). The GPU ones (xvec_gpu.sh, xvec_quality.sh,
# gpu_pipeline.sh) run unattended on a bare machine with a fixed time budget
# and still say what they did: each step through bench_run, the markdown
# table on stdout, progress on stderr, the exit status of bench_exit; they
# read FEEDER_BUILD (the build tree or an unpacked bundle mirroring it:
# nothing here builds or installs anything for them), LOGDIR and DRY (0/1)
# besides their own variables. The ones run by hand here start with
# bench_build.
#
#   bench_init NAME      LOGDIR (kept; default a new /tmp/NAME.XXXXXX; several
#                        scripts may share one: every file is named NAME.*)
#   bench_probe [TOOL FLAG]   sets gpu (the CUDA device's name) or gpu_why
#                        (why there is none), and DRY (1 without a device,
#                        unless set), from xvec_gpu_bench --probe or TOOL FLAG
#   bench_run STEP SECONDS CMD...
#                        runs CMD under timeout: stdout to NAME.STEP.out,
#                        stderr to NAME.STEP.log, the command line to
#                        NAME.commands, the step, status and seconds to
#                        NAME.status (bench_table.py reads them back for the
#                        table); returns CMD's status (124 when it ran out of
#                        time). 0 counts as ran, 77 as skipped, anything else
#                        as failed (said on stderr)
#   bench_skip STEP REASON   records a step not run, and why
#   bench_daemon STEP ARGS...
#                        start_daemon ARGS on $tmp/STEP.sock (its log in
#                        NAME.STEP.log) under a timeout; sets sock, daemon_pid
#                        (the timeout) and daemon_proc (feederd).
#                        bench_daemon_stop stops it
#   bench_daemon_gpu STEP ARGS...   the same with --gpu 0 where there is a
#                        device, falling back to none (daemon_gpu_why says why)
#   bench_exit           1 if a step failed, 77 if none ran, else 0
#   bench_build [PACKAGES]   Debian PACKAGES installed (tools/install-deps),
#                        the build set up where it is not and brought up to
#                        date, FEEDER_BUILD exported, cores and threads (the
#                        generators' and packer's) all cores, in the sources

# shellcheck source=../lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

bench_init() {
	bench_name=$1
	LOGDIR=${LOGDIR:-$(mktemp -d "/tmp/$bench_name.XXXXXX")}
	mkdir -p "$LOGDIR"
	bench_ran=0 bench_failed=0 daemon_proc='' daemon_gpu_why=''
	: >"$LOGDIR/$bench_name.commands"
	: >"$LOGDIR/$bench_name.status"
	# the daemon lives at most as long as the whole script may
	daemon_wrap=(timeout -k 5 "${DAEMON_BUDGET:-900}")
	daemon_wait=20
	echo "$bench_name: logs in $LOGDIR" >&2
}

bench_probe() {
	local probe=${1:-$build/tests/xvec_cuda/xvec_gpu_bench}
	gpu='' gpu_why=''
	if [ ! -x "$probe" ]; then
		gpu_why="this build has no CUDA tools ($probe)"
	elif ! gpu=$(timeout 60 "$probe" "${2:---probe}" 2>&1); then
		# the tool says "xvec_gpu_bench: WHY" or "SKIP: WHY"
		gpu_why=${gpu#*: }
		gpu=
	fi
	DRY=${DRY:-$([ -n "$gpu_why" ] && echo 1 || echo 0)}
}

bench_run() {
	local step=$1 budget=$2 rc
	shift 2
	printf '%s\t%s\n' "$step" "$*" >>"$LOGDIR/$bench_name.commands"
	echo "+ [$step, ${budget}s] $*" >&2
	local t0=$SECONDS
	timeout -k 5 "$budget" "$@" >"$LOGDIR/$bench_name.$step.out" 2>"$LOGDIR/$bench_name.$step.log"
	rc=$?
	printf '%s\t%s\t%s\n' "$step" "$rc" "$((SECONDS - t0))" >>"$LOGDIR/$bench_name.status"
	echo "  [$step] exit $rc after $((SECONDS - t0)) s" >&2
	case $rc in
	0) bench_ran=$((bench_ran + 1)) ;;
	77) echo "  [$step] skipped: $(tail -n 1 "$LOGDIR/$bench_name.$step.log")" >&2 ;;
	124 | 137)
		bench_failed=$((bench_failed + 1))
		echo "  [$step] FAILED: out of time (${budget} s)" >&2 ;;
	*)
		bench_failed=$((bench_failed + 1))
		echo "  [$step] FAILED: $(tail -n 3 "$LOGDIR/$bench_name.$step.log" | tr '\n' ' ')" >&2 ;;
	esac
	return $rc
}

bench_skip() {
	printf '%s\tskip\t%s\n' "$1" "$2" >>"$LOGDIR/$bench_name.status"
	echo "  [$1] skipped: $2" >&2
}

bench_daemon() {
	local step=$1
	shift
	sock=$tmp/$step.sock
	daemon_log=$LOGDIR/$bench_name.$step.log
	: >"$daemon_log"
	printf '%s\t%s\n' "$step" "feederd --socket $sock --datasets $datasets $*" >>"$LOGDIR/$bench_name.commands"
	if start_daemon --log-level warning "$@"; then
		# feederd itself, under timeout: for its CPU time in /proc
		daemon_proc=$(cat "/proc/$daemon_pid/task/$daemon_pid/children" 2>/dev/null)
		daemon_proc=${daemon_proc%% *}
		return 0
	fi
	bench_failed=$((bench_failed + 1))
	printf '%s\tfail\t%s\n' "$step" "$daemon_why" >>"$LOGDIR/$bench_name.status"
	echo "  [$step] FAILED: $daemon_why" >&2
	return 1
}

# Where the --gpu 0 daemon does not start, one without the GPU (STEP_cpu),
# so that the CPU rows still run.
bench_daemon_gpu() {
	local step=$1
	shift
	daemon_gpu_why=$gpu_why
	if [ -z "$gpu_why" ]; then
		bench_daemon "$step" "$@" --gpu 0 && return 0
		daemon_gpu_why="feederd --gpu 0 did not start (see $bench_name.$step.log)"
		step=${step}_cpu
	fi
	bench_daemon "$step" "$@"
}

bench_daemon_stop() {
	stop_daemon 10 || :
}

bench_build() {
	cd "$src" || exit 1
	export FEEDER_BUILD=$build
	cores=$(nproc)
	threads=$cores
	[ -z "${1:-}" ] || FEEDER_DEPS_EXTRA=$1 tools/install-deps
	[ -f "$build/build.ninja" ] || meson setup "$build" -Dwerror=true >/dev/null
	ninja -C "$build" >/dev/null
}

bench_exit() {
	echo "$bench_name: $bench_ran steps ran, $bench_failed failed (logs in $LOGDIR)" >&2
	if [ "$bench_failed" -gt 0 ]; then
		exit 1
	elif [ "$bench_ran" -eq 0 ]; then
		exit 77
	fi
	exit 0
}
