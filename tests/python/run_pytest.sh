#!/usr/bin/env bash
# run_pytest.sh PYTHON NAME FILE — run one pytest file of the Python client as
# one meson test, and write $FEEDER_BUILD/pytest-counts/NAME.json with
# {"passed", "failed", "skipped"} so that tests/run counts each pytest case
# (NAME must be the meson test's name). Exit 0 when nothing failed, 1 when
# something did, 77 when pytest or NumPy is missing or no case ran.
# In a sanitizer build libfeeder needs the ASan/UBSan runtimes loaded before
# it, so they are preloaded into the (uninstrumented) interpreter.
set -u
py=$1 name=$2 file=$3
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
"$py" -c 'import pytest, numpy, cffi' 2>/dev/null || {
	echo "SKIP: $py lacks pytest, numpy or cffi"; exit 77; }
export PYTHONPATH=$build/client/python${PYTHONPATH:+:$PYTHONPATH}
lib=$build/client/libfeeder.so.0
if ldd "$lib" 2>/dev/null | grep -q 'libasan'; then
	pre=
	for rt in libasan.so libubsan.so; do
		p=$(ldd "$lib" | awk -v r="$rt" 'index($1, r) == 1 {print $3}')
		[ -n "$p" ] && pre="$pre${pre:+:}$p"
	done
	export LD_PRELOAD=$pre
	# CPython's own allocations are not ours to report.
	export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
	export ASAN_OPTIONS=${ASAN_OPTIONS//detect_leaks=1/detect_leaks=0}
fi
counts=$build/pytest-counts
mkdir -p "$counts"
xml=$counts/$name.xml
rm -f "$counts/$name.json" "$xml"
"$py" -m pytest -q -p no:cacheprovider -rs "$file" --junitxml="$xml"
rc=$?
"$py" - "$xml" "$counts/$name.json" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
p = f = s = 0
try:
    root = ET.parse(sys.argv[1]).getroot()
    for ts in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        n = int(ts.get("tests", 0))
        fl = int(ts.get("failures", 0)) + int(ts.get("errors", 0))
        sk = int(ts.get("skipped", 0))
        p += n - fl - sk; f += fl; s += sk
except (OSError, ET.ParseError):
    f = 1
json.dump({"passed": p, "failed": f, "skipped": s}, open(sys.argv[2], "w"))
PY
rm -f "$xml"
if [ $rc -eq 0 ] && grep -q '"passed": 0,.*"skipped": [1-9]' "$counts/$name.json"; then
	echo "SKIP: every case skipped"; exit 77
fi
case $rc in
	0) exit 0 ;;
	5) echo "SKIP: no test collected"; exit 77 ;;
	*) exit 1 ;;
esac
