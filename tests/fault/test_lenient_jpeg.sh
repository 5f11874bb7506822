#!/bin/bash
# test_lenient_jpeg.sh — a JPEG that libjpeg decodes without a warning but
# feederd's own Huffman decoder (media/jpeg_huff.c) refuses: a byte or two
# put before its EOI marker, which libjpeg has read ahead and drops silently.
# Stored as it is (--restart none), it must not be lost: packer verify
# --decode passes it and counts it, and feederd delivers it with libjpeg's
# pixels (e2e_client epoch: every sample at its place, pixels as
# jpeg_pipeline_reference, which decodes with libjpeg) and counts it in
# feeder_jpeg_fallbacks_total. The image is one row of MCUs high, so that
# every crop decodes to the end of the scan, where the bytes are.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
command -v jpegtran >/dev/null && command -v djpeg >/dev/null \
	|| fail "jpegtran and djpeg (libjpeg-turbo-progs, tools/install-deps) are needed"
gen_images "$tmp/src" 11 2 9
first=$(ls "$tmp/src/class_000" | head -1)
# How many bytes libjpeg has read ahead at the scan's end depends on the
# data: the first count of extra bytes (and crop) that djpeg is silent about.
made=
for w in 96 128; do
	jpegtran -crop ${w}x16+0+0 -outfile "$tmp/small.jpg" "$tmp/src/class_000/$first" || fail "jpegtran"
	for n in 1 2 3; do
		{ head -c -2 "$tmp/small.jpg"; head -c $n /dev/zero | tr '\0' '\022'; printf '\xff\xd9'; } \
			>"$tmp/src/class_000/lenient.jpg"
		djpeg -outfile /dev/null "$tmp/src/class_000/lenient.jpg" 2>"$tmp/djpeg.err" \
			&& [ ! -s "$tmp/djpeg.err" ] && made="${w}x16, $n extra" && break 2
	done
done
[ -n "$made" ] || fail "djpeg warns about every variant: $(cat "$tmp/djpeg.err")"
pack_images lenient "$tmp/src" --restart none

"$packer" verify --decode "$datasets/lenient" >"$tmp/verify.out" 2>&1 \
	|| fail "packer verify --decode: $(cat "$tmp/verify.out")"
grep -q "12 samples.* 0 bad" "$tmp/verify.out" || fail "verify: $(cat "$tmp/verify.out")"
grep -q ": 1 decoded by libjpeg's Huffman decoder" "$tmp/verify.out" \
	|| fail "verify did not count the fallback: $(cat "$tmp/verify.out")"

# /metrics where feederd has it (libmicrohttpd)
if start_daemon --metrics-listen 127.0.0.1:0; then
	metrics_port
else
	grep -q "without libmicrohttpd" "$daemon_log" || fail "$daemon_why"
	port=
	start_daemon || fail "$daemon_why"
fi
run_client epoch lenient 1 >"$tmp/epoch.log" 2>&1 || fail "epoch: $(cat "$tmp/epoch.log")"
grep -q "unusable" "$tmp/feederd.log" && fail "feederd replaced a sample: $(grep unusable "$tmp/feederd.log")"
# published once a tick: wait for the epoch's count
fallbacks_one() {
	count=$("$py" -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith("feeder_jpeg_fallbacks_total "): print(int(float(l.split()[1])))' \
		"http://127.0.0.1:$port/metrics") || fail "scraping /metrics"
	[ "$count" = 1 ]
}
count=
[ -z "$port" ] || wait_until 2 fallbacks_one || fail "feeder_jpeg_fallbacks_total is '$count', not 1"
daemon_alive
stop_daemon || fail "$daemon_why"
echo "ok: lenient JPEG ($made): verify --decode passed and counted it; feederd delivered it with" \
	"libjpeg's pixels ($(samples_checked "$tmp/epoch.log") samples checked)" \
	"${count:+and counted $count fallback in /metrics}"
