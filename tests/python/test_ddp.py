"""test_ddp.py — feeder.Loader under torchrun: `torchrun --nproc_per_node 2`
(gloo on CPU) runs tests/python/ddp_train.py, a DistributedDataParallel loop,
against a real feederd. Checked from what each rank recorded: each epoch's
shares are disjoint and together the whole epoch; each rank's order is what
set_epoch gives a Loader of that rank outside torchrun (a pure function of
seed, epoch, rank and world, like DistributedSampler); the ranks end with
identical parameters; a job stopped mid-epoch resumes from its ranks'
state_dicts with 2 ranks, and with 3 and with 1 (elastic), each seeing every
remaining sample of the epoch once. Two "nodes" (two torchrun agents of 2
ranks, static rendezvous) each use their own feederd with its own copy of
the dataset: the epochs are still disjoint and complete, and each daemon
served only its node's ranks; SIGKILLing one node's daemon mid-run ends the
job within seconds with one line per rank naming the rank and the reason."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest
import torch  # noqa: F401 (torchrun's; an ImportError here is a failure, not a skip)

import feeder
from conftest import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
N = 40  # samples of the fixture's "imgs" dataset


def launch(out, nproc, opts, *args, **env):
    """torchrun (with its options opts) of ddp_train.py with args, writing
    into out; env: more environment. The process, its output piped."""
    os.makedirs(out, exist_ok=True)
    # --redirects 2 --tee 2 (workers' stderr to a log and to ours): torchrun of
    # Debian's PyTorch 1.13 under Python 3.11 cannot parse its own default
    # "0" for these (enum.Flag iteration skips the zero member) and fails.
    cmd = [sys.executable, "-m", "torch.distributed.run", *opts, "--redirects", "2", "--tee", "2",
           "--nproc_per_node", str(nproc), os.path.join(HERE, "ddp_train.py"), "--dataset", "imgs",
           "--out", out, *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, OMP_NUM_THREADS="1", **env))


def ranks_of(out, n, procs):
    """What each of the n ranks recorded (rank<r>.json), once every torchrun
    of procs has exited 0."""
    logs = [p.communicate(timeout=300)[0] for p in procs]
    for k, p in enumerate(procs):
        assert p.returncode == 0, "torchrun %d exited %d:\n%s" % (k, p.returncode, logs[k][-4000:])
    ranks = []
    for k in range(n):
        with open(os.path.join(out, "rank%d.json" % k)) as f:
            ranks.append(json.load(f))
    assert [(x["rank"], x["world"]) for x in ranks] == [(k, n) for k in range(n)]
    return ranks


def torchrun(daemon, out, nproc, *args):
    return ranks_of(out, nproc, [launch(out, nproc, ["--standalone"], "--socket", daemon.sock,
                                        *args)])


def assert_once(parts, what):
    """The ranks' shares (parts) are together every sample once."""
    got = sorted(i for p in parts for i in p)
    assert got == list(range(N)), "%s: %s" % (what, got)


def outside(daemon, batch, rank, **kw):
    """A Loader of that rank of 2 outside torchrun."""
    return feeder.Loader("imgs", batch, pipeline=feeder.Jpeg(16), socket=daemon.sock, rank=rank,
                         world_size=2, drop_last=False, return_index=True, shuffle=True, **kw)


def order(ld, epoch):
    """The indices ld gives in epoch (after its set_epoch)."""
    ld.set_epoch(epoch)
    return [i for _, _, idx in ld for i in idx.tolist()]


def test_ddp_epochs_disjoint_complete_and_set_epoch(daemon, workdir):
    ranks = torchrun(daemon, os.path.join(workdir, "ddp-full"), 2, "--epochs", "2",
                     "--batch", "3")
    for e in ("0", "1"):
        assert_once([r["seen"][e] for r in ranks], "epoch " + e)
    assert ranks[0]["seen"]["0"] != ranks[0]["seen"]["1"]  # set_epoch reshuffles
    # Each rank's order is the request's, whoever asks: a Loader of that rank
    # outside torchrun gives the same indices for the same epoch.
    for r in ranks:
        ld = outside(daemon, 3, r["rank"])
        assert [order(ld, e) for e in (1, 0)] == [r["seen"]["1"], r["seen"]["0"]]
    # DDP kept the replicas identical.
    assert ranks[0]["params"] == ranks[1]["params"]


