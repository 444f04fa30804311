#!/usr/bin/env python3
"""e2e: "K": "auto" (docs/guide/strategies.md, Adaptive K) on scenarios/tiny.json.

Embedded, virtual clock, a compute profile and a bandwidth cliff: K grows after the cliff, and a
second run decides the same K sequence and ends with the same weights. Process mode (wall clock,
one process per rank on loopback): every worker holds the same K, so the run finishes with every
replica identical. `geotb compare` plots K per round beside the link's bandwidth."""
import subprocess
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])


def scenario(name):
    sc = tiny_scenario(source_root, name)
    sc["strategies"] = [{"name": "hier_ef_topk_int8", "K": "auto", "K_max": 32, "density": "5%"}]
    return sc


def k_trace(rep):
    s = rep["strategies"][0]
    return [(e["step"], e["K"]) for e in s["exchanges"] if e["step"] >= 0]


sc = scenario("tiny-auto-k")
sc["compute"] = {"step_time": "5ms"}
sc["timeline"] = [{"at": "0.1s", "link": ["east", "west"], "set": {"bandwidth": "1Mbps"}}]
runs = []
for i in range(2):
    with tempfile.TemporaryDirectory() as out:
        _, rep, path = run_and_report(geotb, source_root, sc, out)
        runs.append(rep)
        if i == 0:
            p = subprocess.run([geotb, "compare", str(path), "--out", out, "--baseline", "hier_ef_topk_int8"],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stdout + p.stderr
            html = (Path(out) / "tiny-auto-k-compare.html").read_text()
            assert 'id="fig-adaptive-k"' in html and 'id="fig-wan-bandwidth"' in html, "the K chart is missing"
a, b = runs
ks = k_trace(a)
print("embedded K per round (step, K):", ks)
assert all(k >= 1 for _, k in ks)
cliff = a["strategies"][0]["series"]["step_end_s"]
before = [k for step, k in ks if cliff[step] < 0.1]
after = [k for step, k in ks if cliff[step] > 0.3]
assert before and after and max(after) > max(before), f"K did not grow after the cliff: {before} -> {after}"
assert k_trace(b) == ks, "a second run decided another K sequence"
assert a["strategies"][0]["final_weights_sha256"] == b["strategies"][0]["final_weights_sha256"]
assert a["scenario"]["wan"][0]["bandwidth_changes"] == [{"at_s": 0.1, "bandwidth_bps": 1e6}]
assert a["strategies"][0]["config"]["K"] == "auto" and a["strategies"][0]["config"]["K_max"] == 32
print(f"e2e adaptive K, embedded: K {max(before)} before the cliff, up to {max(after)} after; "
      "the same K sequence and weights twice")

sc = scenario("tiny-auto-k-process")
sc["network"] = "process"
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out, timeout=300)
s = rep["strategies"][0]
ks = k_trace(rep)
print("process-mode K per round (step, K):", ks)
assert s["metrics"]["replica_max_abs_diff"] == 0.0, "replicas differ: the workers did not hold the same K"
assert ks and all(k >= 1 for _, k in ks)
steps = [step for step, _ in ks]
for (s0, k0), s1 in zip(ks, steps[1:]):
    assert s1 == s0 + k0, f"round at step {s0} decided K {k0}, next round at {s1}"
print(f"e2e adaptive K, process mode: {len(ks)} rounds, every replica identical")
