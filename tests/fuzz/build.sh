#!/usr/bin/env bash
# tests/fuzz/build.sh — build the libFuzzer harnesses with clang.
#
# The project builds with gcc, but libFuzzer, and its coverage feedback, need
# clang's -fsanitize=fuzzer; so each harness is compiled here, together with
# the few project sources its decoder needs, into $FEEDER_BUILD/fuzz/<harness>
# with ASan and UBSan (every UB report fatal). A harness is rebuilt only when a
# source, a header or this script is newer than it.
#
# Usage: tests/fuzz/build.sh [HARNESS...]   (default: all; see HARNESSES)
#        tests/fuzz/build.sh seeds          (rewrite the generated seeds of
#                                            corpus/protocol, dsformat, manifest)
# Env:   FEEDER_BUILD (default: build), FEEDER_SOURCE (default: this tree),
#        CLANG (default: clang).
# Exit:  0 built, 1 a compile failed, 77 no clang with libFuzzer here.
set -eu
src=${FEEDER_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bld=${FEEDER_BUILD:-$src/build}
cc=${CLANG:-clang}
out=$bld/fuzz

HARNESSES="protocol dsformat dataset config jpeg audio features manifest"

# Project sources and libraries per harness.
sources() {
  case "$1" in
    protocol) echo "proto/protocol.c proto/status.c" ;;
    dsformat) echo "proto/dsformat.c proto/crc32c.c proto/status.c" ;;
    manifest) echo "proto/manifest.c proto/dsformat.c proto/crc32c.c proto/status.c" ;;
    dataset) echo "proto/dsstore.c proto/lmdb_check.c proto/dsformat.c proto/crc32c.c proto/status.c" ;;
    config) echo "daemon/config.c proto/protocol.c proto/status.c proto/argtab.c store/s3_url.c" ;;
    jpeg) echo "daemon/jpeg_pipeline.c media/resize.c media/detrand.c media/jpeg_rules.c media/jpeg_huff.c media/jpeg_tiles.c media/image_limit.c proto/protocol.c proto/status.c" ;;
    audio) echo "media/audio_file.c media/resample.c proto/status.c" ;;
    features) echo "daemon/features_pipeline.c media/detrand.c proto/protocol.c proto/dsformat.c proto/crc32c.c proto/status.c" ;;
    *) return 1 ;;
  esac
}
libs() {
  case "$1" in
    jpeg) echo "-ljpeg -lm" ;;
    dataset) echo "-llmdb -lm" ;;
    audio) echo "-lsndfile -lsoxr -lm" ;;
    *) echo "-lm" ;;
  esac
}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "build.sh: $cc not found (install clang; tools/install-deps lists it)" >&2
  exit 77
fi
mkdir -p "$out"
inc=(-I"$src/proto" -I"$src/media" -I"$src/daemon" -I"$src/client" -I"$src/packer" -I"$src/store" -I"$src/tests/fuzz")
cflags=(-std=gnu11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -D_GNU_SOURCE
  -DFEEDER_VERSION='"fuzz"' "${inc[@]}")

# Can this clang link a fuzzer at all? (Debian: libclang-rt-14-dev.) meson
# runs the harnesses' tests at once, so each run probes with files of its
# own: shared ones were removed by one probe under another's clang, which
# then "could not link" and skipped its harness.
probe=$out/.probe-ok
if [ ! -f "$probe" ]; then
  p=$out/probe.$$
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$p.c"
  if ! "$cc" -fsanitize=fuzzer,address,undefined "$p.c" -o "$p" 2>"$p.log"; then
    echo "build.sh: $cc cannot link -fsanitize=fuzzer (install libclang-rt-dev): $(head -1 "$p.log")" >&2
    rm -f "$p" "$p.c" "$p.log"
    exit 77
  fi
  rm -f "$p" "$p.c" "$p.log"
  touch "$probe"
fi

# Newer than $1? Any project header counts, since decoders share them.
stale() {
  local bin=$1; shift
  [ -f "$bin" ] || return 0
  local f
  for f in "$@" "$0" "$src"/proto/*.h "$src"/media/*.h "$src"/daemon/*.h "$src"/packer/*.h "$src"/tests/fuzz/fuzz.h; do
    [ "$f" -nt "$bin" ] && return 0
  done
  return 1
}

if [ "${1:-}" = seeds ]; then
  gen=$out/make_seeds
  files=("$src/tests/fuzz/make_seeds.c" "$src/proto/protocol.c" "$src/proto/dsformat.c"
    "$src/proto/crc32c.c" "$src/proto/status.c" "$src/proto/manifest.c")
  "$cc" "${cflags[@]}" -fsanitize=address,undefined "${files[@]}" -o "$gen"
  mkdir -p "$src/tests/fuzz/corpus/protocol" "$src/tests/fuzz/corpus/dsformat" "$src/tests/fuzz/corpus/manifest"
  "$gen" "$src/tests/fuzz/corpus"
  echo "build.sh: seeds written to $src/tests/fuzz/corpus/{protocol,dsformat,manifest}"
  exit 0
fi

[ $# -gt 0 ] || set -- $HARNESSES
for h in "$@"; do
  if ! srcs=$(sources "$h"); then
    echo "build.sh: unknown harness '$h' (known: $HARNESSES)" >&2
    exit 1
  fi
  files=("$src/tests/fuzz/fuzz_$h.c")
  for s in $srcs; do files+=("$src/$s"); done
  bin=$out/fuzz_$h
  if stale "$bin" "${files[@]}"; then
    # Build beside the target and rename, so a concurrent run of the same
    # harness never executes a half-written binary.
    "$cc" "${cflags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      "${files[@]}" $(libs "$h") -o "$bin.tmp.$$" || { rm -f "$bin.tmp.$$"; exit 1; }
    mv -f "$bin.tmp.$$" "$bin"
    echo "build.sh: built $bin"
  fi
done
