#!/usr/bin/env python3
"""e2e: `geotb run --seeds 2` on scenarios/tiny.json with local_sgd and diloco added, a
time-to-accuracy target and a compute profile: the report validates against the schema; every
strategy carries both seeds' figures, the first equal to its own metrics; the seed summary is the
mean and sample sd of them; the time to accuracy is the first curve point at the target, timed by
that step's end; the comm/compute alarm is set exactly when the ratio exceeds 0.1 and the summary
names those strategies; local_sgd and diloco end with identical replicas after the expected number
of exchanges. Bad --seeds values exit 2. About 15 s."""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])
scenario = tiny_scenario(source_root, "tiny-seeds")
scenario["workload"]["eval_points"] = 12
scenario["workload"]["target_accuracy"] = 0.6
scenario["strategies"] = [{"name": "naive_ddp"}, {"name": "local_sgd", "tau": 4},
                          {"name": "diloco", "H": 10, "wire": "int8"}]
scenario["clock"] = "virtual"
scenario["compute"] = {"step_time": "10ms"}

with tempfile.TemporaryDirectory() as out:
    sc_path = Path(out) / "tiny-seeds.json"
    sc_path.write_text(json.dumps(scenario))
    for bad, why in [(["--seeds", "0"], "--seeds: 0: must be in [1, 100]"),
                     (["--seeds", "2", "--net", "process", "--clock", "wall"], "only the embedded network mode")]:
        p = subprocess.run([geotb, "run", str(sc_path), "--out", out, *bad], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and why in p.stderr, f"{bad}: exit {p.returncode}, {p.stderr!r}"
    proc, rep, _ = run_and_report(geotb, source_root, scenario, out, "--seeds", "2")

assert rep["scenario"]["workload"]["target_accuracy"] == 0.6
by_name = {s["name"]: s for s in rep["strategies"]}
assert list(by_name) == ["naive_ddp", "local_sgd", "diloco"], list(by_name)
alarmed = []
accs_differ = False
for name, s in by_name.items():
    m, seeds = s["metrics"], s["seeds"]
    assert [x["seed"] for x in seeds] == [7, 8], f"{name}: seeds {[x['seed'] for x in seeds]}"
    first = seeds[0]
    for k in ["samples_per_s", "wan_payload_bytes", "final_test_accuracy", "comm_compute_ratio"]:
        assert first[k] == m[k], f"{name}: seed 7's {k} {first[k]} != the run's {m[k]}"
    assert first["time_to_accuracy"] == m["time_to_accuracy"]
    accs = [x["final_test_accuracy"] for x in seeds]
    accs_differ |= accs[0] != accs[1]
    summ = s["seed_summary"]["final_test_accuracy"]
    mean = sum(accs) / 2
    sd = math.sqrt(sum((a - mean) ** 2 for a in accs) / 1)  # sample sd, n - 1 = 1
    assert summ["n"] == 2 and abs(summ["mean"] - mean) < 1e-12 and abs(summ["sd"] - sd) < 1e-12, (name, summ, accs)
    # Time to accuracy: the first point of the curve at or above 0.6, timed at its step's end.
    t = m["time_to_accuracy"]
    curve = s["series"]["test_accuracy"]
    hit = next((i for i, p in enumerate(curve) if p["accuracy"] >= 0.6), None)
    assert hit is not None and t["step"] == curve[hit]["step"] and t["samples"] == curve[hit]["samples"], (name, t)
    want_s = m["wall_s"] if hit == len(curve) - 1 else s["series"]["step_end_s"][t["step"] - 1]
    assert t["seconds"] == want_s, (name, t, want_s)
    assert m["comm_compute_alarm"] == (m["comm_compute_ratio"] > 0.1), (name, m["comm_compute_ratio"])
    if m["comm_compute_alarm"]:
        alarmed.append(name)
    assert m["replica_max_abs_diff"] == 0.0, f"{name}: replicas differ"
    print(f"{name}: accuracy {accs}, TTA {t['seconds']:.3f} s / {t['samples']} samples, "
          f"comm/compute {m['comm_compute_ratio']:.3f}")
assert accs_differ, "the second seed gave the same accuracies: --seeds did not change the seed"
assert "naive_ddp" in alarmed, "naive_ddp over 10 ms RTT with 10 ms steps must exceed comm/compute 0.1"
alarm_line = next(l for l in proc.stdout.splitlines() if l.startswith("comm/compute alarm"))
for name in by_name:
    assert (name in alarm_line) == (name in alarmed), (name, alarm_line)
assert by_name["local_sgd"]["metrics"]["exchanges"] == 60 // 4
assert by_name["diloco"]["metrics"]["exchanges"] == 60 // 10
assert by_name["diloco"]["config"]["wire"] == "int8"
# INT8 pseudo-gradients: about a quarter of local_sgd's float32 model bytes per exchange.
ld, dl = by_name["local_sgd"]["exchanges"][0]["bytes"], by_name["diloco"]["exchanges"][0]["bytes"]
assert dl < 0.3 * ld, (dl, ld)
print("e2e seeds: report valid, seeds, spread, time to accuracy and alarm consistent")
