#!/bin/bash
# confine.sh — where the files of `pack images` may come from. A list may
# name files by absolute paths and by ".." outside SRC, and they are packed
# (people keep such lists); with --confine every entry must resolve inside
# SRC, symbolic links included: one that does not is a one-line error
# naming the list's line (a tree's file by its path), exit 2, no DEST. An
# entry that only passes through ".." or a link and stays inside is fine.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
make_tree 6 "$T/src" 2 4
make_tree 2 "$T/ext" 1 5
cd "$T/src" && files=(class_00*/*.jpg) && cd - >/dev/null
cd "$T/ext" && outs=(class_00*/*.jpg) && cd - >/dev/null
ln -s "../../ext/${outs[0]}" "$T/src/class_000/escape.jpg"   # leaves SRC
ln -s "../${files[5]}" "$T/src/class_000/inside.jpg"         # stays inside
list() { # lines after the two inside entries
	{ printf '%s\t0\n' "${files[0]}" "class_001/../${files[4]}"; printf '%s\t1\n' "$@"; } >"$T/list.txt"
}

# Without --confine an absolute path and a ".." path are packed as named.
list "$T/ext/${outs[0]}" "../ext/${outs[1]}"
expect_rc 0 "$PACKER" pack images --restart none --list "$T/list.txt" "$T/src" "$T/ds"
"$PACKER" cat "$T/ds" 2 | cmp -s - "$T/ext/${outs[0]}" || fail "absolute entry: other bytes"
"$PACKER" cat "$T/ds" 3 | cmp -s - "$T/ext/${outs[1]}" || fail "'..' entry: other bytes"

# --confine: each way out is refused by its line; both reading paths
# (files stored as they are, and tiled by worker threads).
n=0
for bad in "$T/ext/${outs[0]}" "../ext/${outs[1]}" "class_000/escape.jpg" "class_001/../../ext/${outs[0]}"; do
	list class_000/inside.jpg "$bad"
	for mode in "--restart none" "--restart auto"; do
		expect_rc 2 "$PACKER" pack images $mode --confine --list "$T/list.txt" "$T/src" "$T/c$n"
		grep -q "list.txt:4: '$bad' resolves outside $T/src (--confine)" "$T/err" \
			|| fail "$mode --confine, line 4 '$bad': $(cat "$T/err")"
		[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
		[ ! -e "$T/c$n" ] || fail "a dataset was left behind"
		n=$((n + 1))
	done
done

# Inside SRC through ".." and a link: packed, the bytes of the files meant.
list class_000/inside.jpg
expect_rc 0 "$PACKER" pack images --restart none --confine --list "$T/list.txt" "$T/src" "$T/in"
for i in 0 1 2; do
	want=$(sed -n "$((i + 1))p" <<<"${files[0]}
${files[4]}
${files[5]}")
	"$PACKER" cat "$T/in" $i | cmp -s - "$T/src/$want" || fail "confined entry $i: other bytes"
done

# A tree: its link out is named by its path.
expect_rc 2 "$PACKER" pack images --confine "$T/src" "$T/tree"
grep -q "$T/src/class_000/escape.jpg: resolves outside $T/src (--confine)" "$T/err" \
	|| fail "tree --confine: $(cat "$T/err")"
rm "$T/src/class_000/escape.jpg"
expect_rc 0 "$PACKER" pack images --confine "$T/src" "$T/tree"
echo "confine: ok"
