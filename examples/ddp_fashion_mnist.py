#!/usr/bin/env python3
"""Plain PyTorch DDP (c10d Gloo, CPU) on Fashion-MNIST: a job to run through `geotb exec`.

    sudo ./build/harness/geotb exec scenarios/dpdk-2x2.json -- python3 examples/ddp_fashion_mnist.py

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
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=32, help="examples per rank and step")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--train-examples", type=int, default=12000)
    ap.add_argument("--test-examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # env:// : MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)

    x, y = read_idx(f"{DATA}/train", args.train_examples)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(args.seed))
    shard = perm[rank * len(y) // world:(rank + 1) * len(y) // world]
    order = torch.Generator().manual_seed(args.seed * 1000 + rank)

    model = DDP(nn.Sequential(nn.Linear(784, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()

    dist.barrier()  # every rank is up: step times are steps, not start-up
    pos, idx, times = 0, shard[torch.randperm(len(shard), generator=order)], []
    for step in range(1, args.steps + 1):
        if pos + args.batch > len(idx):
            pos, idx = 0, shard[torch.randperm(len(shard), generator=order)]
        b = idx[pos:pos + args.batch]
        pos += args.batch
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x[b]), y[b])
        loss.backward()  # DDP allreduces the gradient (one bucket) over every rank, across the WAN
        opt.step()
        dt = time.perf_counter() - t0
        times.append(dt)
        if rank == 0:
            metric(step=step, step_time_s=dt, loss=loss.item())

    if rank == 0:
        xt, yt = read_idx(f"{DATA}/t10k", args.test_examples)
        with torch.no_grad():
            acc = (model.module(xt).argmax(1) == yt).float().mean().item()
        metric(final_test_accuracy=acc, mean_step_time_s=sum(times) / len(times), steps=len(times),
               world_size=world)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
