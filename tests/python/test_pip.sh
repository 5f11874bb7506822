#!/usr/bin/env bash
# test_pip.sh — `pip install ./client/python`: into a fresh
# virtual environment (with the system's site packages for NumPy and cffi:
# no network here), from the source tree, which it leaves as it was (in a
# git checkout, `git status --ignored client/python` is the same before and
# after), with the cffi declarations generated from the headers; then that
# environment's `import feeder` runs a Loader
# against a real feederd with the library named by $FEEDER_LIBRARY, and
# its batches (labels, indices, every pixel) equal those of the package
# configured in the build tree. Without a loadable libfeeder, the import
# fails with an ImportError that says where it looked.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
py=/usr/bin/python3
$py -m venv --help >/dev/null 2>&1 || skip "python3 -m venv is missing (python3-venv)"
$py -m pip --version >/dev/null 2>&1 || skip "pip is missing (python3-pip)"
lib=$build/client/libfeeder.so.0
[ -e "$lib" ] || skip "$lib is not built"

$py -m venv --system-site-packages "$tmp/venv" || fail "python3 -m venv"
# straight from the source tree, which must be left as it was (setup.py
# builds in a temporary directory and generates _cdef.py there)
# (outside a git checkout both are empty: nothing is checked)
git_clean() { git -C "$src" status --porcelain --ignored -- client/python 2>/dev/null; }
before=$(git_clean)
"$tmp/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-cache-dir --quiet \
	"$src/client/python" >"$tmp/pip.log" 2>&1 || fail "pip install: $(tail -5 "$tmp/pip.log")"
after=$(git_clean)
[ "$before" = "$after" ] || fail "pip install left files in client/python:" \
	"$(diff <(echo "$before") <(echo "$after") | grep '^>' | head -5 | tr '\n' ' ')"
ls "$tmp"/venv/lib/python3*/site-packages/feeder/_cdef.py >/dev/null 2>&1 \
	|| fail "the installed package has no generated _cdef.py"

make_images small 20 2 5
start_daemon || fail "$daemon_why"
# after pip and the daemon: only the interpreters that load libfeeder need it
. "$src/tests/python/sanitizer_env.sh"
sanitizer_env "$lib"

cat > "$tmp/run.py" <<'PY'
import hashlib, os, sys
import feeder
where = os.path.dirname(feeder.__file__)
hashes = []
ld = feeder.Loader("small", batch_size=4, seed=7, dtype="uint8", return_index=True,
                   pipeline=feeder.Jpeg(size=32))
for x, y, idx in ld:
    hashes.append(hashlib.sha1(x.tobytes() + y.tobytes() + idx.tobytes()).hexdigest())
    if len(hashes) == 5:
        break
print(where)
print(" ".join(hashes))
PY
cd "$tmp" || fail "cd"
# the pip-installed package, not the build tree's
env -u PYTHONPATH FEEDER_SOCKET="$sock" FEEDER_LIBRARY="$lib" "$tmp/venv/bin/python" "$tmp/run.py" \
	>"$tmp/venv.out" 2>"$tmp/venv.err" || fail "the venv's feeder: $(tail -5 "$tmp/venv.err")"
[[ $(head -1 "$tmp/venv.out") == "$tmp/venv/"* ]] \
	|| fail "feeder was imported from $(head -1 "$tmp/venv.out"), not the venv"
PYTHONPATH="$build/client/python" FEEDER_SOCKET="$sock" $py "$tmp/run.py" >"$tmp/build.out" 2>"$tmp/build.err" \
	|| fail "the build tree's feeder: $(tail -5 "$tmp/build.err")"
[ "$(sed -n 2p "$tmp/venv.out")" = "$(sed -n 2p "$tmp/build.out")" ] \
	|| fail "batches differ: $(sed -n 2p "$tmp/venv.out") vs $(sed -n 2p "$tmp/build.out")"
[ "$(sed -n 2p "$tmp/venv.out" | wc -w)" = 5 ] || fail "not 5 batches"

# no library: a clear ImportError naming what was tried
if env -u PYTHONPATH FEEDER_LIBRARY="$tmp/nope/libfeeder.so.0" "$tmp/venv/bin/python" -c "import feeder" \
	2>"$tmp/imp.err"; then
	fail "import feeder succeeded without a library"
fi
grep -q "ImportError: feeder: cannot load libfeeder; tried $tmp/nope/libfeeder.so.0 (missing)" "$tmp/imp.err" \
	|| fail "unclear ImportError: $(tail -2 "$tmp/imp.err")"
tree="source tree left as it was"
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || tree="source tree not a git checkout: not checked"
echo "PASS: pip-installed feeder in a venv ($tree): 5 batches identical to the build tree's; ImportError: $(tail -1 "$tmp/imp.err")"
