#!/bin/bash
# confine.sh — where the files of `pack images` may come from. A list may
# name files by absolute paths and by ".." outside SRC, and they are packed
# (people keep such lists); with --confine every entry must resolve inside
# SRC, symbolic links included: one that does not is a one-line error
# naming the list's line (a tree's file by its path), exit 2, no DEST. An
# entry that only passes through ".." or a link and stays inside is fine.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
gen_images "$tmp/src" 6 2 4
gen_images "$tmp/ext" 2 1 5
cd "$tmp/src" && files=(class_00*/*.jpg) && cd - >/dev/null
cd "$tmp/ext" && outs=(class_00*/*.jpg) && cd - >/dev/null
ln -s "../../ext/${outs[0]}" "$tmp/src/class_000/escape.jpg"   # leaves SRC
ln -s "../${files[5]}" "$tmp/src/class_000/inside.jpg"         # stays inside
list() { # lines after the two inside entries
	{ printf '%s\t0\n' "${files[0]}" "class_001/../${files[4]}"; printf '%s\t1\n' "$@"; } >"$tmp/list.txt"
}

# Without --confine an absolute path and a ".." path are packed as named.
list "$tmp/ext/${outs[0]}" "../ext/${outs[1]}"
expect_rc 0 "$packer" pack images --restart none --list "$tmp/list.txt" "$tmp/src" "$tmp/ds"
payload_is "$tmp/ds" 2 "$tmp/ext/${outs[0]}"
payload_is "$tmp/ds" 3 "$tmp/ext/${outs[1]}"

# --confine: each way out is refused by its line; both reading paths
# (files stored as they are, and tiled by worker threads).
for bad in "$tmp/ext/${outs[0]}" "../ext/${outs[1]}" "class_000/escape.jpg" "class_001/../../ext/${outs[0]}"; do
	list class_000/inside.jpg "$bad"
	for mode in "--restart none" "--restart auto"; do
		expect_rc 2 "$packer" pack images $mode --confine --list "$tmp/list.txt" "$tmp/src" "$tmp/c"
		has "list.txt:4: '$bad' resolves outside $tmp/src (--confine)"
		one_line
		no_dest "$tmp/c"
	done
done

# Inside SRC through ".." and a link: packed, the bytes of the files meant.
list class_000/inside.jpg
expect_rc 0 "$packer" pack images --restart none --confine --list "$tmp/list.txt" "$tmp/src" "$tmp/in"
payload_is "$tmp/in" 0 "$tmp/src/${files[0]}"
payload_is "$tmp/in" 1 "$tmp/src/${files[4]}"
payload_is "$tmp/in" 2 "$tmp/src/${files[5]}"

# A tree: its link out is named by its path.
expect_rc 2 "$packer" pack images --confine "$tmp/src" "$tmp/tree"
has "$tmp/src/class_000/escape.jpg: resolves outside $tmp/src (--confine)"
rm "$tmp/src/class_000/escape.jpg"
expect_rc 0 "$packer" pack images --confine "$tmp/src" "$tmp/tree"
echo "confine: ok"
