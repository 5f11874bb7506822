#!/usr/bin/python3
"""ddp_train.py — a DistributedDataParallel training loop fed by feeder.Loader,
run by torchrun (the README's DDP recipe; also the worker of test_ddp.py).

usage: torchrun --standalone --nproc_per_node N ddp_train.py --dataset D --out DIR
           [--socket S] [--batch B] [--epochs E] [--stop EPOCH:STEPS] [--resume DIR]
           [--progress]

Each process joins the gloo group torchrun sets up; feeder.Loader takes its
rank and world size from it and opens its own stream on the node's feederd
($FEEDER_SOCKET, or the default socket, unless --socket names one): one
feederd per node, each with its own copy of the dataset (or a shared
filesystem); the ranks' shares of each epoch are disjoint. A rank whose
daemon is unreachable or goes away, or whose peers are gone, exits with one
line naming the rank and the reason, and torchrun ends the job (no hang). The model is small (a
linear classifier of 16x16 crops) because the loop is what is shown: set_epoch
per epoch, DDP's join() for ranks whose shares differ by a batch, and a
checkpoint of each rank's Loader state (state_dict), which resumes exactly,
also in a job of another world size (the state's sample_position).

Writes DIR/rank<r>.json: rank, world, the dataset indices each epoch gave
this rank in order, the parameters' checksum after training, and, with
--stop, the Loader state at the stop (the checkpoint). With --progress,
DIR/rank<r>.steps holds the steps done so far (for a test that kills a
daemon mid-run).
"""
import argparse
import datetime
import json
import os
import signal
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import feeder


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--socket")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--stop", help="EPOCH:STEPS: stop after STEPS steps of EPOCH, saving the state")
    ap.add_argument("--resume", help="folder of a stopped run's rank<r>.json")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()

    # A peer that died is reported within a minute, not after gloo's 30.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()

    sock = a.socket or os.environ.get("FEEDER_SOCKET") or "/run/feeder/feederd.sock"

    def say(why):
        print("ddp_train: rank %d of %d: %s" % (rank, world, why), file=sys.stderr, flush=True)

    def lost(why):
        # When this node's daemon died, a peer on the node may see it first
        # and leave, so this rank learns of it as a lost peer (in the middle
        # of an all-reduce, or as torchrun's SIGTERM); the daemon is the cause
        # worth naming then.
        gone = _daemon_gone(sock)
        say("feederd at %s: %s (and %s)" % (sock, gone, why) if gone else why)

    def stopped(sig, frame):  # torchrun ends a node's ranks when one of them failed
        lost("stopped by torchrun (signal %d): another rank failed" % sig)
        os._exit(1)
    signal.signal(signal.SIGTERM, stopped)
    try:
        train(a, rank, world)
    except feeder.FeederError as e:
        say("feederd at %s: %s" % (sock, e))
        sys.exit(1)
    except RuntimeError as e:  # gloo: a peer's connection closed or timed out
        lost("lost the other ranks: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__))
        sys.exit(1)
    dist.barrier()
    dist.destroy_process_group()


def train(a, rank, world):
    torch.manual_seed(0)  # the same initial model on every rank (DDP also broadcasts it)
    loader = feeder.Loader(a.dataset, a.batch, pipeline=feeder.Jpeg(16), socket=a.socket,
                           dtype="float32", as_torch=True, drop_last=False, return_index=True,
                           shuffle=True)
    assert (loader.rank, loader.world_size) == (rank, world)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, loader.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    first_epoch = 0
    if a.resume:
        # Any rank's state carries where the epoch stopped; a job of the same
        # world size resumes rank r from rank r's state exactly, another one
        # from the sample position all ranks had reached.
        with open(os.path.join(a.resume, "rank%d.json" % (rank % _world_of(a.resume)))) as f:
            state = json.load(f)["state"]
        loader.load_state_dict(state)
        first_epoch = loader.epoch
    stop_epoch, stop_steps = map(int, a.stop.split(":")) if a.stop else (-1, -1)

    seen, state = {}, None
    for epoch in range(first_epoch, a.epochs):
        loader.set_epoch(epoch)  # keeps a loaded position when it is that epoch
        seen[epoch] = []
        with model.join():  # ranks' last batches may differ by one
            for step, (x, y, idx) in enumerate(loader):
                loss = F.cross_entropy(model(x), y.long())
                opt.zero_grad()
                loss.backward()
                opt.step()
                seen[epoch] += idx.tolist()
                if a.progress:
                    done = sum(len(v) for v in seen.values()) // a.batch
                    with open(os.path.join(a.out, "rank%d.steps" % rank), "w") as f:
                        f.write("%d\n" % done)
                if epoch == stop_epoch and step + 1 == stop_steps:
                    state = loader.state_dict()
                    break
        if state is not None:
            break
    params = sum(float(p.double().sum()) for p in model.parameters())
    with open(os.path.join(a.out, "rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "world": world, "seen": seen, "params": params,
                   "state": state, "socket": os.environ.get("FEEDER_SOCKET")}, f)


def _daemon_gone(path):
    """Why the daemon at path cannot be reached, or None when it answers."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        return None
    except OSError as e:
        return "not running (%s)" % (e.strerror or e)
    finally:
        s.close()


def _world_of(folder):
    with open(os.path.join(folder, "rank0.json")) as f:
        return json.load(f)["world"]


if __name__ == "__main__":
    main()
