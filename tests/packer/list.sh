#!/bin/bash
# list.sh — packer pack images --list: samples in list order with the listed
# integer labels, classes = max label + 1, class names from the optional
# third column or else the decimal id; paths relative to SRC or to the list's
# folder; comments, blank lines and CRLF accepted. A bad line is a one-line
# error naming the file and line, exit 2, and no DEST.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
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
"$py" - "$tmp/ds.json" "${files[3]}" "${files[0]}" "${files[7]}" "${files[1]}" "${files[3]}" <<'PYEOF' || fail "list content"
import json, sys
ds = json.load(open(sys.argv[1]))
want = list(zip(sys.argv[2:], [5, 0, 2, 5, 2]))
assert ds["header"]["classes"] == 6, ds["header"]
assert ds["labels"] == ["0", "1", "2", "3", "4", "five"], ds["labels"]
got = [(s["name"], s["label"]) for s in ds["samples"]]
assert got == want, (got, want)
PYEOF
for i in 0 1 2 3 4; do
	"$packer" cat "$tmp/ds" $i | cmp -s - "$tmp/src/$(sed -n "$((i + 1))p" <<<"${files[3]}
${files[0]}
${files[7]}
${files[1]}
${files[3]}")" || fail "payload $i"
done

# Without SRC the paths are relative to the list's folder.
cp "$tmp/list.txt" "$tmp/src/list.txt"
expect_rc 0 "$packer" pack images --list "$tmp/src/list.txt" "$tmp/ds2"
expect_rc 0 "$packer" inspect --json "$tmp/ds2"
grep -q '"samples":5,"classes":6' "$tmp/out" || fail "inspect ds2: $(cat "$tmp/out")"

# Bad lines: exit 2, one line naming file:line and the reason, no DEST.
bad() {
	printf "$1" >"$tmp/bad.txt"
	expect_rc 2 "$packer" pack images --list "$tmp/bad.txt" "$tmp/src" "$tmp/bad"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "not one line: $(cat "$tmp/err")"
	grep -q "bad.txt:$2: .*$3" "$tmp/err" || fail "message for '$1': $(cat "$tmp/err")"
	[ -e "$tmp/bad" ] && fail "DEST created for a bad list"
	compgen -G "$tmp/bad.tmp-*" >/dev/null && fail "temporary directory for a bad list"
	return 0
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
grep -q "no entries" "$tmp/err" || fail "empty list message: $(cat "$tmp/err")"
echo "list: ok"
