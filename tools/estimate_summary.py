#!/usr/bin/env python3
"""Policy "estimate" against shrink and the fault-free run (docs/measurements/gradient-estimate.md).

Usage: estimate_summary.py FAULTED.json NOFAULT.json [--strategy shrink]

FAULTED: a `geotb run --seeds N` report of scenarios/estimate-4x5.json (or a variant); NOFAULT:
the same scenario without its kill (its first strategy is the reference). Prints a Markdown table:
final test accuracy mean ± sd over the seeds, its difference from the fault-free run (points and
relative; paired by seed: both runs share each seed's initial model and data order up to the kill,
with the 95 % confidence interval of the mean paired difference), whether the relative difference
is below the data-topology notes' 0.3 % (and whether the interval lies within ±0.3 %), and the first
seed's estimate against the truth (mean cosine and relative error over the estimated steps) beside
shrink's implicit estimate (the survivors' mean)."""
import json
import statistics
import sys


def accs(run):
    seeds = run.get("seeds") or []
    return [s["final_test_accuracy"] for s in seeds] or [run["metrics"]["final_test_accuracy"]]


# Student's t, two-sided 95 %, by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def seed_accs(run):
    return {s["seed"]: s["final_test_accuracy"] for s in run.get("seeds") or []}


def ms(v):
    return (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    faulted = json.load(open(argv[1]))
    nofault = json.load(open(argv[2]))
    ref = accs(nofault["strategies"][0])
    rm, rs = ms(ref)
    print(f"fault-free ({nofault['strategies'][0]['name']}, {len(ref)} seeds): {rm:.4f} ± {rs:.4f}\n")
    ref_by_seed = seed_accs(nofault["strategies"][0])
    print("| policy | accuracy | Δ vs fault-free (points) | 95 % CI of Δ (paired) | relative | < 0.3 %? "
          "| cos(estimate, truth) | rel. error | cos(survivors' mean, truth) | rel. error |")
    print("|---|---|--:|--:|--:|---|--:|--:|--:|--:|")
    for run in faulted["strategies"]:
        a = accs(run)
        m, s = ms(a)
        d = m - rm
        rel = d / rm
        by_seed = seed_accs(run)
        diffs = [by_seed[k] - ref_by_seed[k] for k in sorted(by_seed) if k in ref_by_seed]
        if len(diffs) > 1:
            dm, dsd = ms(diffs)
            h = T95.get(len(diffs) - 1, 1.96) * dsd / len(diffs) ** 0.5
            ci = f"[{100 * (dm - h):+.2f}, {100 * (dm + h):+.2f}]"
            within = abs(dm - h) < 0.003 * rm and abs(dm + h) < 0.003 * rm
        else:
            ci, within = "–", False
        f = run.get("faults") or {}
        est = f.get("estimates") or []
        def q(key):
            return f"{statistics.mean(e[key] for e in est):.3f}" if est else "–"
        policy = "shrink" if f.get("policy") != "estimate" else f["estimate"]["weights"] + (
            f" (decay {f['estimate']['decay']:g})" if f["estimate"]["decay"] != 1 else "")
        verdict = ("yes" if abs(rel) < 0.003 else "no") + (" (CI within)" if within else " (CI not within)")
        print(f"| {policy} | {m:.4f} ± {s:.4f} | {100 * d:+.2f} | {ci} | {100 * rel:+.2f} % | {verdict} | "
              f"{q('cosine')} | {q('rel_error')} | {q('shrink_cosine')} | {q('shrink_rel_error')} |")


if __name__ == "__main__":
    main(sys.argv)
