#!/bin/bash
# sample_path_symbols.sh — feederd checks a stream's options once, at
# admission, and its per-sample path never enters proto/protocol.c.
# Meson passes nm and the built static libraries (usage below):
# libfeeder_proto.a, then feederd's: the pipelines, the GPU pipeline, its
# configuration, its core.
#
# Read from the objects the compiler made, not from the sources: a call
# through a macro, a helper or a new file counts all the same, and a
# comment does not. With nm's POSIX format and -A, each line names the
# archive and its member: "lib.a[dir/member.c.o]: symbol TYPE ...".
#
# 1. No object a worker runs for a sample (stream_task, the pipelines,
#    the GPU staging and slots, the pool, the sampler, the SIGBUS guard)
#    references a symbol that protocol.c defines.
# 2. proto_opts_check is referenced by session.c, the admission, and by
#    no other object of feederd: one place says whether options are valid.
# Each object of 1 must be found, and session.c must reference the check
# (which also shows that nm sees references at all), so the test cannot
# pass by finding nothing. Exit 0 pass, 1 fail, 77 skip.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
[ $# -ge 3 ] || fail "usage: $0 NM PROTO_ARCHIVE DAEMON_ARCHIVE..."
nm=$1 proto=$2
shift 2
command -v "$nm" >/dev/null || skip "no nm ($nm) to read the objects with"

# "member symbol" pairs of one kind of symbol (nm flags in $1) in archives.
pairs() {
	local flags=$1
	shift
	"$nm" -A -P $flags "$@" | sed -n 's/^[^[]*\[\([^]]*\)\]: \([^ ]*\) .*/\1 \2/p' |
		sed 's|^[^ ]*/||'
}

defined=$(pairs "-g --defined-only" "$proto" | awk '$1 == "protocol.c.o" {print $2}' | sort -u)
[ -n "$defined" ] || fail "nm found no global symbol of protocol.c.o in $proto"
undef=$(pairs "-u" "$@")
[ -n "$undef" ] || skip "nm lists no undefined symbol in the daemon's archives (LTO objects?)"

# The per-sample path, one extended regex per object (either build of
# the files that have a fallback).
path='stream_task\.c\.o
pool\.c\.o
sampler\.c\.o
mapguard\.c\.o
jpeg_pipeline\.c\.o
features_pipeline\.c\.o
wave_pipeline(_none)?\.c\.o
gpu_staging\.c\.o
gpu_slot\.c\.o
gpu_pipeline(\.cu|_none\.c)\.o'
members=$(for a in "$@"; do "$nm" -A -P "$a" 2>/dev/null; done |
	sed -n 's/^[^[]*\[\([^]]*\)\]: .*/\1/p' | sed 's|.*/||' | sort -u)

bad=0
while read -r re; do
	if ! grep -Eqx "$re" <<<"$members"; then
		echo "FAIL: no object matching $re in the daemon's archives"
		bad=1
	fi
done <<<"$path"

# 1. What the per-sample objects take from protocol.c.
hits=$(grep -Ex "($(paste -sd'|' <<<"$path")) [^ ]+" <<<"$undef" |
	awk 'NR == FNR {d[$1]; next} $2 in d' <(echo "$defined") -)
if [ -n "$hits" ]; then
	echo "FAIL: the per-sample path references protocol.c:"
	sed 's/^/  /' <<<"$hits"
	bad=1
fi

# 2. Who references proto_opts_check.
checkers=$(awk '$2 == "proto_opts_check" {print $1}' <<<"$undef" | sort -u)
if [ "$checkers" != "session.c.o" ]; then
	echo "FAIL: proto_opts_check is referenced by [$(echo $checkers)], not by session.c.o alone"
	bad=1
fi

if [ $bad = 0 ]; then
	echo "ok: $(grep -c . <<<"$path") per-sample objects use none of protocol.c's" \
		"$(grep -c . <<<"$defined") symbols; session.c.o alone checks the options"
fi
exit $bad
