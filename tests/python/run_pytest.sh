#!/usr/bin/env bash
# run_pytest.sh PYTHON NAME FILE — run one pytest file of the Python client as
# one meson test, and write $FEEDER_BUILD/pytest-counts/NAME.json with
# {"passed", "failed", "skipped", "skipped_gpu"} so that tests/run counts each
# pytest case (NAME must be the meson test's name); skipped_gpu counts the
# skips whose reason is the lack of a CUDA device, the only ones strict mode
# (tests/run --strict) lets pass. Exit 0 when nothing failed, 1 when
# something did, 77 when pytest or NumPy is missing or no case ran.
# In a sanitizer build the ASan/UBSan runtimes are preloaded (sanitizer_env.sh).
set -u
py=$1 name=$2 file=$3
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
"$py" -c 'import pytest, numpy, cffi' 2>/dev/null || {
	echo "SKIP: $py lacks pytest, numpy or cffi"; exit 77; }
export PYTHONPATH=$build/client/python${PYTHONPATH:+:$PYTHONPATH}
lib=$build/client/libfeeder.so.0
. "$(dirname "$0")/sanitizer_env.sh"
sanitizer_env "$lib"
counts=$build/pytest-counts
mkdir -p "$counts"
# conftest.py writes them; a run that never got that far failed
export FEEDER_PYTEST_COUNTS=$counts/$name.json
echo '{"passed": 0, "failed": 1, "skipped": 0, "skipped_gpu": 0}' >"$FEEDER_PYTEST_COUNTS"
"$py" -m pytest -q -p no:cacheprovider -rs "$file"
rc=$?
if [ $rc -eq 0 ] && grep -q '"passed": 0,.*"skipped": [1-9]' "$counts/$name.json"; then
	echo "SKIP: every case skipped"; exit 77
fi
case $rc in
	0) exit 0 ;;
	5) echo "SKIP: no test collected"; exit 77 ;;
	*) exit 1 ;;
esac
