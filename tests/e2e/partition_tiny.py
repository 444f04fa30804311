#!/usr/bin/env python3
"""e2e: non-IID partitions (docs/guide/scenario.md "Data partitions") on scenarios/tiny.json.

label_skew with 5 classes per DC: the report's histograms hold exactly classes 0-4 in east and 5-9
in west, every training example once; the process mode (each worker partitions for itself) ends
with the embedded mode's final weights. An impossible Dirichlet min_size is refused before
anything runs, exit 2, naming the field."""
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
