#!/usr/bin/env python3
"""Summarises the asynchronous strategies of a geotb report (the "asynchrony" section).

  tools/async_summary.py REPORT.json [--window A B]

Per strategy: samples/s, final accuracy (mean ± sd over seeds when the report has them), and per
site its steps, rounds, staleness histogram, largest staleness and time waited at the bound. With
--window A B (seconds from the strategy's start, e.g. a link outage): each site's rounds and steps
per second inside the window, and the largest divergence (relative L2) inside and after it.
Synchronous strategies get the first line only.
"""
import argparse
import json
import statistics


def seeds_text(run, key):
    seeds = run.get("seeds") or []
    vals = [s[key] for s in seeds]
    if len(vals) < 2:
        return f"{run['metrics'][key]:.4f}" if key == "final_test_accuracy" else f"{run['metrics'][key]:.0f}"
    fmt = "{:.4f} ± {:.4f}" if key == "final_test_accuracy" else "{:.0f} ± {:.0f}"
    return fmt.format(statistics.mean(vals), statistics.stdev(vals)) + f" ({len(vals)} seeds)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("--window", nargs=2, type=float, metavar=("A", "B"))
    a = ap.parse_args()
    with open(a.report) as f:
        rep = json.load(f)
    names = [d["name"] for d in rep["scenario"]["datacenters"]]
    for run in rep["strategies"]:
        print(f"{run['name']}: samples/s {seeds_text(run, 'samples_per_s')}, accuracy "
              f"{seeds_text(run, 'final_test_accuracy')}, wall {run['metrics']['wall_s']:.2f} s")
        asy = run.get("asynchrony")
        if not asy:
            continue
        K = run["config"].get("K")
        bound = asy["max_staleness"]
        print(f"  bound {bound if bound is not None else 'none'}, f(s) = {asy['staleness_weight']}")
        for s in asy["sites"]:
            hist = ", ".join(f"s={k}: {c}" for k, c in enumerate(s["staleness_histogram"]) if c)
            line = (f"  {names[s['dc']]:>10}: {s['steps']} steps, {s['rounds']} rounds, max s "
                    f"{s['max_staleness_observed']}, waited {s['wait_at_bound_s']:.3f} s; {hist or '-'}")
            if a.window:
                lo, hi = a.window
                inside = [t for t in s["round_s"] if lo <= t < hi]
                after = [t for t in s["round_s"] if t >= hi]
                line += (f"; in [{lo:g}, {hi:g}) s: {len(inside)} rounds = {len(inside) * K / (hi - lo):.1f} "
                         f"steps/s, after: {len(after)} rounds")
            print(line)
        if a.window and asy["divergence"]:
            lo, hi = a.window
            div = asy["divergence"]
            pick = lambda f: max((d["relative_l2"] for d in div if f(d["t_s"])), default=0.0)
            print(f"  divergence (max relative L2): before {pick(lambda t: t < lo):.4f}, during "
                  f"{pick(lambda t: lo <= t < hi):.4f}, after {pick(lambda t: t >= hi):.4f}, "
                  f"last {div[-1]['relative_l2']:.4f}")


if __name__ == "__main__":
    main()
