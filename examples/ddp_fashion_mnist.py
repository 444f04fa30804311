#!/usr/bin/env python3
"""Plain PyTorch DDP (c10d Gloo, CPU) on Fashion-MNIST: a job to run through `geotb exec`.

    sudo ./build/harness/geotb exec scenarios/dpdk-2x2.json -- python3 examples/ddp_fashion_mnist.py

With --sync hier (examples/ddp_hier_hook.py) the same job synchronises as geotb's
hier_ef_topk_int8: geotb_torch's DDP communication hook averages the gradient within each site
every step, and every K steps the site leaders exchange the compressed progress (docs/guide/comm-hook.md).
--checkpoint DIR --checkpoint-at N saves every rank's model, optimizer, data position and the
hook's state after step N and stops; --resume DIR continues from there.

Nothing geotb-specific but the GEOTB_METRIC lines: the process group comes from torchrun's
environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), which `geotb exec` sets for every rank
inside its data center's network namespace, so `torchrun` or any other launcher runs it as well.

The workload is scenarios/dpdk-2x2.json's: MLP 784-64-10 (ReLU), 32 examples per rank and step,
SGD lr 0.05 momentum 0.9, 100 steps, the first 12,000 training and 2,000 test examples, inputs
scaled to [0, 1] and normalised with mean 0.2860 and std 0.3530, an iid shard per rank (the same
seeded permutation on every rank). Rank 0 prints per step
    GEOTB_METRIC {"step": 1, "step_time_s": 0.19, "loss": 2.3}
(step_time_s: forward + backward (DDP's allreduce of the gradient) + optimizer step, measured with
time.perf_counter()), and at the end {"final_test_accuracy": ...} and {"mean_step_time_s": ...}.
Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, gzipped IDX files).
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

# The `python3` first on PATH may not be the one with torch (a pyenv or venv interpreter in front
# of Debian's, whose python3-torch the project installs): re-run this script with Debian's, once.
DEBIAN_PYTHON = "/usr/bin/python3"
try:
    import torch
except ImportError:
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and os.access(DEBIAN_PYTHON, os.X_OK) \
            and not os.environ.get("GEOTB_EXAMPLE_REEXEC"):
        os.environ["GEOTB_EXAMPLE_REEXEC"] = "1"
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    sys.exit(f"{sys.argv[0]}: no torch in {sys.executable} nor in {DEBIAN_PYTHON}: install Debian's "
             "python3-torch (ci/install-deps.sh does) or run the script with a Python that has torch")
import hashlib

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))


def import_geotb_torch():
    """geotb_torch as pip installed it, else as this checkout's build made it (build/python)."""
    try:
        import geotb_torch
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "build", "python"))
        import geotb_torch
    return geotb_torch

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def read_idx(prefix, limit):
    with gzip.open(f"{prefix}-images-idx3-ubyte.gz", "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        assert magic == 0x803, f"{prefix}: not an IDX3 file"
        n = min(n, limit)
        images = torch.frombuffer(bytearray(f.read(n * rows * cols)), dtype=torch.uint8)
    with gzip.open(f"{prefix}-labels-idx1-ubyte.gz", "rb") as f:
        magic, m = struct.unpack(">II", f.read(8))
        assert magic == 0x801, f"{prefix}: not an IDX1 file"
        labels = torch.frombuffer(bytearray(f.read(n)), dtype=torch.uint8).long()
    x = (images.float().view(n, rows * cols) / 255.0 - MEAN) / STD
    return x, labels


def metric(**kv):
    print("GEOTB_METRIC " + json.dumps(kv), flush=True)


def main(default_sync="allreduce"):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=32, help="examples per rank and step")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--train-examples", type=int, default=12000)
    ap.add_argument("--test-examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--sync", choices=["allreduce", "hier"], default=default_sync,
                    help="allreduce: DDP's own; hier: geotb_torch's hier_ef_topk_int8 hook and rounds")
    ap.add_argument("--K", type=int, default=4, help="hier: steps between rounds (dpdk-2x2's)")
    ap.add_argument("--density", type=float, default=0.05, help="hier: top-k density (dpdk-2x2's)")
    ap.add_argument("--checkpoint", help="directory: save every rank's state after --checkpoint-at steps, then stop")
    ap.add_argument("--checkpoint-at", type=int, default=0)
    ap.add_argument("--resume", help="directory written by --checkpoint: continue from its step")
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # env:// : MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)

    x, y = read_idx(f"{DATA}/train", args.train_examples)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(args.seed))
    shard = perm[rank * len(y) // world:(rank + 1) * len(y) // world]
    order = torch.Generator().manual_seed(args.seed * 1000 + rank)

    net = nn.Sequential(nn.Linear(784, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    hier = None
    if args.sync == "hier":  # the one change: geotb's hierarchical sync instead of DDP's allreduce
        gt = import_geotb_torch()
        hier = gt.HierEF(net, gt.sites_from_env(), K=args.K, density=args.density)
    model = DDP(net)
    if hier:
        model.register_comm_hook(hier.state, hier.hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()

    pos, idx, times, first = 0, shard[torch.randperm(len(shard), generator=order)], [], 1
    if args.resume:
        st = torch.load(os.path.join(args.resume, f"rank{rank}.pt"))
        net.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        order.set_state(st["order"])
        pos, idx, first = st["pos"], st["idx"], st["step"] + 1
        if hier:
            hier.load_state_dict(st["hier"])
    dist.barrier()  # every rank is up: step times are steps, not start-up
    for step in range(first, args.steps + 1):
        if pos + args.batch > len(idx):
            pos, idx = 0, shard[torch.randperm(len(shard), generator=order)]
        b = idx[pos:pos + args.batch]
        pos += args.batch
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x[b]), y[b])
        loss.backward()  # DDP allreduces the gradient (one bucket) over every rank, across the WAN
        opt.step()
        if hier:
            hier.step()  # every K steps: a round between the sites
        dt = time.perf_counter() - t0
        times.append(dt)
        if rank == 0:
            metric(step=step, step_time_s=dt, loss=loss.item())
        if args.checkpoint and step == args.checkpoint_at:
            os.makedirs(args.checkpoint, exist_ok=True)
            torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "order": order.get_state(), "pos": pos,
                        "idx": idx, "step": step, "hier": hier.state_dict() if hier else None},
                       os.path.join(args.checkpoint, f"rank{rank}.pt"))
            if rank == 0:
                metric(checkpoint_step=step)
            dist.barrier()
            dist.destroy_process_group()
            return

    if hier:
        hier.finish()  # the last round and a dense exchange: every replica ends identical
    if rank == 0:
        xt, yt = read_idx(f"{DATA}/t10k", args.test_examples)
        with torch.no_grad():
            acc = (model.module(xt).argmax(1) == yt).float().mean().item()
        w = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        metric(final_test_accuracy=acc, mean_step_time_s=sum(times) / len(times), steps=len(times),
               world_size=world, final_weights_sha256=hashlib.sha256(w.numpy().tobytes()).hexdigest())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
