# xvec_lib.sh — sourced by the x-vector shell tests: tests/lib/lib.sh, and
# $xvec, the trainer (the test skips where it is not built).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
xvec=$build/xvec/xvec
[ -x "$xvec" ] || skip "xvec is not built (needs OpenBLAS)"
