#!/usr/bin/env bash
# test_bundle.sh — tools/bundle makes a bundle that works on its own: built in
# a build directory of its own, which is then moved away, unpacked in another
# directory, used from a clean environment (env -i), its Python client's
# cffi installed privately for a Python that lacks it, and tests/gpu/run run
# from it end to end (the dry run: the GPU measurements skip with their
# reason, the programs and the CPU parts run). Exit 0 pass, 1 fail.
set -u
src=${FEEDER_SOURCE:?FEEDER_SOURCE must name the source directory}
tmp=$(mktemp -d /tmp/feeder-bundle-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	[ -s "$tmp/out/summary.txt" ] && { echo "--- summary.txt ---"; cat "$tmp/out/summary.txt"; }
	exit 1
}
clean_env=(env -i HOME="$tmp/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8)
mkdir -p "$tmp/home"

t0=$(date +%s)
"$src/tools/bundle" --build "$tmp/build" "$tmp/feeder.tar.gz" >"$tmp/bundle.log" 2>&1 ||
	fail "tools/bundle: $(tail -n 3 "$tmp/bundle.log")"
echo "tools/bundle: $(grep -E '^bundle: .*(compressed|look for)' "$tmp/bundle.log" | tr '\n' ' ')($(($(date +%s) - t0)) s)"
size=$(stat -c %s "$tmp/feeder.tar.gz")
[ "$size" -lt 60000000 ] || fail "the bundle is $size bytes, over 60 MB"

# Nothing may come from the build tree from here on.
mv "$tmp/build" "$tmp/build.away"
mkdir -p "$tmp/elsewhere"
tar -xzf "$tmp/feeder.tar.gz" -C "$tmp/elsewhere" || fail "cannot unpack the bundle"
b=$(echo "$tmp"/elsewhere/feeder-*)
[ -f "$b/env.sh" ] || fail "no env.sh at the bundle's top"
grep -q "$tmp/build" "$b/test/suites.sh" && fail "test/suites.sh names the build tree"
rpath=$(readelf -d "$b/bin/feederd" | grep -E 'RPATH|RUNPATH')
[[ $rpath == *'[$ORIGIN/../lib]'* ]] || fail "bin/feederd's RPATH is not \$ORIGIN/../lib: $rpath"

# The programs from a clean environment.
out=$("${clean_env[@]}" bash -c '. "$1/env.sh" && feederd --version && packer --help 2>&1 | head -n 1 &&
	xvec train --help 2>&1 | tail -n 1 && man -w packer' _ "$b" 2>&1) ||
	fail "env.sh and the programs in a clean environment: $out"
echo "$out" | sed 's/^/clean env: /'
[[ $out == *"$b/share/man"* ]] || fail "man does not find packer(1) in the bundle: $out"

# A Python without cffi (a venv without system packages) gets the bundled
# wheel, unpacked privately, and loads libfeeder through it.
/usr/bin/python3 -m venv --without-pip "$tmp/venv" || fail "cannot make a venv"
"$tmp/venv/bin/python" -c 'import cffi' 2>/dev/null && fail "the venv has cffi: the test proves nothing"
out=$("${clean_env[@]}" FEEDER_PYTHON="$tmp/venv/bin/python" bash -c '. "$1/env.sh" &&
	"$FEEDER_PYTHON" -c "
import os, cffi
ffi = cffi.FFI()
ffi.cdef(\"const char *feeder_strerror(int code);\")
lib = ffi.dlopen(os.environ[\"FEEDER_LIBRARY\"])
print(\"cffi\", cffi.__version__, \"from\", os.path.dirname(os.path.dirname(cffi.__file__)) + \":\",
      ffi.string(lib.feeder_strerror(-10001)).decode())
"' _ "$b" 2>&1) || fail "cffi for a Python without it: $out"
echo "venv without cffi: $out"
[[ $out == *"$b/python-deps/"* ]] || fail "cffi did not come from the bundle's private folder: $out"

# The prepared GPU run, dry.
t0=$(date +%s)
"${clean_env[@]}" "$b/test/src/tests/gpu/run" "$tmp/out" >"$tmp/run.log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
cat "$tmp/out/summary.txt"
[ "$rc" -eq 0 ] || fail "tests/gpu/run exited $rc"
for s in env smoke correctness trainer quality preprocess; do
	grep -qE "^$s: (ok|skipped)" "$tmp/out/summary.txt" || fail "step $s neither ran nor skipped"
done
grep -q 'every library found' "$tmp/out/summary.txt" || fail "ldd found missing libraries"
grep -qE '^  [0-9]+ passed, 0 failed' "$tmp/out/summary.txt" || fail "a correctness test failed"
grep -q 'python Loader: 6 batches' "$tmp/out/summary.txt" || fail "the Python Loader did not run"
echo "ok: bundle of $((size / 1000000)) MB, self-contained; tests/gpu/run dry run in $secs s"
