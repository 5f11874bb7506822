#!/bin/bash
# test_churn.sh — 64 clients connecting and disconnecting in a loop while a
# steady client streams, then a full daemon (max_clients = 66) refusing one
# more: `limits_client churn` says what is checked. Afterwards the daemon
# still serves and has logged the refusal.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
limits=$build/tests/security/limits_client
need_exe "$limits"
# Under AddressSanitizer freed memory sits in a quarantine, so the daemon's
# resident memory says nothing about leaks there (LeakSanitizer does).
sanitized && export LIMITS_NO_RSS=1
# ThreadSanitizer serves some 30 connections a second where the plain build
# serves over 1,000: 20 rounds (1,280 connections) give it every interleaving
# of connect, open and leave to look at, well inside the test's time limit.
rounds=100
sanitized tsan && rounds=20
rounds=${1:-$rounds}
make_images uniq 24 3 5 --unique --resize-shorter 48
start_daemon --max-clients 66 --log-level notice || fail "$daemon_why"
"$limits" "$sock" churn uniq 64 "$rounds" "$daemon_pid" || fail "churn"
daemon_alive
grep -q "maximum number of clients (max_clients = 66" "$tmp/feederd.log" || fail "the refusal was not logged"
echo "PASS: churn"
