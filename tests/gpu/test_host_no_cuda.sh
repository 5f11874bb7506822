#!/bin/bash
# test_host_no_cuda.sh — opening a stream of host batches never initialises
# CUDA in the client: libfeeder asks whether this process has a usable GPU
# (cudaGetDeviceCount, which loads the driver and makes a context's worth of
# state) only for a stream that asks for device batches.
#
# The client runs with a stand-in libcuda.so.1 (cuda_mark.c) first on
# LD_LIBRARY_PATH, which writes a mark when the CUDA runtime loads it. A host
# stream must leave no mark; a stream asking for device batches must leave
# one (which shows the stand-in is seen: without it the first check would
# pass for nothing), and still gets its batches, from the host ring. The two
# streams' batches are the same.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
rc_client=$build/tests/fault/restart_client
need_exe "$rc_client"
[ -f "$build/tests/gpu/libcuda.so.1" ] || skip "the stand-in $build/tests/gpu/libcuda.so.1 is not built"

make_images imgs 12 3 5
start_daemon || fail "$daemon_why"
run() {
	FEEDER_TEST_CUDA_MARK=$tmp/mark LD_LIBRARY_PATH=$build/tests/gpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$rc_client" --socket "$sock" --dataset imgs --batch 4 "$@"
}

run --out "$tmp/host.txt" --dump "$tmp/host.bin" >"$tmp/host.log" 2>&1 ||
	fail "host stream: $(cat "$tmp/host.log")"
[ -e "$tmp/mark" ] && fail "opening a host stream initialised CUDA (the CUDA runtime loaded libcuda.so.1)"
echo "host stream: $(wc -l <"$tmp/host.txt") batches, CUDA not touched"

run --device-batches --out "$tmp/dev.txt" --dump "$tmp/dev.bin" >"$tmp/dev.log" 2>&1 ||
	fail "stream asking for device batches: $(cat "$tmp/dev.log")"
[ -s "$tmp/mark" ] || fail "a stream asking for device batches did not probe CUDA: the stand-in" \
	"libcuda.so.1 was not loaded, so the host stream's check above proves nothing"
cmp -s "$tmp/host.txt" "$tmp/dev.txt" && cmp -s "$tmp/host.bin" "$tmp/dev.bin" ||
	fail "the stream that asked for device batches got other batches than the host stream"
echo "device batches asked for: CUDA probed (the stand-in has no device), the same batches from the host ring"