@pytest.mark.parametrize("world2", [2, 3, 1])
def test_ddp_resume_from_rank_states(daemon, workdir, world2):
    stopped = os.path.join(workdir, "ddp-stop-%d" % world2)
    # Stop in epoch 1 after 2 steps of 4 samples on 2 ranks: 16 of 40 seen.
    a = torchrun(daemon, stopped, 2, "--epochs", "2", "--batch", "4", "--stop", "1:2")
    assert all(x["state"] and x["state"]["sample_position"] == 16 for x in a)
    assert len(a[0]["seen"]["1"]) == len(a[1]["seen"]["1"]) == 8
    b = torchrun(daemon, os.path.join(workdir, "ddp-resume-%d" % world2), world2,
                 "--epochs", "2", "--batch", "4", "--resume", stopped)
    assert all(set(x["seen"]) == {"1"} for x in b)
    assert_once([x["seen"]["1"] for x in a + b], "2 ranks stopped, %d resumed" % world2)
    if world2 == 2:  # the same ranks resume exactly where each stopped
        for r in range(2):
            ld = outside(daemon, 4, r, epoch=1)
            assert a[r]["seen"]["1"] + b[r]["seen"]["1"] == order(ld, 1)


def two_nodes(daemons, out, *args):
    """torchrun as two "nodes" of 2 ranks each on this machine: node k's
    ranks talk to daemons[k] (their FEEDER_SOCKET), as on a cluster where
    each node runs its own feederd. Returns the two torchrun processes."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return [launch(out, 2, ["--nnodes", "2", "--node_rank", str(k), "--master_addr", "127.0.0.1",
                            "--master_port", str(port)], *args, FEEDER_SOCKET=d.sock)
            for k, d in enumerate(daemons)]


@pytest.fixture
def node_daemons(datasets, workdir):
    """Two feederd processes, each serving its own copy of the datasets."""
    made = []
    for k in range(2):
        top = os.path.join(workdir, "node%d" % k)
        shutil.rmtree(top, ignore_errors=True)
        shutil.copytree(datasets, os.path.join(top, "datasets"))
        made.append(Daemon(os.path.join(top, "datasets"), top))
    yield made
    for d in made:
        d.stop()


def _stream_ranks(daemon):
    """The ranks whose streams a daemon's log says it opened."""
    with open(daemon.log) as f:
        return sorted({int(m.group(1)) for m in re.finditer(r"rank (\d+)/4", f.read())})


def test_ddp_two_nodes_two_daemons(node_daemons, workdir):
    out = os.path.join(workdir, "ddp-nodes")
    ranks = ranks_of(out, 4, two_nodes(node_daemons, out, "--epochs", "2", "--batch", "3"))
    for e in ("0", "1"):
        assert_once([x["seen"][e] for x in ranks], "epoch %s over two nodes" % e)
    assert len({x["params"] for x in ranks}) == 1
    # Each node's ranks were served by that node's daemon only.
    assert [x["socket"] for x in ranks] == [node_daemons[0].sock] * 2 + [node_daemons[1].sock] * 2
    assert _stream_ranks(node_daemons[0]) == [0, 1]
    assert _stream_ranks(node_daemons[1]) == [2, 3]


def test_ddp_killed_daemon_fails_each_rank_clearly(node_daemons, workdir):
    out = os.path.join(workdir, "ddp-kill")
    procs = two_nodes(node_daemons, out, "--epochs", "1000", "--batch", "2", "--progress")
    t0 = time.monotonic()
    steps = os.path.join(out, "rank2.steps")
    while time.monotonic() - t0 < 120:
        try:
            with open(steps) as f:
                if int(f.read() or 0) >= 3:
                    break
        except (OSError, ValueError):
            pass
        assert all(p.poll() is None for p in procs), "a node ended before the kill"
        time.sleep(0.1)
    else:
        pytest.fail("rank 2 did not reach step 3 within 120 s")
    node_daemons[1].kill(9)
    t1 = time.monotonic()
    logs = [p.communicate(timeout=180)[0] for p in procs]
    took = time.monotonic() - t1
    assert all(p.returncode != 0 for p in procs), [p.returncode for p in procs]
    assert took < 90, "the job took %.0f s to fail" % took
    # Ranks 2 and 3 name themselves, their daemon's socket and the reason.
    for r in (2, 3):
        line = [x for x in logs[1].splitlines() if "ddp_train: rank %d of 4" % r in x]
        assert line and node_daemons[1].sock in line[0], logs[1][-3000:]
        assert "feederd" in line[0]
    # Ranks 0 and 1 (their daemon alive) report the lost peers (or that
    # torchrun stopped them after the other failed), not a hang.
    for r in (0, 1):
        assert "ddp_train: rank %d of 4" % r in logs[0], logs[0][-3000:]
