#!/usr/bin/env python3
"""Adaptive K against fixed K: the runs and tables of docs/measurements/adaptive-k.md.

For each study it writes one scenario per variant (the study's scenario with only the variant's
hier_ef_topk_int8 entry, renamed <scenario>-<variant>), replays it with `geotb run --seeds N`,
and prints Markdown tables from the reports:

  cliff   scenarios/adaptive-k-cliff.json   "K": "auto" and K = 16
  steady  scenarios/adaptive-k-steady.json  "K": "auto" and K = 4, 8, 16, 32, 64
  trace   scenarios/diurnal-trace.json      "K": "auto" and K = 16

Every figure is the reports': samples/s and times are virtual seconds (the scenarios' compute
profile), accuracy is the trained proxy's, mean ± sample sd over the seeds.

  tools/adaptive_k_study.py --geotb build/harness/geotb --out /tmp/adaptive-k [--seeds 3] [cliff steady trace]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STUDIES = {
    "cliff": ("scenarios/adaptive-k-cliff.json", ["auto", 16]),
    "steady": ("scenarios/adaptive-k-steady.json", ["auto", 4, 8, 16, 32, 64]),
    "trace": ("scenarios/diurnal-trace.json", ["auto", 16]),
}


def variant_scenario(path, k, out_dir):
    """The scenario at `path` with one hier_ef_topk_int8 entry of K = k; trace paths made absolute."""
    with open(os.path.join(ROOT, path)) as f:
        sc = json.load(f)
    base = os.path.dirname(os.path.join(ROOT, path))
    for ev in sc.get("timeline", []):
        if "trace" in ev and not os.path.isabs(ev["trace"]):
            ev["trace"] = os.path.join(base, ev["trace"])
    entry = {"name": "hier_ef_topk_int8", "K": k}
    for s in sc["strategies"]:  # keep the study's other keys of the entry (density, ...)
        if s["name"] == "hier_ef_topk_int8":
            entry = dict(s, K=k)
    label = "auto" if k == "auto" else f"k{k}"
    sc["strategies"] = [entry]
    sc["name"] = f'{sc["name"]}-{label}'
    out = os.path.join(out_dir, sc["name"] + ".json")
    with open(out, "w") as f:
        json.dump(sc, f, indent=2)
    return out, sc


def run(geotb, scenario, seeds, out_dir):
    name = json.load(open(scenario))["name"]
    before = set(glob.glob(os.path.join(out_dir, name + "-2*.json")))
    subprocess.run([geotb, "run", scenario, "--seeds", str(seeds), "--out", out_dir], check=True,
                   stdout=subprocess.DEVNULL)
    new = sorted(set(glob.glob(os.path.join(out_dir, name + "-2*.json"))) - before)
    if not new:
        sys.exit(f"no report for {name} in {out_dir}")
    return json.load(open(new[-1])), new[-1]


def figures(report, window=None):
    s = report["strategies"][0]
    m, series = s["metrics"], s["series"]
    steps = len(series["step_end_s"])
    samples_per_step = m["samples"] / steps
    exposed = m["exposed_comm_s_per_step"] * steps
    compute = m["compute_s_per_step"] * steps
    final = [e["seconds"] for e in s["exchanges"] if e["step"] < 0]
    accs = [r["final_test_accuracy"] for r in s.get("seeds", [])] or [m["final_test_accuracy"]]
    out = {
        "samples_per_s": m["samples_per_s"],
        "exposed_share": exposed / compute,
        # The final dense float32 sync (every K the same) is one exchange the leader waits for whole.
        "exposed_share_training": (exposed - sum(final)) / compute,
        "final_sync_s": sum(final),
        "acc_mean": statistics.mean(accs),
        "acc_sd": statistics.stdev(accs) if len(accs) > 1 else 0.0,
        "seeds": len(accs),
        "wall_s": m["wall_s"],
        "rounds": sum(1 for e in s["exchanges"] if e["step"] >= 0),
        "k_trace": [(series["step_end_s"][e["step"]], e["K"]) for e in s["exchanges"] if e.get("K")],
    }
    if window:
        a, b = window
        n = sum(1 for t in series["step_end_s"] if a < t <= b)
        out["window_samples_per_s"] = n * samples_per_step / (b - a)
        # Exposed share of the window's time: what its n steps' compute and compression (at the
        # run's mean per step) leave of it.
        busy = n * (m["compute_s_per_step"] + m["compress_s_per_step"])
        out["window_exposed_share"] = 1 - busy / (b - a)
    return out


def k_changes(trace):
    """(time, K) at each change of K."""
    out, last = [], None
    for t, k in trace:
        if k != last:
            out.append((t, k))
            last = k
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geotb", default=os.path.join(ROOT, "build/harness/geotb"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("studies", nargs="*", default=list(STUDIES))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for study in args.studies:
        path, variants = STUDIES[study]
        sc0 = json.load(open(os.path.join(ROOT, path)))
        window = None
        if study == "cliff":  # the timeline's drop and recovery
            from_s = [float(e["at"].rstrip("s")) for e in sc0["timeline"]]
            window = (from_s[0], from_s[1])
        rows = {}
        for k in variants:
            scenario, _ = variant_scenario(path, k, args.out)
            report, file = run(args.geotb, scenario, args.seeds, args.out)
            rows[k] = figures(report, window)
            rows[k]["report"] = file
        print(f"\n## {study}: {path}, {args.seeds} seeds\n")
        head = "| K | samples/s | exposed / compute (run) | exposed / compute (training steps) | accuracy (mean ± sd) |"
        line = "|---|---|---|---|---|"
        if window:
            head += f" samples/s in the cliff ({window[0]:g}–{window[1]:g} s) | exposed share of the cliff's time |"
            line += "---|---|"
        print(head + " rounds |\n" + line + "---|")
        for k, r in rows.items():
            cells = [str(k), f'{r["samples_per_s"]:.1f}', f'{100 * r["exposed_share"]:.2f} %',
                     f'{100 * r["exposed_share_training"]:.2f} %', f'{r["acc_mean"]:.4f} ± {r["acc_sd"]:.4f}']
            if window:
                cells.append(f'{r["window_samples_per_s"]:.1f}')
                cells.append(f'{100 * r["window_exposed_share"]:.1f} %')
            cells.append(str(r["rounds"]))
            print("| " + " | ".join(cells) + " |")
        auto = rows.get("auto")
        if auto:
            print("\nauto K changes (time s, K): " +
                  ", ".join(f"({t:.1f}, {k})" for t, k in k_changes(auto["k_trace"])))
            fixed = {k: r for k, r in rows.items() if k != "auto"}
            if window and 16 in fixed:
                print(f'cliff throughput auto / K=16: {auto["window_samples_per_s"] / fixed[16]["window_samples_per_s"]:.3f}; '
                      f'accuracy auto - K=16: {100 * (auto["acc_mean"] - fixed[16]["acc_mean"]):+.2f} pt')
            if 4 in fixed:
                ok = {k: r for k, r in fixed.items() if abs(r["acc_mean"] - fixed[4]["acc_mean"]) <= 0.005}
                best = max(ok, key=lambda k: ok[k]["samples_per_s"])
                print(f'best fixed K within 0.5 pt of K=4: K={best} ({ok[best]["samples_per_s"]:.1f} samples/s); '
                      f'auto / it: {auto["samples_per_s"] / ok[best]["samples_per_s"]:.4f}')
        print("\nreports: " + ", ".join(os.path.basename(r["report"]) for r in rows.values()))


if __name__ == "__main__":
    main()
