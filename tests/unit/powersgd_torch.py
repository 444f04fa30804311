#!/usr/bin/python3
"""Runs PyTorch's own powerSGD_hook on a seeded gradient sequence and writes what it computes.

tests/unit/powersgd_torch_test.cc feeds the same gradients to geotb's PowerSGD (kernels/powersgd.h)
and compares the decompressed gradients, P, Q and the error-feedback residual.

The hook is torch's unchanged function (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook,
Debian's python3-torch), called on a bucket object with the methods it uses (buffer, index,
gradients, is_last), in a gloo process group of `--world` processes on loopback.

Output in --out, for each config c of CONFIGS: inputs_<c>.bin (float32: rank-major, step-major flat
gradients), torch_<c>_<rank>.bin (float32, per step: the hook's output, then P, Q and the error when
the state has them); manifest.json (shapes, the configs, sizes per step).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

# A matrix, a 1-D tensor, a conv-shaped one (viewed 8 x 27), a larger matrix, and one that only
# rank 1 compresses ((5 + 4) * r * 2 < 20).
SHAPES = [(24, 16), (16,), (8, 3, 3, 3), (40, 30), (5, 4)]
# matrix_approximation_rank, start_powerSGD_iter, use_error_feedback, warm_start, random_seed:
# Gram-Schmidt (ranks 1, 2) and QR (rank 4), a fresh Q every iteration, no error feedback.
CONFIGS = [(1, 3, True, True, 0), (2, 3, True, True, 5), (4, 3, True, True, 0), (1, 2, True, False, 11),
           (2, 2, False, True, 0)]


class Bucket:
    """What powerSGD_hook reads of a dist.GradBucket: one flat buffer and views of it."""

    def __init__(self, flat, shapes):
        self.flat = flat
        self.views = []
        off = 0
        for s in shapes:
            n = int(np.prod(s))
            self.views.append(flat[off:off + n].view(*s))
            off += n

    def buffer(self):
        return self.flat

    def index(self):
        return 0

    def gradients(self):
        return self.views

    def is_last(self):
        return True


def gradients(args, k):
    """Per rank and step: a shared rank-k part with distinct singular values (scales 8, 4, 2, 1,
    the first k, each varying by +-20 % from step to step), plus each rank's own noise (sd 0.05).
    k is the config's rank: the error feedback then accumulates noise only, and the power
    iteration stays well conditioned, so that float32 rounding (torch's BLAS against geotb's double
    accumulation) stays near 1e-6 over the steps. With a rank-1 compressor on rank-4 data the
    residual soon carries directions as strong as the top one, and differences of that rounding
    grow by about 1.5x a step (measured: 6e-4 after 21 compressed steps)."""
    rs = np.random.RandomState(args.data_seed + k)
    numel = sum(int(np.prod(s)) for s in SHAPES)
    out = np.zeros((args.world, args.steps, numel), dtype=np.float32)
    scales = np.array([8.0, 4.0, 2.0, 1.0])[:k]
    bases = []
    for s in SHAPES:
        rows = s[0]
        cols = int(np.prod(s[1:])) if len(s) > 1 else 1
        u, _ = np.linalg.qr(rs.randn(rows, 4)) if rows >= 4 else (rs.randn(rows, 4), None)
        v, _ = np.linalg.qr(rs.randn(cols, 4)) if cols >= 4 else (rs.randn(cols, 4), None)
        bases.append((u[:, :k], v[:, :k].T))
    for t in range(args.steps):
        off = 0
        for (u, v), s in zip(bases, SHAPES):
            n = int(np.prod(s))
            shared = (u * (scales * rs.uniform(0.8, 1.2, size=k))) @ v
            for r in range(args.world):
                out[r, t, off:off + n] = (shared + 0.05 * rs.randn(*shared.shape)).reshape(-1)
            off += n
    return out


def worker(rank, args, grads):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method="file://" + os.path.join(args.out, "store"), rank=rank,
                            world_size=args.world)
    manifest = []
    for c, (r, start, ef, warm, seed) in enumerate(CONFIGS):
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=r, start_powerSGD_iter=start,
                                   use_error_feedback=ef, warm_start=warm, random_seed=seed,
                                   min_compression_rate=2, orthogonalization_epsilon=0)
        steps = []
        with open(os.path.join(args.out, "torch_%d_%d.bin" % (c, rank)), "wb") as f:
            for t in range(args.steps):
                flat = torch.from_numpy(grads[c][rank, t].copy())
                out = psgd.powerSGD_hook(state, Bucket(flat, SHAPES)).wait()
                f.write(out.numpy().astype(np.float32).tobytes())
                rec = {}
                for name, d in (("p", state.p_memory_dict), ("q", state.q_memory_dict), ("error", state.error_dict)):
                    if 0 in d:
                        f.write(d[0].numpy().astype(np.float32).tobytes())
                        rec[name] = int(d[0].numel())
                    else:
                        rec[name] = 0
                steps.append(rec)
        manifest.append({"rank": r, "start": start, "error_feedback": ef, "warm_start": warm, "seed": seed,
                         "per_step": steps})
    if rank == 0:
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump({"shapes": [list(s) for s in SHAPES], "world": args.world, "steps": args.steps,
                       "numel": int(grads[0].shape[2]), "configs": manifest, "torch": torch.__version__}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--data-seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    grads = [gradients(args, c[0]) for c in CONFIGS]
    for c, g in enumerate(grads):
        g.tofile(os.path.join(args.out, "inputs_%d.bin" % c))
    mp.spawn(worker, args=(args, grads), nprocs=args.world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
