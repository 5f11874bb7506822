#!/usr/bin/env bash
# test_gen_images.sh — checks tools/gen/gen-images end to end through its
# source-tree wrapper: ImageFolder layout, that every file is a 4:2:0 JPEG of
# ImageNet-like geometry and quality with photo-like (not flat) content, the
# file-size range, determinism per seed (and independence of the thread
# count), and the usage errors. Exit 0 pass, 1 fail, 77 skip.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
gen="$src/tools/gen/gen-images"
need_python PIL

# Usage errors: exit 2 with a single line on stderr.
expect_usage() {
	expect_rc 2 "$gen" "$@"
	[[ $(grep -c '' "$tmp/err") -eq 1 ]] || fail "gen-images $* printed more than one line: $(cat "$tmp/err")"
}
for args in "" 5 "abc $tmp/x" "0 $tmp/x" "5 $tmp/x --classes 0" "5 $tmp/x --classes 6" \
	"5 $tmp/x --seed -1" "5 $tmp/x --seed 12x" "5 $tmp/x --threads 0" "5 $tmp/x --bogus" \
	"5 $tmp/x --classes"; do
	expect_usage $args
done
[[ ! -e "$tmp/x" ]] || fail "a usage error created the output directory"

# The wrapper says clearly when the binary is not built.
out="$(FEEDER_BUILD="$tmp/nobuild" "$gen" 3 "$tmp/x" 2>&1)" && fail "wrapper ran without a build"
[[ "$out" == *"not built"* ]] || fail "wrapper message unclear: $out"

"$gen" 30 "$tmp/a" --classes 3 --seed 7 --threads 2 >"$tmp/a.log" || fail "generation failed"
grep -q '^gen-images: 30 images, 3 classes, ' "$tmp/a.log" || fail "no summary line: $(cat "$tmp/a.log")"
"$gen" 30 "$tmp/b" --classes 3 --seed 7 --threads 1 >/dev/null || fail "second generation failed"
"$gen" 30 "$tmp/c" --classes 3 --seed 8 >/dev/null || fail "third generation failed"
diff -r "$tmp/a" "$tmp/b" >/dev/null || fail "same seed gave different bytes (threads 2 vs 1)"
same=0
for f in "$tmp"/a/*/*.jpg; do
	cmp -s "$f" "$tmp/c/${f#"$tmp/a/"}" && same=$((same + 1))
done
[[ $same -eq 0 ]] || fail "$same files identical across seeds 7 and 8"

# An existing, non-empty DIR needs --force.
expect_usage 30 "$tmp/a" --classes 3 --seed 7
"$gen" 30 "$tmp/a" --classes 3 --seed 7 --force >/dev/null || fail "--force run failed"
diff -r "$tmp/a" "$tmp/b" >/dev/null || fail "--force rerun changed the bytes"

"$py" - "$tmp/a" <<'PYEOF' || exit 1
import os, re, sys
from PIL import Image, ImageStat
from PIL.JpegImagePlugin import get_sampling

root = sys.argv[1]
def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)

# libjpeg's standard luminance table, scaled the way tjCompress2 does.
STD = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
       14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
       18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
       49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]
def table(q):
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return sorted(min(255, max(1, (v * scale + 50) // 100)) for v in STD)
QUALITY = {tuple(table(q)): q for q in range(100, 0, -1)}

classes = sorted(os.listdir(root))
if classes != ["class_000", "class_001", "class_002"]:
    fail("class folders are %s" % classes)
sizes, qualities, orient = [], set(), set()
for k, cls in enumerate(classes):
    names = sorted(os.listdir(os.path.join(root, cls)))
    if len(names) != 10:
        fail("%s holds %d files, expected 10" % (cls, len(names)))
    for name in names:
        m = re.fullmatch(r"img_(\d{6})\.jpg", name)
        if not m or int(m.group(1)) % 3 != k:
            fail("unexpected file %s/%s" % (cls, name))
        path = os.path.join(root, cls, name)
        sizes.append(os.path.getsize(path))
        im = Image.open(path)
        if im.format != "JPEG" or im.mode != "RGB":
            fail("%s is %s %s" % (path, im.format, im.mode))
        if get_sampling(im) != 2:
            fail("%s is not 4:2:0" % path)
        q = QUALITY.get(tuple(sorted(im.quantization[0])))
        if q is None or not 85 <= q <= 95:
            fail("%s has quality %s, expected 85..95" % (path, q))
        qualities.add(q)
        im.load()
        w, h = im.size
        if not 375 <= min(w, h) <= 500:
            fail("%s is %dx%d: shorter side outside 375..500" % (path, w, h))
        if not 3 / 4 <= w / h <= 16 / 9:
            fail("%s is %dx%d: aspect outside 3:4..16:9" % (path, w, h))
        orient.add(w >= h)
        # Photo-like: spread of tones, many colours, and fine detail
        # (mean absolute difference between horizontal neighbours).
        g = im.convert("L")
        std = ImageStat.Stat(g).stddev[0]
        colours = len(im.getcolors(w * h))
        px = g.tobytes()
        detail = sum(abs(px[i] - px[i + 1]) for i in range(0, len(px) - 1, 7)) / (len(px) // 7)
        if std < 10 or colours < 10000 or detail < 2.0:
            fail("%s looks flat: stddev %.1f, %d colours, detail %.2f" % (path, std, colours, detail))
mean = sum(sizes) / len(sizes)
print("sizes: mean %.1f KB, min %.1f KB, max %.1f KB; qualities %s" %
      (mean / 1e3, min(sizes) / 1e3, max(sizes) / 1e3, sorted(qualities)))
if min(sizes) < 15000 or max(sizes) > 400000 or not 50000 <= mean <= 150000:
    fail("file sizes out of range")
if len(qualities) < 3:
    fail("quality does not vary: %s" % sorted(qualities))
if orient != {True, False}:
    fail("expected both landscape and portrait images")
PYEOF
echo "PASS"
