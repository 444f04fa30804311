#!/usr/bin/env python3
"""e2e: data centers of different sizes (docs/guide/scenario.md "Unequal data centers") on
scenarios/tiny.json with east 1 worker and west 3.

Embedded: every strategy ends with identical replicas, counts 4 workers' samples, and the report
gives the DC weights 1/4 and 3/4 (by workers), which the compare page shows. The process mode (one OS process per rank, ranks
numbered DC by DC) ends with the embedded mode's final weights. `geotb exec`, whose ranks share one
LOCAL_WORLD_SIZE, refuses unequal sites without --ranks-per-dc, exit 2."""
import subprocess
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])

sc = tiny_scenario(source_root, "tiny-unequal")
sc["datacenters"] = [{"name": "east", "workers": 1}, {"name": "west", "workers": 3}]
sc["workload"]["steps"] = 30
sc["strategies"] = [{"name": "naive_ddp"},
                    {"name": "hier_ef_topk_int8", "K": 4, "density": "5%", "block": 256},
                    {"name": "local_sgd", "tau": 4}]
with tempfile.TemporaryDirectory() as out:
    proc, rep, path = run_and_report(geotb, source_root, sc, out)
    c = subprocess.run([geotb, "compare", str(path), "--out", out, "--name", "cmp"], capture_output=True, text=True,
                       timeout=60)
    assert c.returncode == 0, c.stderr
    html = (Path(out) / "cmp.html").read_text()
    assert "east (1 workers, weight 0.25), west (3 workers, weight 0.75)" in html, "the HTML shows the weights"
assert "2 data centers of 1 + 3 workers" in proc.stdout, proc.stdout
w = rep["scenario"]["workload"]
assert w["dc_weight_by_dc"] == {"east": 0.25, "west": 0.75}, w
assert [d["workers"] for d in rep["scenario"]["datacenters"]] == [1, 3]
for s in rep["strategies"]:
    m = s["metrics"]
    assert m["replica_max_abs_diff"] == 0.0, (s["name"], m["replica_max_abs_diff"])
    assert m["samples"] == 4 * 32 * 30, (s["name"], m["samples"])
embedded = {s["name"]: s["final_weights_sha256"] for s in rep["strategies"]}
print("e2e unequal: embedded 1 + 3 workers, weights 1/4 and 3/4, every replica identical")

sc["name"] = "tiny-unequal-process"
sc["network"] = "process"
sc["strategies"] = [s for s in sc["strategies"] if s["name"] != "naive_ddp"]
with tempfile.TemporaryDirectory() as out:
    _, rep, _ = run_and_report(geotb, source_root, sc, out, timeout=300)
for s in rep["strategies"]:
    assert s["metrics"]["replica_max_abs_diff"] == 0.0, s["name"]
    assert s["final_weights_sha256"] == embedded[s["name"]], f"{s['name']}: the process mode ended elsewhere"
print("e2e unequal: the process mode ends with the embedded mode's final weights")

with tempfile.TemporaryDirectory() as out:
    path = Path(out) / "unequal.json"
    import json
    path.write_text(json.dumps(sc))
    p = subprocess.run([geotb, "exec", str(path), "--", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "datacenters: 1 + 3 workers: geotb exec runs the same number of ranks in every data center" in p.stderr, p.stderr
print("e2e unequal: " + p.stderr.strip()[:160])
