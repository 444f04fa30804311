#!/usr/bin/env python3
"""The semantic partition with and without controlled randomisation (docs/measurements/non-iid.md,
"Semantic partition").

Each variant is scenarios/partition-study.json (local_sgd tau 16 and hier_ef_topk_int8 K 16, sites of
two workers) on 2 and 4 sites with:
  iid        the IID reference
  semantic   {"kind": "semantic"}: PCA-16 of the pixels, k-means into one cluster per worker,
             neighbouring clusters on neighbouring workers
  mix 0.85   semantic + workload.global_batch {"fraction": 0.15, "beta": 0.85}: 15 % of each batch
             from a global pool, plain batch mixing (beta = 1 - fraction)
  mix 0.5    semantic + global_batch {"fraction": 0.15, "beta": 0.5}: the pool's gradient weighs half
`geotb run --seeds N` replays each; the table gives final test accuracy (mean ± sample sd over the
seeds), samples/s and WAN payload bytes (virtual clock: functions of the file), and the pool's
one-time staging bytes.

  tools/semantic_study.py --geotb build/harness/geotb --out /tmp/semantic [--seeds 3]
"""
import argparse
import json
import os

from partition_study import NAMES, ROOT, accuracy, replay, with_sites  # the same sites, replay, accuracy
VARIANTS = [("iid", "iid", None),
            ("semantic", {"kind": "semantic"}, None),
            ("mix0.85", {"kind": "semantic"}, {"fraction": 0.15, "beta": 0.85}),
            ("mix0.5", {"kind": "semantic"}, {"fraction": 0.15, "beta": 0.5})]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geotb", default=os.path.join(ROOT, "build/harness/geotb"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base = json.load(open(os.path.join(ROOT, "scenarios/partition-study.json")))
    rows = []
    for sites in (2, 4):
        for label, part, mix in VARIANTS:
            sc = with_sites(base, sites)
            sc["workload"]["partition"] = part
            if mix:
                sc["workload"]["global_batch"] = mix
            sc["name"] = f"semantic-study-{sites}dc-{label}".replace(".", "p")
            _, rep = replay(args.geotb, args.out, sc, args.seeds)
            w = rep["scenario"]["workload"]
            hist = w.get("label_histogram_by_dc", {}).get(NAMES[0])
            staging = w.get("global_batch", {}).get("pool_staging_wan_bytes", 0)
            for s in rep["strategies"]:
                mean, sd, _ = accuracy(s)
                m = s["metrics"]
                rows.append((sites, label, s["name"], mean, sd, m["samples_per_s"], m["wan_payload_bytes"],
                             staging, hist))
    print(f"| sites | data | strategy | final accuracy (mean ± sd, {args.seeds} seeds) | samples/s | WAN payload bytes | "
          "pool staging bytes | DC 0's examples per class |")
    print("|---|---|---|---|---|---|---|---|")
    for sites, label, name, mean, sd, sps, wan, staging, hist in rows:
        print(f"| {sites} | {label} | {name} | {mean:.4f} ± {sd:.4f} | {sps:.0f} | {wan:,} | {staging:,} | "
              f"{' '.join(map(str, hist)) if hist else 'all classes (IID)'} |")
    print()
    for sites in (2, 4):
        for name in sorted({r[2] for r in rows}):
            acc = {r[1]: r[3] for r in rows if r[0] == sites and r[2] == name}
            gap = acc["iid"] - acc["semantic"]
            print(f"{sites} sites, {name}: gap IID - semantic {100 * gap:+.2f} pt; mix 0.85 recovers "
                  f"{100 * (acc['mix0.85'] - acc['semantic']):+.2f} pt, mix 0.5 {100 * (acc['mix0.5'] - acc['semantic']):+.2f} pt")


if __name__ == "__main__":
    main()
