#!/bin/bash
# test_client.sh COMMAND [ARG] — one e2e_client check against a real feederd:
# build a 24-image dataset, start the daemon (extra feederd flags may follow
# "--"), run the command, and stop the daemon with SIGTERM (it must exit 0).
. "$(dirname "$0")/lib.sh"
cmd=$1; shift
arg=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do arg+=("$1"); shift; done
[ $# -gt 0 ] && shift
make_dataset imgs 24 3 1
start_daemon "$@"
run_client "$cmd" imgs "${arg[@]}"; rc=$?
if [ $rc -eq 77 ]; then stop_daemon; skip "e2e_client $cmd"; fi
[ $rc -eq 0 ] || fail "e2e_client $cmd exited $rc"
stop_daemon
echo "ok: $cmd"
