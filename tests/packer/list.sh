#!/bin/bash
# list.sh — packer pack images --list: samples in list order with the listed
# integer labels, classes = max label + 1, class names from the optional
# third column or else the decimal id; paths relative to SRC or to the list's
# folder; comments, blank lines and CRLF accepted. A bad line is a one-line
# error naming the file and line, exit 2, and no DEST.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 8 "$T/src" 2 3
cd "$T/src" && files=(class_00*/*.jpg) && cd - >/dev/null
{
	printf '# path\tlabel\tname\n'
	printf '%s\t5\tfive\n' "${files[3]}"
	printf '%s\t0\n' "${files[0]}"
	printf '\n'
	printf '%s\t2\r\n' "${files[7]}"
	printf '%s\t5\tfive\n' "${files[1]}"
	printf '%s\t2\n' "${files[3]}"
} >"$T/list.txt"
expect_rc 0 "$PACKER" pack images --restart none --list "$T/list.txt" "$T/src" "$T/ds"
$PY "$HERE/dsread.py" "$T/ds" >"$T/ds.json" || fail "dsread"
$PY - "$T/ds.json" "${files[3]}" "${files[0]}" "${files[7]}" "${files[1]}" "${files[3]}" <<'PYEOF' || fail "list content"
import json, sys
ds = json.load(open(sys.argv[1]))
want = list(zip(sys.argv[2:], [5, 0, 2, 5, 2]))
assert ds["header"]["classes"] == 6, ds["header"]
assert ds["labels"] == ["0", "1", "2", "3", "4", "five"], ds["labels"]
got = [(s["name"], s["label"]) for s in ds["samples"]]
assert got == want, (got, want)
PYEOF
for i in 0 1 2 3 4; do
	"$PACKER" cat "$T/ds" $i | cmp -s - "$T/src/$(sed -n "$((i + 1))p" <<<"${files[3]}
${files[0]}
${files[7]}
${files[1]}
${files[3]}")" || fail "payload $i"
done

# Without SRC the paths are relative to the list's folder.
cp "$T/list.txt" "$T/src/list.txt"
expect_rc 0 "$PACKER" pack images --list "$T/src/list.txt" "$T/ds2"
expect_rc 0 "$PACKER" inspect --json "$T/ds2"
grep -q '"samples":5,"classes":6' "$T/out" || fail "inspect ds2: $(cat "$T/out")"

# Bad lines: exit 2, one line naming file:line and the reason, no DEST.
bad() {
	printf "$1" >"$T/bad.txt"
	expect_rc 2 "$PACKER" pack images --list "$T/bad.txt" "$T/src" "$T/bad"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line: $(cat "$T/err")"
	grep -q "bad.txt:$2: .*$3" "$T/err" || fail "message for '$1': $(cat "$T/err")"
	[ -e "$T/bad" ] && fail "DEST created for a bad list"
	compgen -G "$T/bad.tmp-*" >/dev/null && fail "temporary directory for a bad list"
	return 0
}
bad "${files[0]}\t1\n${files[1]}\t0\nno-tab-here\n" 3 "no tab"
bad "${files[0]}\t1\n${files[1]}\tx7\n" 2 "label 'x7'"
bad "${files[0]}\t-1\n" 1 "label '-1'"
bad "${files[0]}\t1\tcat\n${files[1]}\t1\tdog\n" 2 "named 'dog'"
bad "\t1\n" 1 "empty path"
# class names are the label table, which is UTF-8 (Latin-1 "é" here)
bad "${files[0]}\t1\tcaf\xe9\n" 1 "class name is not UTF-8 (byte 0xe9 at column 4)"
printf '# only a comment\n' >"$T/empty.txt"
expect_rc 2 "$PACKER" pack images --list "$T/empty.txt" "$T/src" "$T/bad"
grep -q "no entries" "$T/err" || fail "empty list message: $(cat "$T/err")"
echo "list: ok"
