#!/usr/bin/env python3
"""test_systemd.py — feederd's side of the systemd service protocol.

Plays systemd for a real feederd process: (1) a NOTIFY_SOCKET of the test's
own and WATCHDOG_USEC, expecting READY=1, STATUS= lines with live figures,
WATCHDOG=1 pings and STOPPING=1 on SIGTERM, then exit 0; (2) socket
activation: a listening SOCK_SEQPACKET socket passed as fd 3 with LISTEN_FDS
and LISTEN_PID, which the daemon must serve (HELLO -> WELCOME) instead of
binding its own. Usage (meson): test_systemd.py with-systemd|without-systemd.
Exit 0 pass, 1 fail, 77 skip."""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

FEEDERD = os.path.join(os.environ.get("FEEDER_BUILD", ""), "daemon", "feederd")
# meson passes whether libsystemd was found when feederd was configured.
for skip, why in ((not os.access(FEEDERD, os.X_OK), f"{FEEDERD} is not built (FEEDER_BUILD)"),
                  (sys.argv[1:2] != ["with-systemd"],
                   "feederd was built without libsystemd (install libsystemd-dev)")):
    if skip:
        print(f"SKIP: {why}", file=sys.stderr)
        sys.exit(77)

# Wire constants of proto/protocol.h (the version read from it, so that a
# protocol bump does not leave this test behind).
MAGIC, HELLO, WELCOME = 0x52444546, 1, 2
with open(os.path.join(os.environ["FEEDER_SOURCE"], "proto", "protocol.h")) as f:
    VERSION = int(re.search(r"#define PROTO_VERSION (\d+)", f.read()).group(1))


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def base_args(tmp):
    conf = os.path.join(tmp, "feederd.conf")
    with open(conf, "w") as f:
        f.write("workers = 1\n")
    datasets = os.path.join(tmp, "datasets")
    os.makedirs(datasets, exist_ok=True)
    return [FEEDERD, "--config", conf, "--datasets", datasets]


def test_notify(tmp):
    ns_path = os.path.join(tmp, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(ns_path)
    ns.settimeout(5)
    env = dict(os.environ, NOTIFY_SOCKET=ns_path, WATCHDOG_USEC="200000")
    env.pop("WATCHDOG_PID", None)
    env.pop("LISTEN_FDS", None)
    sock = os.path.join(tmp, "feederd.sock")
    p = subprocess.Popen(base_args(tmp) + ["--socket", sock], env=env,
                         stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        deadline = time.time() + 5
        while time.time() < deadline:
            msg = ns.recv(4096).decode()
            seen += msg.split("\n")
            if "READY=1" in seen and any(s.startswith("STATUS=") and "clients" in s for s in seen) \
                    and seen.count("WATCHDOG=1") >= 3:
                break
        if "READY=1" not in seen:
            fail(f"no READY=1 (got {seen})")
        if seen.count("WATCHDOG=1") < 3:
            fail(f"fewer than 3 WATCHDOG=1 pings in 5 s with WatchdogSec=0.2 (got {seen})")
        status = [s for s in seen if s.startswith("STATUS=") and "clients" in s]
        if not status or "streams" not in status[-1] or "samples/s" not in status[-1]:
            fail(f"no STATUS= line with live figures (got {seen})")
        if not os.path.exists(sock):
            fail("READY=1 was sent before the socket existed")
        p.send_signal(signal.SIGTERM)
        t0 = time.time()
        while "STOPPING=1" not in seen:
            seen += ns.recv(4096).decode().split("\n")
        rc = p.wait(timeout=2)
        if rc != 0 or time.time() - t0 > 2:
            fail(f"exit status {rc} {time.time() - t0:.1f} s after SIGTERM, not 0 within 2 s")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        log = p.stderr.read()
    if "<6>" not in log or "<5>" not in log:
        fail(f"log lines lack syslog priority prefixes:\n{log}")
    print(f"notify: {len([s for s in seen if s])} notifications, last STATUS {status[-1]!r}")


def test_activation(tmp):
    path = os.path.join(tmp, "activated.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ls.bind(path)
    ls.listen(8)
    fd = ls.fileno()

    env = dict(os.environ, LISTEN_FDS="1")
    env.pop("NOTIFY_SOCKET", None)
    # --socket names a path that must NOT be created: the passed socket wins.
    unused = os.path.join(tmp, "unused.sock")
    args = base_args(tmp) + ["--socket", unused]
    # As systemd does: the socket is fd 3, and LISTEN_PID names the daemon
    # itself (the shell's $$ is the pid that exec keeps).
    p = subprocess.Popen(["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + args, env=env,
                         pass_fds=(fd,), preexec_fn=lambda: os.dup2(fd, 3),
                         stderr=subprocess.PIPE, text=True)
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.settimeout(5)
        c.connect(path)
        payload = struct.pack("<I32s", os.getpid(), b"test_systemd")
        c.send(struct.pack("<IHHII", MAGIC, VERSION, HELLO, len(payload), 0) + payload)
        reply = c.recv(2048)
        magic, version, mtype, plen, _ = struct.unpack_from("<IHHII", reply)
        if magic != MAGIC or mtype != WELCOME or plen != len(reply) - 16:
            fail(f"no WELCOME on the activated socket (type {mtype})")
        if os.path.exists(unused):
            fail("feederd bound --socket although systemd passed one")
        c.close()
        p.send_signal(signal.SIGTERM)
        if p.wait(timeout=2) != 0:
            fail("activated feederd did not exit 0 on SIGTERM")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        log = p.stderr.read()
    if "passed by systemd" not in log:
        fail(f"log does not mention the activated socket:\n{log}")
    print("activation: served HELLO on the passed socket")


with tempfile.TemporaryDirectory(prefix="feeder-systemd-") as tmp:
    test_notify(tmp)
    test_activation(tmp)
sys.exit(0)
