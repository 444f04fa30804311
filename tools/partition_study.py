#!/usr/bin/env python3
"""IID against Dirichlet(alpha) per data center: the accuracy gap of local_sgd (tau 16) and
hier_ef_topk_int8 (K 16), on 2 and 4 sites (docs/measurements/non-iid.md).

Each variant is scenarios/partition-study.json with its sites and partition; `geotb run --seeds N`
replays it; the table gives final test accuracy, mean ± sample sd over the seeds, and the
examples per class of DC 0 (the report's scenario.workload.label_histogram_by_dc).

  tools/partition_study.py --geotb build/harness/geotb --out /tmp/partition [--seeds 3] [--alpha 0.1]
                           [--fedprox MU] [--scaffold [--scaffold-lr effective]] [--momentum-sync averaged]
                           [--lr LR] [--momentum M]

--fedprox MU adds local_sgd with FedProx (fedprox_mu MU) on the Dirichlet partitions, --scaffold
local_sgd with SCAFFOLD (its scaffold_lr: --scaffold-lr): how much of local_sgd's gap each recovers.
--momentum-sync sets those added runs' momentum_sync (default local, as the baseline's); --lr and
--momentum every run's optimizer.
"""
import argparse
import glob
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["beijing", "ningxia", "shanghai", "guangzhou"]


def with_sites(base: dict, sites: int) -> dict:
    """A copy of `base` with `sites` data centers of its first one's workers, every pair linked as its
    first WAN link."""
    sc = json.loads(json.dumps(base))
    sc["datacenters"] = [{"name": NAMES[i], "workers": base["datacenters"][0]["workers"]} for i in range(sites)]
    sc["wan"] = [{"between": [NAMES[a], NAMES[b]], **{k: v for k, v in base["wan"][0].items() if k != "between"}}
                 for a in range(sites) for b in range(a + 1, sites)]
    return sc


def replay(geotb: str, out: str, sc: dict, seeds: int) -> tuple:
    """Writes `sc` into `out`, replays it with `geotb run --seeds`, returns (its path, the report)."""
    path = os.path.join(out, sc["name"] + ".json")
    json.dump(sc, open(path, "w"), indent=2)
    before = set(glob.glob(os.path.join(out, sc["name"] + "-2*.json")))
    subprocess.run([geotb, "run", path, "--seeds", str(seeds), "--out", out], check=True, stdout=subprocess.DEVNULL)
    return path, json.load(open(sorted(set(glob.glob(os.path.join(out, sc["name"] + "-2*.json"))) - before)[-1]))


def accuracy(s: dict) -> tuple:
    """A strategy's final test accuracy as (mean, sample sd, seeds): its seed summary, or with one
    seed its own figure."""
    sm = s.get("seed_summary", {}).get("final_test_accuracy")
    return (sm["mean"], sm["sd"], sm["n"]) if sm else (s["metrics"]["final_test_accuracy"], 0.0, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geotb", default=os.path.join(ROOT, "build/harness/geotb"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--fedprox", type=float, default=0, help="also run local_sgd with this fedprox_mu (non-IID only)")
    ap.add_argument("--scaffold", action="store_true", help="also run local_sgd with SCAFFOLD (non-IID only)")
    ap.add_argument("--scaffold-lr", default="optimizer", choices=["optimizer", "effective"],
                    help="scaffold_lr of the --scaffold runs")
    ap.add_argument("--momentum-sync", default="local", choices=["local", "averaged"],
                    help="momentum_sync of the --fedprox and --scaffold runs")
    ap.add_argument("--lr", type=float, help="every run's optimizer.lr (default: the scenario's, 0.05)")
    ap.add_argument("--momentum", type=float, help="every run's optimizer.momentum (default: the scenario's, 0.9)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base = json.load(open(os.path.join(ROOT, "scenarios/partition-study.json")))
    rows = []
    variants = [(sites, part, None, "", "") for sites in (2, 4)
                for part in ("iid", {"kind": "dirichlet", "alpha": args.alpha, "level": "dc"})]
    # Drift control: local_sgd (tau 16) with FedProx or SCAFFOLD on the Dirichlet partitions; each
    # its own scenario file (suffix) and row name (the strategy's name + what was added).
    sync = {} if args.momentum_sync == "local" else {"momentum_sync": args.momentum_sync}
    sync_name = "" if args.momentum_sync == "local" else f", momentum {args.momentum_sync}"
    extra = []
    if args.fedprox > 0:
        extra.append(({"fedprox_mu": args.fedprox}, "-fedprox", f" + FedProx mu {args.fedprox:g}{sync_name}"))
    if args.scaffold:
        eff = args.scaffold_lr == "effective"
        extra.append(({"scaffold": True, **({"scaffold_lr": "effective"} if eff else {})}, "-scaffold" + ("-eff" if eff else ""),
                      f" + SCAFFOLD{' (scaffold_lr effective)' if eff else ''}{sync_name}"))
    variants += [(sites, {"kind": "dirichlet", "alpha": args.alpha, "level": "dc"},
                  [{"name": "local_sgd", "tau": 16, **keys, **sync}], suffix + ("-avgm" if sync else ""), added)
                 for keys, suffix, added in extra for sites in (2, 4)]
    for sites, part, strategies, suffix, added in variants:
            sc = with_sites(base, sites)
            if strategies:
                sc["strategies"] = strategies
            sc["workload"]["partition"] = part
            for key in ("lr", "momentum"):
                if getattr(args, key) is not None:
                    sc["workload"]["optimizer"][key] = getattr(args, key)
            label = "iid" if part == "iid" else f"dirichlet{args.alpha:g}"
            sc["name"] = f"partition-study-{sites}dc-{label}{suffix}".replace(".", "p")
            path, rep = replay(args.geotb, args.out, sc, args.seeds)
            hist = rep["scenario"]["workload"].get("label_histogram_by_dc", {}).get(NAMES[0])
            for s in rep["strategies"]:
                mean, sd, n = accuracy(s)
                rows.append((sites, label, s["name"] + added, mean, sd, n, hist, os.path.basename(path)))
    print(f"| sites | partition | strategy | final accuracy (mean ± sd, {args.seeds} seeds) | DC 0's examples per class |")
    print("|---|---|---|---|---|")
    for sites, label, name, mean, sd, n, hist, _ in rows:
        print(f"| {sites} | {label} | {name} | {mean:.4f} ± {sd:.4f} | {' '.join(map(str, hist)) if hist else 'all classes (IID)'} |")
    print()
    for sites in (2, 4):
        for name in sorted({r[2] for r in rows if r[1] == "iid"}):
            iid = [r for r in rows if r[0] == sites and r[2] == name and r[1] == "iid"][0]
            non = [r for r in rows if r[0] == sites and r[2] == name and r[1] != "iid"][0]
            print(f"{sites} sites, {name}: gap {100 * (iid[3] - non[3]):+.2f} pt (IID - Dirichlet)")
            for r in rows:
                if r[0] == sites and r[2].startswith(name + " + "):
                    gap, left = iid[3] - non[3], iid[3] - r[3]
                    print(f"{sites} sites, {r[2]}: gap {100 * left:+.2f} pt; recovers {100 * (gap - left):+.2f} pt "
                          f"of {100 * gap:.2f}")


if __name__ == "__main__":
    main()
