#!/usr/bin/env python3
"""examples/ddp_fashion_mnist.py with geotb's hier_ef_topk_int8 in place of DDP's allreduce:

    sudo ./build/harness/geotb exec scenarios/dpdk-2x2.json -- python3 examples/ddp_hier_hook.py

The change is the lines under `if args.sync == "hier"` there: a HierEF for the model, its DDP
communication hook, hier.step() after the optimizer's and hier.finish() at the end
(docs/guide/comm-hook.md). Options as ddp_fashion_mnist.py's (--K, --density, --checkpoint, --resume).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_fashion_mnist  # noqa: E402

if __name__ == "__main__":
    ddp_fashion_mnist.main(default_sync="hier")
