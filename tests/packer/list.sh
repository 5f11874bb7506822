#!/bin/bash
# list.sh — packer pack images --list: samples in list order with the listed
# integer labels, classes = max label + 1, class names from the optional
# third column or else the decimal id; paths relative to SRC or to the list's
# folder; comments, blank lines and CRLF accepted. A bad line is a one-line
# error naming the file and line, exit 2, and no DEST.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
gen_images "$tmp/src" 8 2 3
cd "$tmp/src" && files=(class_00*/*.jpg) && cd - >/dev/null
{
	printf '# path\tlabel\tname\n'
	printf '%s\t5\tfive\n' "${files[3]}"
	printf '%s\t0\n' "${files[0]}"
	printf '\n'
	printf '%s\t2\r\n' "${files[7]}"
	printf '%s\t5\tfive\n' "${files[1]}"
	printf '%s\t2\n' "${files[3]}"
} >"$tmp/list.txt"
expect_rc 0 "$packer" pack images --restart none --list "$tmp/list.txt" "$tmp/src" "$tmp/ds"
"$py" "$here/dsread.py" "$tmp/ds" >"$tmp/ds.json" || fail "dsread"
listed=("${files[3]}" "${files[0]}" "${files[7]}" "${files[1]}" "${files[3]}")
"$py" - "$tmp/ds.json" "${listed[@]}" <<'PYEOF' || fail "list content"
import json, sys
ds = json.load(open(sys.argv[1]))
want = list(zip(sys.argv[2:], [5, 0, 2, 5, 2]))
assert ds["header"]["classes"] == 6, ds["header"]
assert ds["labels"] == ["0", "1", "2", "3", "4", "five"], ds["labels"]
got = [(s["name"], s["label"]) for s in ds["samples"]]
assert got == want, (got, want)
PYEOF
for i in 0 1 2 3 4; do
	payload_is "$tmp/ds" $i "$tmp/src/${listed[i]}"
done

# Without SRC the paths are relative to the list's folder.
cp "$tmp/list.txt" "$tmp/src/list.txt"
expect_rc 0 "$packer" pack images --list "$tmp/src/list.txt" "$tmp/ds2"
inspect_has "$tmp/ds2" '"samples":5,"classes":6'

# Bad lines: exit 2, one line naming file:line and the reason, no DEST.
bad() {
	printf "$1" >"$tmp/bad.txt"
	expect_rc 2 "$packer" pack images --list "$tmp/bad.txt" "$tmp/src" "$tmp/bad"
	one_line
	has "bad.txt:$2: .*$3"
	no_dest "$tmp/bad"
}
bad "${files[0]}\t1\n${files[1]}\t0\nno-tab-here\n" 3 "no tab"
bad "${files[0]}\t1\n${files[1]}\tx7\n" 2 "label 'x7'"
bad "${files[0]}\t-1\n" 1 "label '-1'"
bad "${files[0]}\t1\tcat\n${files[1]}\t1\tdog\n" 2 "named 'dog'"
bad "\t1\n" 1 "empty path"
# class names are the label table, which is UTF-8 (Latin-1 "é" here)
bad "${files[0]}\t1\tcaf\xe9\n" 1 "class name is not UTF-8 (byte 0xe9 at column 4)"
printf '# only a comment\n' >"$tmp/empty.txt"
expect_rc 2 "$packer" pack images --list "$tmp/empty.txt" "$tmp/src" "$tmp/bad"
has "no entries"
echo "list: ok"
