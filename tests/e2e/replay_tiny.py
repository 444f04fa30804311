#!/usr/bin/env python3
"""e2e: replay scenarios/tiny.json with the geotb binary, validate the report against
harness/report.schema.json (python3-jsonschema) and check that both strategies learned."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

geotb, source_root = sys.argv[1], Path(sys.argv[2])
schema = json.loads((source_root / "harness/report.schema.json").read_text())

with tempfile.TemporaryDirectory() as out:
    proc = subprocess.run([geotb, "run", str(source_root / "scenarios/tiny.json"), "--out", out],
                          capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    assert proc.returncode == 0, f"geotb run exited {proc.returncode}"
    reports = list(Path(out).glob("tiny-*.json"))
    assert len(reports) == 1, f"expected one report, found {reports}"
    assert str(reports[0]) in proc.stdout, "the summary must print the report's path"
    rep = json.loads(reports[0].read_text())

jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
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
