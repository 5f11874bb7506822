#!/bin/bash
# badinput.sh — usage errors and bad input: a one-line message and exit 2
# (unknown options, missing arguments, empty source, existing DEST, a tree
# with no JPEG, a class folder name that is not UTF-8); non-JPEG and
# non-regular files are skipped with a warning naming them, or fatal with
# --strict; --force replaces DEST; --help and --version work; the read
# commands reject bad arguments the same way.
source "$FEEDER_SOURCE/tests/packer/lib.sh"
one_line() { [ "$(wc -l <"$T/err")" = 1 ] || fail "expected one line on stderr: $(cat "$T/err")"; }
has() { grep -q -- "$1" "$T/err" || fail "stderr lacks '$1': $(cat "$T/err")"; }

expect_rc 0 "$PACKER" --help
grep -q "usage: packer" "$T/out" || fail "--help text"
expect_rc 0 "$PACKER" --version
grep -Eq "^packer [0-9]+\.[0-9]+" "$T/out" || fail "--version text"
expect_rc 2 "$PACKER"; one_line; has "missing command"; has "--help"
expect_rc 2 "$PACKER" frobnicate; one_line; has "unknown command 'frobnicate'"
expect_rc 2 "$PACKER" --bogus; one_line; has "unknown option '--bogus'"
expect_rc 2 "$PACKER" pack; one_line
expect_rc 2 "$PACKER" pack videos a b; one_line; has "unknown kind"

make_tree 12 "$T/src" 3 2
expect_rc 2 "$PACKER" pack images --bogus "$T/src" "$T/ds"; one_line; has "unknown option '--bogus'"
expect_rc 2 "$PACKER" pack images -x "$T/src" "$T/ds"; one_line; has "unknown option '-x'"
expect_rc 2 "$PACKER" pack images "$T/src"; one_line; has "missing"
expect_rc 2 "$PACKER" pack images "$T/src" "$T/ds" extra; one_line; has "unexpected argument"
expect_rc 2 "$PACKER" pack images --resize-shorter abc "$T/src" "$T/ds"; one_line; has "resize-shorter"
expect_rc 2 "$PACKER" pack images --quality 101 --resize-shorter 8 "$T/src" "$T/ds"; one_line
expect_rc 2 "$PACKER" pack images --list; one_line; has "needs an argument"
expect_rc 2 "$PACKER" pack images "$T/missing" "$T/ds"; one_line; has "missing"
[ -e "$T/ds" ] && fail "DEST created by a usage error"

# Empty sources.
mkdir "$T/empty"
expect_rc 2 "$PACKER" pack images "$T/empty" "$T/ds"; one_line; has "no class folders"
mkdir "$T/empty/a" "$T/empty/b"
expect_rc 2 "$PACKER" pack images "$T/empty" "$T/ds"; one_line; has "no files"
echo "not an image" >"$T/empty/a/x.jpg"
expect_rc 2 "$PACKER" pack images "$T/empty" "$T/ds"; has "none of the 1 files"
[ -e "$T/ds" ] && fail "DEST created from an empty source"
compgen -G "$T/ds.tmp-*" >/dev/null && fail "temporary directory left by a failed pack"

# Non-JPEG files and a FIFO are skipped with a warning naming each.
echo "hello" >"$T/src/class_001/notes.txt"
head -c 3000 /dev/urandom >"$T/src/class_002/random.jpg"
mkfifo "$T/src/class_000/pipe.jpg"
expect_rc 0 "$PACKER" pack images "$T/src" "$T/ds"
has "warning: .*class_001/notes.txt: not a JPEG file, skipped"
has "warning: .*class_002/random.jpg: not a JPEG file, skipped"
has "warning: .*class_000/pipe.jpg: not a regular file, skipped"
expect_rc 0 "$PACKER" inspect --json "$T/ds"
grep -q '"samples":12,"classes":3' "$T/out" || fail "skipped files were packed: $(cat "$T/out")"

# Existing DEST: refused without --force, replaced with it.
expect_rc 2 "$PACKER" pack images "$T/src" "$T/ds"; one_line; has "already exists"
rm "$T/src/class_000/pipe.jpg"
rm "$T/src/class_000/"img_000000.jpg
expect_rc 0 "$PACKER" pack images --force "$T/src" "$T/ds"
expect_rc 0 "$PACKER" inspect --json "$T/ds"
grep -q '"samples":11,' "$T/out" || fail "--force did not replace DEST: $(cat "$T/out")"
ls -a "$T" | grep -q 'ds.tmp-' && fail "temporary directory left after --force"
# --force replaces only datasets: never a tree or a folder of other files.
mkdir -p "$T/tree/sub" && echo keep >"$T/tree/sub/file" && echo keep >"$T/tree/file"
expect_rc 2 "$PACKER" pack images --force "$T/src" "$T/tree"; one_line; has "not a dataset"
[ -f "$T/tree/sub/file" ] && [ -f "$T/tree/file" ] || fail "--force deleted files"
rm -r "$T/tree/sub"
expect_rc 2 "$PACKER" pack images --force "$T/src" "$T/tree"; one_line; has "not a dataset"
compgen -G "$T/tree.tmp-*" >/dev/null && fail "temporary directory left by a refused --force"

# --strict: the first bad file is fatal, nothing is left behind.
expect_rc 2 "$PACKER" pack images --strict "$T/src" "$T/ds3"; one_line
has "class_001/notes.txt: not a JPEG file (--strict)"
[ -e "$T/ds3" ] && fail "--strict left DEST"
compgen -G "$T/ds3.tmp-*" >/dev/null && fail "--strict left a temporary directory"

# A class folder whose name is not UTF-8 (Latin-1 "é") would be a label,
# and the label table is UTF-8: refused, naming the folder.
make_tree 4 "$T/l1" 2 2
mv "$T/l1/class_001" "$T/l1/caf"$'\xe9'
expect_rc 2 "$PACKER" pack images "$T/l1" "$T/dsl1"; one_line
has "folder name is not UTF-8 (byte 0xe9 at column 4)"
[ -e "$T/dsl1" ] && fail "DEST created for a non-UTF-8 class"

# pack audio without the audio module is a clear error.
if ! "$PACKER" pack audio --help >/dev/null 2>&1; then
	expect_rc 2 "$PACKER" pack audio a b; one_line; has "audio"
fi

# Read commands.
expect_rc 2 "$PACKER" inspect; one_line; has "missing DEST"
expect_rc 2 "$PACKER" verify --bogus "$T/ds"; one_line; has "unknown option"
expect_rc 2 "$PACKER" cat "$T/ds"; one_line
expect_rc 2 "$PACKER" cat "$T/ds" -3; one_line
expect_rc 2 "$PACKER" cat "$T/ds" 11; one_line; has "out of range"
expect_rc 1 "$PACKER" cat "$T/src" 0; one_line; has "not a dataset"
echo "badinput: ok"
