#!/usr/bin/python3
"""Real Gloo against the model of its ring, on float16: the hop-by-hop sums of naive_ddp's
"wire": "fp16" (docs/guide/strategies.md "16-bit wires").

Spawns P processes of torch.distributed with the gloo backend (torch 1.13's ProcessGroupGloo, the
Debian libgloo it links), allreduces (SUM) a float16 tensor of N seeded values per rank, and
compares rank 0's result bit for bit with the sum computed as engine/collectives/gloo_ring.cc
orders it: element j of segment group G starts at rank G - 1 and goes down the ring to rank G,
each hop float(own) + float(partial) rounded to float16. Also prints how many elements a float sum
rounded once, or the ascending-rank chain, would get wrong (the check's power).

--layout gloo_ring (default): the model's segment layout, gloo_ring_layout(): segments of
min(ceil(bytes / 2P), 1 MiB) bytes. --layout even: segments of ceil(bytes / S) bytes, S =
roundUp(max(ceil(bytes / 1 MiB), 2P), P): the layout of the Gloo Debian ships (git 2022-05-18).
The two agree below the 1 MiB cap (bytes <= 2P MiB); above it only the second matches Gloo.

  tools/gloo_fp16_check.py P N [--layout gloo_ring|even]      # e.g. 4 1000; 3 4000000 --layout even
"""
import argparse
import os
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def data(p, n):
    rng = np.random.default_rng(7 + p)
    return [(rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, size=n))).astype(np.float16) for _ in range(p)]


def worker(r, p, n, store, out):
    dist.init_process_group("gloo", init_method="file://" + store, rank=r, world_size=p)
    t = torch.from_numpy(data(p, n)[r].copy())
    dist.all_reduce(t)
    if r == 0:
        np.save(out, t.numpy())
    dist.destroy_process_group()


def round_up(x, m):
    return (x + m - 1) // m * m


def model_sum(d, p, n, layout):
    total, cap = 2 * n, 1 << 20
    if layout == "even":
        segments = round_up(max((total + cap - 1) // cap, 2 * p), p)
        seg = round_up((total + segments - 1) // segments, 2)
    else:
        seg = round_up(min((total + 2 * p - 1) // (2 * p), cap), 2)
        segments = round_up(max((total + seg - 1) // seg, 2 * p), p)
    spr = segments // p
    D = np.stack(d)
    j = np.arange(n)
    g = (2 * j // seg) // spr
    acc = D[(g + p - 1) % p, j]
    for k in range(2, p + 1):
        acc = (D[(g + p - k) % p, j].astype(np.float32) + acc.astype(np.float32)).astype(np.float16)
    return acc, seg, segments


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("p", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--layout", choices=["gloo_ring", "even"], default="gloo_ring")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, out = os.path.join(tmp, "store"), os.path.join(tmp, "out.npy")
        mp.spawn(worker, args=(a.p, a.n, store, out), nprocs=a.p)
        got = np.load(out)
    d = data(a.p, a.n)
    want, seg, segments = model_sum(d, a.p, a.n, a.layout)
    once = np.stack(d).astype(np.float32).sum(axis=0).astype(np.float16)
    chain = d[0]
    for r in range(1, a.p):
        chain = (d[r].astype(np.float32) + chain.astype(np.float32)).astype(np.float16)
    bad = int((got.view(np.uint16) != want.view(np.uint16)).sum())
    print(f"torch {torch.__version__}, P = {a.p}, N = {a.n} float16, layout {a.layout}: {segments} segments of "
          f"{seg} bytes; Gloo vs the model's hop-by-hop sum: {bad} of {a.n} elements differ; a float sum rounded "
          f"once would differ in {int((got != once).sum())}, the ascending-rank chain in {int((got != chain).sum())}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
