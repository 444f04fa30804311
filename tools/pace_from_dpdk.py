#!/usr/bin/env python3
"""Replay a dpdk-mode run's scenario embedded, at that run's own pace, and compare each exchange.

The embedded mode's times depend on its compute profile as much as on the network: the idle time
between two inter-DC exchanges decides how far TCP's window restarts (Linux halves it per RTO of
idle). To compare the in-process TCP model with Linux TCP through the DPDK emulator, give the
embedded run the dpdk run's measured pace:

  step_time                = the dpdk run's compute_s_per_step
  compress_ns_per_element  = its compress time per round / the elements the strategy charges per
                             round (hierarchical, hier_ef_topk_int8: 5 n = compress + decompress
                             2 n, re-base n, apply of the own and M-1 peers' messages M n; M = 2)

then run the copy embedded and print both modes' exchange times and their ratio.

usage: tools/pace_from_dpdk.py SCENARIO DPDK_REPORT [--geotb build/harness/geotb] [--params N] [--out DIR]
"""
import argparse
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile


def mlp_params(model):
    """Parameters of the scenario's "mlp" on Fashion-MNIST (784 inputs, 10 classes)."""
    if model.get("name") != "mlp":
        sys.exit(f"pace_from_dpdk: model {model.get('name')}: give --params")
    sizes = [784] + list(model.get("hidden", [])) + [10]
    return sum((a + 1) * b for a, b in zip(sizes, sizes[1:]))


def charged_elements_per_round(strategy, n, dcs):
    if strategy["name"] not in ("hierarchical", "hier_ef_topk_int8"):
        sys.exit(f"pace_from_dpdk: {strategy['name']}: only the hierarchical strategies' charges are known here")
    return (3 + dcs) * n  # compress + decompress (2 n), re-base (n), apply own + peers (dcs * n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("dpdk_report")
    ap.add_argument("--geotb", default="build/harness/geotb")
    ap.add_argument("--params", type=int, default=0, help="the model's parameter count (default: from an \"mlp\" model)")
    ap.add_argument("--out", default=None, help="where the paced copy and its report go (default: a temp dir)")
    a = ap.parse_args()
    sc = json.load(open(a.scenario))
    rep = json.load(open(a.dpdk_report))
    out = a.out or tempfile.mkdtemp(prefix="geotb-pace-")
    os.makedirs(out, exist_ok=True)
    dcs = len(sc["datacenters"])
    paced = copy.deepcopy(sc)
    for s in rep["strategies"]:
        m = s["metrics"]
        cfg = next(x for x in sc["strategies"] if x["name"] == s["name"])
        K = cfg.get("K", 1)
        n = a.params or mlp_params(sc["workload"]["model"])
        ns = m["compress_s_per_step"] * K / charged_elements_per_round(cfg, n, dcs) * 1e9
        paced["compute"] = {"step_time": f"{m['compute_s_per_step'] * 1e3:.1f}ms", "compress_ns_per_element": round(ns, 2)}
        paced["name"] = sc["name"] + "-paced"
        path = os.path.join(out, paced["name"] + ".json")
        json.dump(paced, open(path, "w"), indent=1)
        subprocess.run([a.geotb, "run", path, "--net", "embedded", "--strategies", s["name"], "--out", out],
                       check=True, capture_output=True)
        e = json.load(open(sorted(glob.glob(os.path.join(out, paced["name"] + "-*.json")))[-1]))
        ee = next(x for x in e["strategies"] if x["name"] == s["name"])
        d = [x["seconds"] for x in s["exchanges"]]
        v = [x["seconds"] for x in ee["exchanges"]]
        print(f"{s['name']}: pace {paced['compute']['step_time']}/step, {ns:.2f} ns/element ({n} parameters)")
        print("  dpdk     " + " ".join(f"{x:.3f}" for x in d) + f"   wall {m['wall_s']:.2f} s")
        print("  embedded " + " ".join(f"{x:.3f}" for x in v) + f"   wall {ee['metrics']['wall_s']:.2f} s")
        print("  ratio    " + " ".join(f"{x / y:.2f}" for x, y in zip(v, d)))


if __name__ == "__main__":
    main()
