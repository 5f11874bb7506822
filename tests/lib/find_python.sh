# find_python.sh — which Python 3 a shell test or benchmark runs its numeric
# checks and PyTorch peers with; sourced by tests/lib/lib.sh (the shell test
# fixture) and by tests/gpu/run, which needs it without the fixture.
# Debian's /usr/bin/python3 has the python3-* packages here, but on a GPU
# machine the interpreter with numpy and a CUDA PyTorch is usually another
# one (first on PATH, or in a virtual environment), and /usr/bin/python3
# there may have neither.
#
#   py=$(find_python numpy) || skip "$py"
#   py=$(find_python numpy torch)
#
# Tries $FEEDER_PYTHON (when set, the only candidate: a user who names one
# means it), else python3 on PATH, then /usr/bin/python3. Prints the first
# that imports every module named and returns 0; otherwise prints one line
# saying which interpreters lacked what, and returns 1.
find_python() {
	local cands=() tried=() c
	if [ -n "${FEEDER_PYTHON:-}" ]; then
		cands=("$FEEDER_PYTHON")
	else
		c=$(command -v python3 2>/dev/null) && cands+=("$c")
		[ -x /usr/bin/python3 ] && cands+=(/usr/bin/python3)
	fi
	local imports="import ${*:-sys}"
	imports=${imports// /, }
	imports=${imports/import,/import}
	for c in "${cands[@]}"; do
		if "$c" -c "$imports" >/dev/null 2>&1; then
			echo "$c"
			return 0
		fi
		tried+=("$c")
	done
	if [ ${#tried[@]} -eq 0 ]; then
		echo "no python3 found (set FEEDER_PYTHON)"
	else
		echo "no Python with ${*:-python} among: ${tried[*]} (set FEEDER_PYTHON)"
	fi
	return 1
}
