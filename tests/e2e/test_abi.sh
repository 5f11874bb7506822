#!/bin/bash
# test_abi.sh — libfeeder.so exports only feeder_* (its version script), has
# a soname, and its pkg-config file lets a program that includes only the
# public header compile and link.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
lib=$build/client/libfeeder.so
[ -e "$lib" ] || fail "$lib not built"
command -v nm >/dev/null || skip "nm not installed"
syms=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//')
[ -n "$syms" ] || fail "no symbols exported"
bad=$(echo "$syms" | grep -v '^feeder_')
[ -z "$bad" ] && echo "exported: $(echo $syms)" || fail "symbols outside feeder_*: $bad"
for want in feeder_connect feeder_disconnect feeder_stream_open feeder_stream_next feeder_batch_release \
	    feeder_stream_close feeder_strerror feeder_last_error feeder_stream_pin feeder_stream_opts_init \
	    feeder_set_reconnect feeder_get_reconnects; do
	echo "$syms" | grep -qx "$want" || fail "$want is not exported"
done
objdump -p "$lib" | grep -q 'SONAME *libfeeder.so.0' || fail "no soname libfeeder.so.0"
pc=$build/meson-private/feeder.pc
[ -f "$pc" ] || fail "no pkg-config file $pc"
grep -q '^Libs:.*-lfeeder' "$pc" || fail "feeder.pc lacks -lfeeder"
grep -q '^Name: feeder' "$pc" || fail "feeder.pc lacks its name"
cat > "$tmp/use.c" <<'C'
#include <feeder.h>
#include <stdio.h>
int main(void)
{
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	printf("%s %u\n", feeder_strerror(FEEDER_EEND), o.batch);
	return 0;
}
C
# A sanitizer build of the library needs the sanitizer runtime first.
san=()
ldd "$lib" | grep -q libasan && san=(-fsanitize=address,undefined)
cc -std=c11 -Wall -Wextra -Werror -pedantic "${san[@]}" -I"$src/client" -I"$src/proto" "$tmp/use.c" -L"$build/client" -lfeeder \
	-o "$tmp/use" || fail "a program using only feeder.h does not build"
out=$(LD_LIBRARY_PATH=$build/client "$tmp/use") || fail "the program does not run"
[ "$out" = "$(LD_LIBRARY_PATH=$build/client "$tmp/use")" ] && echo "program: $out"
case "$out" in *" 32") ;; *) fail "unexpected output '$out'";; esac
echo "ok: ABI"
