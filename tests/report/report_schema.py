#!/usr/bin/env python3
"""The report writer against its JSON Schema: write_crafted_report writes a report through
harness::make_report/write_report from crafted measurements; the file must validate against
harness/report.schema.json and carry the derived figures of model/metrics.h exactly.

  report_schema.py <write_crafted_report> <source root>"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

exe, root = sys.argv[1], Path(sys.argv[2])
schema = json.loads((root / "harness/report.schema.json").read_text())
with tempfile.TemporaryDirectory() as tmp:
    path = subprocess.run([exe, str(root), tmp], check=True, capture_output=True, text=True).stdout.strip()
    rep = json.loads(Path(path).read_text())
jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)

by = {s["name"]: s for s in rep["strategies"]}
naive, hier = by["naive_ddp"]["metrics"], by["hier_ef_topk_int8"]["metrics"]
steps = rep["scenario"]["workload"]["steps"]
assert naive["samples"] == steps * 32 * 4 and naive["wall_s"] == 0.25 * steps, naive
assert naive["samples_per_s"] == naive["samples"] / naive["wall_s"], naive
assert naive["compute_s_per_step"] == 1e-3 and naive["exposed_comm_s_per_step"] == 3e-3, naive
assert naive["comm_compute_ratio"] == 3.0, naive
assert naive["exchanges"] == steps and naive["exchange_efficiency_mean"] is None, naive
assert "exchange_seconds_mean" in naive and naive["exchange_seconds_mean"] is None, naive
assert naive["wan_payload_bytes"] == 4 << 20 and naive["final_test_accuracy"] == 0.75, naive
assert hier["exchanges"] == steps // 4 and hier["exchange_efficiency_mean"] == 0.5, hier
assert all(e["efficiency"] == 0.5 and e["bytes"] == 1024 for e in by["hier_ef_topk_int8"]["exchanges"])
hier_log = by["hier_ef_topk_int8"]["exchanges"]
assert hier["exchange_seconds_mean"] == sum(e["seconds"] for e in hier_log) / len(hier_log), hier
assert abs(hier["exchange_seconds_mean"] - 0.02) < 1e-15, hier
cmp = rep["comparison"]
assert "dataplane" not in by["naive_ddp"], by["naive_ddp"]
assert by["hier_ef_topk_int8"]["dataplane"] == {
    "scheduling": "SCHED_FIFO 50, pinned to CPU 1", "stalls": 2, "stall_total_s": 0.003, "max_iteration_s": 0.0025,
    "run_s": 15.0, "stall_share": 0.003 / 15.0, "stalls_ok": True}, by["hier_ef_topk_int8"]["dataplane"]
assert cmp["baseline"] == "naive_ddp", cmp
assert cmp["strategies"]["hier_ef_topk_int8"] == {
    "throughput_ratio": 1.0, "wan_bytes_ratio": (4 << 14) / (4 << 20), "accuracy_delta": 0.0}, cmp
assert rep["failures"] == [{"strategy": "lan", "error": "crafted failure"}], rep["failures"]
assert by["hier_ef_topk_int8"]["config"] == {"name": "hier_ef_topk_int8", "K": 4, "density": 0.05, "block": 256,
                                              "overlap": True, "quantize": True}, by["hier_ef_topk_int8"]["config"]
# The asynchronous run: its section as model/asynchrony.h summarises the two leaders' logs.
asy = by["async_ef_topk_int8"]["asynchrony"]
assert asy["max_staleness"] == 2 and asy["staleness_weight"] == "1/(1+s)^1", asy
assert [s["staleness_histogram"] for s in asy["sites"]] == [[10, 5], [15]], asy["sites"]
assert [s["max_staleness_observed"] for s in asy["sites"]] == [1, 0], asy["sites"]
assert [s["wait_at_bound_s"] for s in asy["sites"]] == [0.0, 0.5], asy["sites"]
# (1,1)/(1,1); (1,1)/(1,2): mean (1,1.5), |x-mean| = 0.5, |mean| = sqrt(3.25); (2,2)/(2,2)
assert [(d["t_s"], d["max_abs_diff"]) for d in asy["divergence"]] == [(0, 0), (1, 1), (2, 0)], asy["divergence"]
assert abs(asy["divergence"][1]["relative_l2"] - 0.5 / 3.25 ** 0.5) < 1e-12, asy["divergence"]
assert "asynchrony" not in by["hier_ef_topk_int8"]
print(f"{path}: valid against the schema, derived figures exact")
