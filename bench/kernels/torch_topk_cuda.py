#!/usr/bin/env python3
"""torch.topk(x.abs(), k) on CUDA: the reference a user would write, for ci/gpu-check.sh.

Usage: torch_topk_cuda.py OUT.json
Writes {"available": bool, "reason": str, "results": [{"n", "ppm", "k", "seconds", "items_per_second"}]}.
Rate = dense elements per second (n / time of one topk call), timed with CUDA events, mean of
>= 5 calls after 2 warm-ups, input N(0,1) float32 on the device.
"""
import json
import math
import sys

out = {"available": False, "reason": "", "results": []}
try:
    import torch
    if not torch.cuda.is_available():
        out["reason"] = "torch has no CUDA device"
    else:
        out["available"] = True
        out["torch"] = torch.__version__
        out["device"] = torch.cuda.get_device_name(0)
        g = torch.Generator(device="cuda").manual_seed(1)
        for n in (1 << 20, 16 << 20, 64 << 20):
            x = torch.randn(n, device="cuda", generator=g)
            for ppm in (1000, 10000, 50000):
                k = max(1, math.ceil(ppm * 1e-6 * n))
                for _ in range(2):
                    torch.topk(x.abs(), k)
                torch.cuda.synchronize()
                reps = 5
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(reps):
                    torch.topk(x.abs(), k)
                stop.record()
                torch.cuda.synchronize()
                sec = start.elapsed_time(stop) / 1e3 / reps
                out["results"].append({"n": n, "ppm": ppm, "k": k, "seconds": sec, "items_per_second": n / sec})
            del x
except Exception as e:  # noqa: BLE001 - report, never fail the check on the reference
    out["reason"] = f"{type(e).__name__}: {e}"
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("torch.topk cuda:", "measured" if out["available"] else "not measured (" + out["reason"] + ")")
