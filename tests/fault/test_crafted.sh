#!/bin/bash
# test_crafted.sh — datasets damaged on purpose: one with
# a record whose length runs far past data.mdb (it crashed feederd and
# packer verify with SIGSEGV), one with a record whose overflow page points
# past the file (LMDB's MDB_PAGE_NOTFOUND, after which every later read of
# the same transaction failed: one bad page took the whole dataset down).
# packer verify must report exactly that one record and exit 1; feederd
# must replace exactly that record, keep serving it and everyone else.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
craft=$FEEDER_SOURCE/tests/fault/craft_dataset.py
# Records must live on overflow pages (larger than half a page).
gen_images "$tmp/src" 40 4 21
for name in long bad good; do pack_images $name "$tmp/src" --resize-shorter 128; done
"$py" "$craft" "$datasets/long/data.mdb" 5 overlong || fail "crafting long"
"$py" "$craft" "$datasets/bad/data.mdb" 7 badpage || fail "crafting bad"

for name in long bad; do
	"$packer" verify "$datasets/$name" >"$tmp/verify-$name.out" 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "packer verify $name exited $rc: $(cat "$tmp/verify-$name.out")"
	[ "$(grep -c '^sample ' "$tmp/verify-$name.out")" = 1 ] \
		|| fail "verify $name reports other than one sample: $(cat "$tmp/verify-$name.out")"
done
grep -q "^sample 5: .*runs outside data.mdb" "$tmp/verify-long.out" \
	|| fail "verify long: $(cat "$tmp/verify-long.out")"
grep -q "^sample 7: " "$tmp/verify-bad.out" || fail "verify bad: $(cat "$tmp/verify-bad.out")"

start_daemon || fail "$daemon_why"
for name in long bad; do
	run_client survive "$name" 30 >"$tmp/$name.log" 2>&1 || fail "client on $name: $(cat "$tmp/$name.log")"
	[ "$(survive_field "$tmp/$name.log" result)" = ok ] \
		|| fail "the stream on $name failed: $(cat "$tmp/$name.log")"
	repl=$(survive_field "$tmp/$name.log" replacements)
	[ "$repl" -ge 1 ] || fail "no replacement on $name"
done
grep -q "dataset 'long': sample 5 is unusable" "$tmp/feederd.log" || fail "sample 5 of long not logged"
grep -q "dataset 'bad': sample 7 is unusable" "$tmp/feederd.log" || fail "sample 7 of bad not logged"
[ "$(grep -c "dataset 'bad': sample [0-9]* is unusable" "$tmp/feederd.log")" = 1 ] \
	|| fail "more than one sample of bad is unusable: $(grep unusable "$tmp/feederd.log")"
run_client epoch good 1 >"$tmp/good.log" 2>&1 || fail "good dataset: $(cat "$tmp/good.log")"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "ok: crafted: verify named the one damaged record of each; feederd replaced exactly it" \
	"($(survive_field "$tmp/long.log" replacements) and $(survive_field "$tmp/bad.log" replacements)" \
	"replacements in 30 batches) and served the other dataset ($(samples_checked "$tmp/good.log") samples checked)"
