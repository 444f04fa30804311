#!/usr/bin/env python3
"""e2e: replay scenarios/tiny.json with the geotb binary, validate the report against
harness/report.schema.json (python3-jsonschema) and check that both strategies learned."""
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])

with tempfile.TemporaryDirectory() as out:
    proc, rep, _ = run_and_report(geotb, source_root, tiny_scenario(source_root, "tiny"), out, timeout=600)

by_name = {s["name"]: s for s in rep["strategies"]}
assert set(by_name) == {"naive_ddp", "hier_ef_topk_int8"}, by_name.keys()
for name, s in by_name.items():
    m = s["metrics"]
    acc = m["final_test_accuracy"]
    print(f"{name}: accuracy {acc:.4f}, {m['samples_per_s']:.0f} samples/s, WAN {m['wan_payload_bytes']} B")
    assert acc > 0.6, f"{name} did not learn: test accuracy {acc} (chance is 0.1)"
    assert m["replica_max_abs_diff"] == 0.0, f"{name}: replicas differ at the end"
    assert len(s["series"]["loss"]) == rep["scenario"]["workload"]["steps"]
    first, last = s["series"]["loss"][:5], s["series"]["loss"][-5:]
    assert sum(last) < sum(first), f"{name}: loss did not go down ({first} -> {last})"
hier = by_name["hier_ef_topk_int8"]
assert hier["metrics"]["exchanges"] == len(hier["exchanges"]) == 60 // 4 + 1
assert rep["comparison"]["strategies"]["hier_ef_topk_int8"]["wan_bytes_ratio"] < 0.05
assert rep["failures"] == []
print("e2e tiny: report valid, both strategies learned")

# A run that would not fit is refused before it starts, the estimate and the limit named.
import subprocess
p = subprocess.run([geotb, "run", str(source_root / "scenarios/tiny.json"), "--memory-limit", "100MiB"],
                   text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
assert p.returncode == 2, p.stdout
assert "needs about 199 MiB of memory (150 MiB + dataset 30 MiB + 4 workers x 4 MiB" in p.stdout, p.stdout
assert "above the limit of 100 MiB (--memory-limit)" in p.stdout, p.stdout
print("e2e tiny: --memory-limit 100MiB refused: " + p.stdout.strip().split("needs", 1)[1][:60] + "...")

# A number JSON cannot hold (found by the scenario fuzz target): the file named, exit 2.
with tempfile.TemporaryDirectory() as d:
    bad = Path(d) / "huge.json"
    bad.write_text('{"schema": 1e999}')
    p = subprocess.run([geotb, "run", str(bad)], text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.returncode == 2 and "huge.json: not valid JSON: [json.exception.out_of_range.406]" in p.stdout, p.stdout
print("e2e tiny: 1e999 in a scenario refused, exit 2, the file named")
