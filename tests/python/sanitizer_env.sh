# sanitizer_env.sh — sourced by the Python tests: in a sanitizer build,
# libfeeder needs the ASan/UBSan runtimes loaded before it, so they are
# preloaded into the (uninstrumented) interpreter; CPython's own allocations
# are not ours to report, so leak checks are turned off for it.
# Usage: sanitizer_env LIBFEEDER   (exports LD_PRELOAD and ASAN_OPTIONS when
# LIBFEEDER links the ASan runtime; does nothing otherwise)
sanitizer_env() {
	local lib=$1 pre= rt p
	ldd "$lib" 2>/dev/null | grep -q 'libasan' || return 0
	for rt in libasan.so libubsan.so; do
		p=$(ldd "$lib" | awk -v r="$rt" 'index($1, r) == 1 {print $3}')
		[ -n "$p" ] && pre="$pre${pre:+:}$p"
	done
	export LD_PRELOAD=$pre
	export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
	export ASAN_OPTIONS=${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}
}
