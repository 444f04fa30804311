#!/usr/bin/env python3
"""Checks of the represented model (docs/guide/represented.md), each replaying two variants of a
scenario with ./build/harness/geotb and comparing their reports.

  tools/represented_check.py identity SCENARIO OUTDIR
      The scenario as it is, and with workload.represents declaring the trained model itself
      (scale 1). Both get a declared compute profile if the scenario has none ({"step_time":
      "50ms"}), so that timing is a function of the file. tools/report_diff.py --timing must show
      every figure identical.

  tools/represented_check.py proportional SCENARIO OUTDIR [--hidden N[,N...]] [--steps S]
                                 [--tolerance 0.02]
      The scenario with its MLP's hidden layers set to N (default 1024: 784-1024-10, 813,066
      parameters, ~16x the 784-64-10 proxy; "2048,2048": two layers, 5.8 M parameters, two DDP
      buckets) training for real, against the 784-64-10 proxy representing exactly those tensors,
      with the same compute profile (and S steps if given). Per strategy, samples/s, exposed
      communication per step and WAN payload bytes must agree within the tolerance (relative).

OUTDIR "-": a temporary directory, removed afterwards. GEOTB (environment): the geotb binary
(default ./build/harness/geotb).

Exit 0: the check holds; 1: it does not; 2: a run failed or bad usage.
"""
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEOTB = os.environ.get("GEOTB", os.path.join(ROOT, "build", "harness", "geotb"))


def mlp_params(hidden):
    total, inp = 0, 784
    for h in hidden:
        total += inp * h + h
        inp = h
    return total + inp * 10 + 10


def mlp_tensors(hidden):
    """The MLP's parameter shapes in libtorch's order (weight out x in, then bias, per layer):
    what DDP's buckets are cut from (a declared count would be cut flat)."""
    shapes, inp = [], 784
    for h in hidden + [10]:
        shapes += [[h, inp], [h]]
        inp = h
    return shapes


def trained_hidden(s):
    m = s["workload"]["model"]
    if isinstance(m, str):
        return [128, 64]
    return m.get("hidden", [128, 64])


def run(scenario, outdir, name):
    path = os.path.join(outdir, name + ".json")
    with open(path, "w") as f:
        json.dump(scenario, f, indent=1)
    rep_dir = os.path.join(outdir, name)
    os.makedirs(rep_dir, exist_ok=True)
    r = subprocess.run([GEOTB, "run", path, "--out", rep_dir], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        raise SystemExit(f"represented_check: geotb run {path} failed ({r.returncode})")
    reports = sorted(glob.glob(os.path.join(rep_dir, "*.json")), key=os.path.getmtime)
    return reports[-1]


def with_profile(s):
    if s.get("compute") is None and not any("compute" in d for d in s["datacenters"]):
        s["compute"] = {"step_time": "50ms"}
        s["clock"] = "virtual"
    return s


def identity(src, outdir):
    base = with_profile(json.load(open(src)))
    rep = copy.deepcopy(base)
    rep["workload"]["represents"] = {"name": "the trained model", "tensors": mlp_tensors(trained_hidden(base))}
    a = run(base, outdir, "as-is")
    b = run(rep, outdir, "represents-itself")
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "report_diff.py"), "--timing", a, b]).returncode


def proportional(src, outdir, hidden, tol, steps=None):
    base = with_profile(json.load(open(src)))
    if steps:
        base["workload"]["steps"] = steps
    name = "784-" + "-".join(str(h) for h in hidden) + "-10"
    for st in base["strategies"]:
        if st["name"] == "naive_ddp":
            st["collective"] = "eager_ring"  # Gloo's ring cannot be represented (its rendezvous count grows)
    big = copy.deepcopy(base)
    big["workload"]["model"] = {"name": "mlp", "hidden": hidden}
    proxy = copy.deepcopy(base)
    proxy["workload"]["model"] = {"name": "mlp", "hidden": [64]}
    proxy["workload"]["represents"] = {"name": f"mlp-{name}", "tensors": mlp_tensors(hidden)}
    ra = json.load(open(run(big, outdir, f"trained-{name}")))
    rb = json.load(open(run(proxy, outdir, f"proxy-represents-{name}")))
    print(f"trained {name} ({mlp_params(hidden)} parameters) vs 784-64-10 ({mlp_params([64])}) "
          f"representing it: relative difference (proxy / trained - 1)")
    print(f"{'strategy':20} {'samples/s':>22} {'exposed comm s/step':>26} {'WAN payload bytes':>30}")
    worst = 0.0
    mb = {s["name"]: s["metrics"] for s in rb["strategies"]}
    for s in ra["strategies"]:
        a, b = s["metrics"], mb[s["name"]]
        cells = []
        for k in ("samples_per_s", "exposed_comm_s_per_step", "wan_payload_bytes"):
            x, y = a[k], b[k]
            d = (y / x - 1) if x else (0.0 if y == 0 else float("inf"))
            worst = max(worst, abs(d))
            cells.append(f"{x:.4g}/{y:.4g} {d:+.2%}")
        print(f"{s['name']:20} {cells[0]:>22} {cells[1]:>26} {cells[2]:>30}")
    print(f"largest relative difference {worst:.3%} (tolerance {tol:.1%})")
    return 0 if worst <= tol else 1


def main(argv):
    if len(argv) < 4 or argv[1] not in ("identity", "proportional"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[3] == "-":
        with tempfile.TemporaryDirectory() as out:
            return main(argv[:3] + [out] + argv[4:])
    os.makedirs(argv[3], exist_ok=True)
    if argv[1] == "identity":
        return identity(argv[2], argv[3])
    hidden, tol, steps = [1024], 0.02, None
    rest = argv[4:]
    while rest:
        if rest[0] == "--hidden":
            hidden = [int(h) for h in rest[1].split(",")]
        elif rest[0] == "--steps":
            steps = int(rest[1])
        elif rest[0] == "--tolerance":
            tol = float(rest[1])
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
        rest = rest[2:]
    return proportional(argv[2], argv[3], hidden, tol, steps)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
