#!/bin/bash
# test_record_flags.sh — records whose header is well formed (its CRC
# right, the payload intact) but whose flags and aux disagree about the
# JPEG's tiling: feederd refuses and replaces them (dsformat_sample_check),
# so packer verify, which is there to prove that a dataset serves, must
# name each of them and exit 1, with and without --decode.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
craft=$FEEDER_SOURCE/tests/fault/craft_dataset.py
# Records must live on overflow pages (larger than half a page).
make_images flags 24 3 5 --resize-shorter 128
"$packer" verify --decode "$datasets/flags" >"$tmp/verify0.out" 2>&1 \
	|| fail "the packed dataset does not verify: $(cat "$tmp/verify0.out")"
# tiled with no interval, tiled with one past 16 bits, a flag bit unknown
crafted="3:1:0 8:1:0xFFFFFFFF 12:0x8001:4"
for c in $crafted; do
	IFS=: read -r i f a <<<"$c"
	"$py" "$craft" "$datasets/flags/data.mdb" "$i" flags "$f" "$a" >/dev/null \
		|| fail "crafting record $i"
done
for opt in "" --decode; do
	"$packer" verify $opt "$datasets/flags" >"$tmp/verify.out" 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "packer verify $opt exited $rc: $(cat "$tmp/verify.out")"
	for i in 3 8 12; do
		grep -q "^sample $i: jpeg sample has flags" "$tmp/verify.out" \
			|| fail "verify $opt did not name sample $i: $(cat "$tmp/verify.out")"
	done
	[ "$(grep -c '^sample ' "$tmp/verify.out")" = 3 ] \
		|| fail "verify $opt names other samples: $(cat "$tmp/verify.out")"
	grep -q " 3 bad" "$tmp/verify.out" || fail "verify $opt summary: $(cat "$tmp/verify.out")"
done

# feederd: the same three, each replaced and logged with the same reason.
start_daemon || fail "$daemon_why"
run_client survive flags 12 >"$tmp/flags.log" 2>&1 || fail "client: $(cat "$tmp/flags.log")"
[ "$(survive_field "$tmp/flags.log" result)" = ok ] || fail "the stream failed: $(cat "$tmp/flags.log")"
for i in 3 8 12; do
	grep -q "dataset 'flags': sample $i is unusable.*jpeg sample has flags" "$tmp/feederd.log" \
		|| fail "feederd did not refuse sample $i"
done
[ "$(grep -c "dataset 'flags': sample [0-9]* is unusable" "$tmp/feederd.log")" = 3 ] \
	|| fail "feederd refused other samples: $(grep unusable "$tmp/feederd.log")"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "ok: record flags: verify and feederd both refused exactly the 3 records whose flags and" \
	"aux disagree ($(survive_field "$tmp/flags.log" replacements) replacements)"
