# lib.sh — shared setup of the packer tests (sourced, not run).
#
# Sets PACKER, PY, a private temporary directory T (removed on exit), and
# helpers: fail MESSAGE (exit 1), make_tree N DIR [CLASSES] [SEED] (JPEGs in
# ImageFolder layout: tools/gen/gen-images when it is built, else mkimages.py),
# expect_rc WANT CMD... (run, keep stderr in $T/err, check the exit status).
set -u
: "${FEEDER_BUILD:?set FEEDER_BUILD to the build root}"
: "${FEEDER_SOURCE:?set FEEDER_SOURCE to the source root}"
PACKER="$FEEDER_BUILD/packer/packer"
PY=/usr/bin/python3
HERE="$FEEDER_SOURCE/tests/packer"
[ -x "$PACKER" ] || { echo "SKIP: $PACKER not built" >&2; exit 77; }
$PY -c 'import lmdb, numpy, PIL' 2>/dev/null || { echo "SKIP: python3 lmdb/numpy/PIL missing" >&2; exit 77; }
T=$(mktemp -d /tmp/feeder-packer-test-XXXXXX)
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

make_tree() {
	local n=$1 dir=$2 k=${3:-4} seed=${4:-1}
	if [ -x "$FEEDER_BUILD/tools/gen/gen-images" ]; then
		"$FEEDER_BUILD/tools/gen/gen-images" "$n" "$dir" --classes "$k" --seed "$seed" >/dev/null ||
			fail "gen-images $n $dir"
	else
		$PY "$HERE/mkimages.py" "$n" "$dir" --classes "$k" --seed "$seed" || fail "mkimages.py $n $dir"
	fi
}

expect_rc() {
	local want=$1 rc
	shift
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = "$want" ] || { cat "$T/err" >&2; fail "'$*' exited $rc, expected $want"; }
}
