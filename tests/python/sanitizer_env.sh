# sanitizer_env.sh — sourced by the Python tests: in a sanitizer build,
# libfeeder needs the ASan/UBSan runtimes loaded before it, so they are
# preloaded into the (uninstrumented) interpreter; CPython's own allocations
# are not ours to report, so leak checks are turned off for it. In the
# ThreadSanitizer build (whose suites include clients in Python: remote)
# its runtime is preloaded likewise, reports off: the interpreter's threads
# are invisible to it, and the daemon under test is what that build checks.
# Usage: sanitizer_env LIBFEEDER   (exports LD_PRELOAD and ASAN_OPTIONS or
# TSAN_OPTIONS when LIBFEEDER links a sanitizer runtime; does nothing
# otherwise)
sanitizer_env() {
	local lib=$1 pre= rt p
	p=$(ldd "$lib" 2>/dev/null | awk 'index($1, "libtsan.so") == 1 {print $3}')
	if [ -n "$p" ]; then
		export LD_PRELOAD=$p
		export TSAN_OPTIONS=report_bugs=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}
		return 0
	fi
	ldd "$lib" 2>/dev/null | grep -q 'libasan' || return 0
	for rt in libasan.so libubsan.so; do
		p=$(ldd "$lib" | awk -v r="$rt" 'index($1, r) == 1 {print $3}')
		[ -n "$p" ] && pre="$pre${pre:+:}$p"
	done
	export LD_PRELOAD=$pre
	export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
	export ASAN_OPTIONS=${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}
}
