#!/usr/bin/env python3
"""e2e: full recovery in the process mode (one `geotb worker` process per rank on loopback, no
root) against the embedded mode: scenarios/kill-2x4-full-recovery.json shortened to 60 steps
(beijing's workers 1 and 2 and ningxia's worker 2 killed at step 25 of 2 DCs x 4 workers, a
checkpoint every 10 steps, the dead workers' shards split among their DCs' survivors) for
naive_ddp and hier_ef_topk_int8. The third death crosses the 25 % threshold; every survivor goes
back to the checkpoint after step 20 at one boundary and carries on with 5 workers.

Asserts, per strategy: both runs exit 0 and their reports validate; three kills at step 25; the
full-recovery record says 3 of 8 dead, the checkpoint after 20 steps, 5 survivors, steps redone =
boundary - 20 (the boundary is the wall clock's in the process mode: at or after the kill's step,
within the run); only the checkpoints up to the kill were completed; the live replicas are
identical; and the final weights are the embedded mode's bit for bit (same SHA-256: the rewound
survivors computed the same thing, whichever boundary they went back at). Then a variant with
the shards dropped (faults.shard "drop") gives the embedded mode's weights too. About 60 s."""
import json
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report

geotb, source_root = sys.argv[1], Path(sys.argv[2])
scenario = json.loads((source_root / "scenarios/kill-2x4-full-recovery.json").read_text())
scenario["workload"].update(steps=60, eval_points=6)
scenario.pop("clock")  # each mode's default: virtual embedded, wall in the process mode
for e in scenario["timeline"]:
    e["at_step"] = 25


def run(mode: str, out: Path, shard: str) -> dict:
    out.mkdir(parents=True)
    sc = json.loads(json.dumps(scenario))
    sc["faults"]["shard"] = shard
    sc["checkpoint"] = {"every_steps": 10, "dir": str(out / "ckpt")}
    _, rep, _ = run_and_report(geotb, source_root, sc, str(out), "--net", mode, timeout=400)
    assert rep["failures"] == [], (mode, rep["failures"])
    by = {s["name"]: s for s in rep["strategies"]}
    for name in by:  # complete checkpoints: only those before the kill
        done = sorted(int(p.parent.name.split("-")[1]) for p in (out / "ckpt" / name).glob("step-*/manifest"))
        assert done == [10, 20], (mode, name, done)
    return by


for shard, names in (("redistribute", ("naive_ddp", "hier_ef_topk_int8")), ("drop", ("naive_ddp",))):
    with tempfile.TemporaryDirectory() as tmp:
        runs = {mode: run(mode, Path(tmp) / mode, shard) for mode in ("process", "embedded")}
    for name in names:
        seen = {}
        for mode, by in runs.items():
            s = by[name]
            f, m = s["faults"], s["metrics"]
            kills = sorted((e["rank"], e["step"]) for e in f["events"] if e["event"] == "kill")
            assert kills == [(1, 25), (2, 25), (6, 25)], (mode, name, kills)
            fr = f["full_recovery"]
            assert fr is not None, (mode, name, f)
            assert (fr["dead"], fr["workers"], fr["checkpoint_step"], fr["survivors"], fr["then"]) == \
                (3, 8, 20, 5, "survivors"), (mode, name, fr)
            assert 25 <= fr["boundary_step"] < 60 and fr["steps_redone"] == fr["boundary_step"] - 20, (mode, name, fr)
            assert fr["decided_at_s"] <= fr["rewound_at_s"], (mode, name, fr)
            assert m["replica_max_abs_diff"] == 0.0, (mode, name, m["replica_max_abs_diff"])
            assert f["false_detections"] == 0, (mode, name, f["detections"])
            seen[mode] = (s["final_weights_sha256"], m["final_test_accuracy"])
            print(f"{name}, shard {shard}, --net {mode}: 3 of 8 dead at step 25, decided at {fr['decided_at_s']:.3f} s, "
                  f"back at boundary {fr['boundary_step']} to the checkpoint after 20 steps ({fr['steps_redone']} "
                  f"redone), {fr['survivors']} survivors, accuracy {m['final_test_accuracy']:.4f}, weights "
                  f"{s['final_weights_sha256'][:16]}")
        assert seen["process"] == seen["embedded"], (name, shard, seen)
