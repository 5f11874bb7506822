#!/bin/bash
# badinput.sh — usage errors and bad input: a one-line message and exit 2
# (unknown options, missing arguments, empty source, existing DEST, a tree
# with no JPEG, a class folder name that is not UTF-8); non-JPEG and
# non-regular files are skipped with a warning naming them, or fatal with
# --strict; --force replaces DEST; --help and --version work; the read
# commands reject bad arguments the same way.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"

expect_rc 0 "$packer" --help
out_has "usage: packer"
expect_rc 0 "$packer" --version
out_has -E "^packer [0-9]+\.[0-9]+"
expect_rc 2 "$packer"; one_line; has "missing command"; has "--help"
expect_rc 2 "$packer" frobnicate; one_line; has "unknown command 'frobnicate'"
expect_rc 2 "$packer" --bogus; one_line; has "unknown option '--bogus'"
expect_rc 2 "$packer" pack; one_line
expect_rc 2 "$packer" pack videos a b; one_line; has "unknown kind"

gen_images "$tmp/src" 12 3 2
expect_rc 2 "$packer" pack images --bogus "$tmp/src" "$tmp/ds"; one_line; has "unknown option '--bogus'"
expect_rc 2 "$packer" pack images -x "$tmp/src" "$tmp/ds"; one_line; has "unknown option '-x'"
expect_rc 2 "$packer" pack images "$tmp/src"; one_line; has "missing"
expect_rc 2 "$packer" pack images "$tmp/src" "$tmp/ds" extra; one_line; has "unexpected argument"
expect_rc 2 "$packer" pack images --resize-shorter abc "$tmp/src" "$tmp/ds"; one_line; has "resize-shorter"
expect_rc 2 "$packer" pack images --quality 101 --resize-shorter 8 "$tmp/src" "$tmp/ds"; one_line
expect_rc 2 "$packer" pack images --list; one_line; has "needs an argument"
expect_rc 2 "$packer" pack images "$tmp/missing" "$tmp/ds"; one_line; has "missing"
no_dest "$tmp/ds"

# Empty sources.
mkdir "$tmp/empty"
expect_rc 2 "$packer" pack images "$tmp/empty" "$tmp/ds"; one_line; has "no class folders"
mkdir "$tmp/empty/a" "$tmp/empty/b"
expect_rc 2 "$packer" pack images "$tmp/empty" "$tmp/ds"; one_line; has "no files"
echo "not an image" >"$tmp/empty/a/x.jpg"
expect_rc 2 "$packer" pack images "$tmp/empty" "$tmp/ds"; has "none of the 1 files"
no_dest "$tmp/ds"

# Non-JPEG files and a FIFO are skipped with a warning naming each.
echo "hello" >"$tmp/src/class_001/notes.txt"
head -c 3000 /dev/urandom >"$tmp/src/class_002/random.jpg"
mkfifo "$tmp/src/class_000/pipe.jpg"
expect_rc 0 "$packer" pack images "$tmp/src" "$tmp/ds"
has "warning: .*class_001/notes.txt: not a JPEG file, skipped"
has "warning: .*class_002/random.jpg: not a JPEG file, skipped"
has "warning: .*class_000/pipe.jpg: not a regular file, skipped"
inspect_has "$tmp/ds" '"samples":12,"classes":3'

# Existing DEST: refused without --force, replaced with it.
expect_rc 2 "$packer" pack images "$tmp/src" "$tmp/ds"; one_line; has "already exists"
rm "$tmp/src/class_000/pipe.jpg" "$tmp/src/class_000/img_000000.jpg"
expect_rc 0 "$packer" pack images --force "$tmp/src" "$tmp/ds"
inspect_has "$tmp/ds" '"samples":11,'
compgen -G "$tmp/ds.tmp-*" >/dev/null && fail "temporary directory left after --force"
# --force replaces only datasets: never a tree or a folder of other files.
mkdir -p "$tmp/tree/sub" && echo keep >"$tmp/tree/sub/file" && echo keep >"$tmp/tree/file"
expect_rc 2 "$packer" pack images --force "$tmp/src" "$tmp/tree"; one_line; has "not a dataset"
[ -f "$tmp/tree/sub/file" ] && [ -f "$tmp/tree/file" ] || fail "--force deleted files"
rm -r "$tmp/tree/sub"
expect_rc 2 "$packer" pack images --force "$tmp/src" "$tmp/tree"; one_line; has "not a dataset"
compgen -G "$tmp/tree.tmp-*" >/dev/null && fail "temporary directory left by a refused --force"

# --strict: the first bad file is fatal, nothing is left behind.
expect_rc 2 "$packer" pack images --strict "$tmp/src" "$tmp/ds3"; one_line
has "class_001/notes.txt: not a JPEG file (--strict)"
no_dest "$tmp/ds3"

# A class folder whose name is not UTF-8 (Latin-1 "é") would be a label,
# and the label table is UTF-8: refused, naming the folder.
gen_images "$tmp/l1" 4 2 2
mv "$tmp/l1/class_001" "$tmp/l1/caf"$'\xe9'
expect_rc 2 "$packer" pack images "$tmp/l1" "$tmp/dsl1"; one_line
has "folder name is not UTF-8 (byte 0xe9 at column 4)"
no_dest "$tmp/dsl1"

# pack audio without the audio module is a clear error.
if ! "$packer" pack audio --help >/dev/null 2>&1; then
	expect_rc 2 "$packer" pack audio a b; one_line; has "audio"
fi

# Read commands.
expect_rc 2 "$packer" inspect; one_line; has "missing DEST"
expect_rc 2 "$packer" verify --bogus "$tmp/ds"; one_line; has "unknown option"
expect_rc 2 "$packer" cat "$tmp/ds"; one_line
expect_rc 2 "$packer" cat "$tmp/ds" -3; one_line
expect_rc 2 "$packer" cat "$tmp/ds" 11; one_line; has "out of range"
expect_rc 1 "$packer" cat "$tmp/src" 0; one_line; has "not a dataset"
echo "badinput: ok"
