#!/usr/bin/env python3
"""e2e: non-IID partitions (docs/guide/scenario.md "Data partitions") on scenarios/tiny.json.

label_skew with 5 classes per DC: the report's histograms hold exactly classes 0-4 in east and 5-9
in west, every training example once; the process mode (each worker partitions for itself) ends
with the embedded mode's final weights. An impossible Dirichlet min_size is refused before
anything runs, exit 2, naming the field. The semantic partition with a global batch: every example
once, the pool in the report, the process mode again ending with the embedded mode's weights.
SCAFFOLD with the optimizer's lr under momentum 0.9 warns that it is expected to diverge."""
import subprocess
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])

sc = tiny_scenario(source_root, "tiny-label-skew")
sc["workload"]["partition"] = {"kind": "label_skew", "classes_per_dc": 5}
sc["strategies"] = [s for s in sc["strategies"] if s["name"] == "hier_ef_topk_int8"]
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out)
h = rep["scenario"]["workload"]["label_histogram_by_dc"]
print("examples per class:", h)
assert all(c > 0 for c in h["east"][:5]) and h["east"][5:] == [0] * 5, h
assert all(c > 0 for c in h["west"][5:]) and h["west"][:5] == [0] * 5, h
assert sum(h["east"]) + sum(h["west"]) == sc["workload"]["train_examples"], h
assert rep["scenario"]["workload"]["partition"] == {"kind": "label_skew", "classes_per_dc": 5}
embedded = rep["strategies"][0]

sc["name"] = "tiny-label-skew-process"
sc["network"] = "process"
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out, timeout=300)
process = rep["strategies"][0]
assert process["metrics"]["replica_max_abs_diff"] == 0.0
assert process["final_weights_sha256"] == embedded["final_weights_sha256"], "the process mode partitioned otherwise"
print("e2e partition: label_skew histograms exact; process mode = embedded mode's final weights "
      f"({embedded['final_weights_sha256'][:12]}...)")

# The semantic partition with a global batch: every example once, the pool's size and draws in the
# report, and the process mode (each worker embeds, clusters and draws for itself) again ends with
# the embedded mode's final weights.
sc = tiny_scenario(source_root, "tiny-semantic")
sc["workload"]["partition"] = {"kind": "semantic", "components": 8}
sc["workload"]["global_batch"] = {"fraction": 0.15}
sc["strategies"] = [s for s in sc["strategies"] if s["name"] == "hier_ef_topk_int8"]
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out)
w = rep["scenario"]["workload"]
h = w["label_histogram_by_dc"]
assert sum(h["east"]) + sum(h["west"]) == sc["workload"]["train_examples"], h
g = w["global_batch"]
assert (g["pool_examples"], g["pool_examples_per_step"], g["beta"]) == (1200, 5, 0.5), g  # ceil(.15 x 8000), round(.15 x 32)
assert 0 < g["pool_staging_wan_bytes"] <= 2 * 1200 * 785, g
embedded = rep["strategies"][0]
sc["name"] = "tiny-semantic-process"
sc["network"] = "process"
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out, timeout=300)
assert rep["strategies"][0]["final_weights_sha256"] == embedded["final_weights_sha256"], "semantic: the process mode differs"
print(f"e2e partition: semantic + global batch, histograms {h}, pool {g}; process mode = embedded")

# SCAFFOLD with the optimizer's lr under momentum 0.9 is expected to diverge: the run says so.
warn = tiny_scenario(source_root, "tiny-scaffold")
warn["strategies"] = [{"name": "local_sgd", "tau": 4, "scaffold": True}]
warn["workload"]["steps"] = 4
with tempfile.TemporaryDirectory() as out:
    proc, _, _ = run_and_report(geotb, source_root, warn, out)
assert 'local_sgd: "scaffold": true with "scaffold_lr": "optimizer" and workload.optimizer.momentum 0.9: the control ' \
       "variates' round-to-round gain is 9 > 1" in proc.stderr, proc.stderr
print("e2e partition: SCAFFOLD under momentum 0.9 warns")

bad = tiny_scenario(source_root, "tiny-impossible")
bad["workload"]["partition"] = {"kind": "dirichlet", "alpha": 0.1, "level": "worker", "min_size": 5000}
with tempfile.TemporaryDirectory() as out:
    path = Path(out) / "bad.json"
    import json
    path.write_text(json.dumps(bad))
    p = subprocess.run([geotb, "run", str(path), "--out", out], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "workload.partition: dirichlet: no draw in 1000 gave every one of the 4 parts 5000 examples" in p.stderr, p.stderr
    assert not list(Path(out).glob("tiny-impossible-*.json")), "a report was written"
print("e2e partition: " + p.stderr.strip()[:150])
