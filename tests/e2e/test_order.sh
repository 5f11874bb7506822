#!/bin/bash
# test_order.sh CASE — one order_client case (sample indices, unshuffled
# order, sample names, option refusals) against a real feederd serving a
# 23-image dataset (23: the last batch of each rank is short).
. "$(dirname "$0")/lib.sh"
order=$build/tests/e2e/order_client
[ -x "$order" ] || skip "$order is not built"
make_dataset imgs 23 3 4
start_daemon
"$order" --socket "$sock" --datasets "$datasets" "$1" imgs || fail "order_client $1"
stop_daemon
echo "ok: $1"
