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
the shards dropped (faults.shard "drop") gives the embedded mode's weights too. Then "then":
"restarts" (restart_after 1 s): the three dead restarted, each with a restart record of policy
full_recovery, up at least 1 s after the decision, all 8 replicas identical, and the weights the
embedded mode's and the fault-free run's (no kills, the same checkpoints). About 90 s.

Arguments: geotb, the source root, then optionally the mode (process, the default, or dpdk: the
same ranks in namespaces, their traffic through the emulator; root) and which variants to run
(all, the default, or restarts: the dpdk suite runs only that one, the others' paths being the
process mode's)."""
import json
import os
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report

geotb, source_root = sys.argv[1], Path(sys.argv[2])
net = sys.argv[3] if len(sys.argv) > 3 else "process"
variants = sys.argv[4] if len(sys.argv) > 4 else "all"
assert net in ("process", "dpdk") and variants in ("all", "restarts"), sys.argv
if net == "dpdk" and os.geteuid() != 0:
    print("needs root (network namespaces): skipped")
    sys.exit(77)
net_args = ["--net-prefix", f"gfr{os.getpid() & 0xfffff:x}"] if net == "dpdk" else []
scenario = json.loads((source_root / "scenarios/kill-2x4-full-recovery.json").read_text())
scenario["workload"].update(steps=60, eval_points=6)
scenario.pop("clock")  # each mode's default: virtual embedded, wall in the process mode
for e in scenario["timeline"]:
    e["at_step"] = 25


def run(mode: str, out: Path, shard: str, then: str) -> dict:
    out.mkdir(parents=True)
    sc = json.loads(json.dumps(scenario))
    sc["faults"]["shard"] = shard
    sc["faults"]["full_recovery"] = {"above_fraction": 0.25, "then": then}
    if then == "restarts":
        sc["faults"]["full_recovery"]["restart_after"] = "1s"
    sc["checkpoint"] = {"every_steps": 10, "dir": str(out / "ckpt")}
    _, rep, _ = run_and_report(geotb, source_root, sc, str(out), "--net", mode,
                               *(net_args if mode == "dpdk" else []), timeout=400)
    assert rep["failures"] == [], (mode, rep["failures"])
    by = {s["name"]: s for s in rep["strategies"]}
    for name in by:  # complete checkpoints: only those before the kill
        done = sorted(int(p.parent.name.split("-")[1]) for p in (out / "ckpt" / name).glob("step-*/manifest"))
        # With the survivors only those before the kill; restarts heal the run, whose checkpoints go on.
        assert done == ([10, 20] if then == "survivors" else [10, 20, 30, 40, 50]), (mode, name, then, done)
    return by


def fault_free_weights(out: Path) -> dict:
    """The embedded run without the kills, with the same checkpoints: what "restarts" must end at."""
    out.mkdir(parents=True)
    sc = json.loads(json.dumps(scenario))
    sc["timeline"] = []
    sc["checkpoint"] = {"every_steps": 10, "dir": str(out / "ckpt")}
    _, rep, _ = run_and_report(geotb, source_root, sc, str(out), "--net", "embedded", timeout=400)
    return {s["name"]: s["final_weights_sha256"] for s in rep["strategies"]}


cases = (("redistribute", "survivors", ("naive_ddp", "hier_ef_topk_int8")),
         ("drop", "survivors", ("naive_ddp",)),
         ("redistribute", "restarts", ("naive_ddp", "hier_ef_topk_int8")))
for shard, then, names in cases if variants == "all" else cases[2:]:
    with tempfile.TemporaryDirectory() as tmp:
        runs = {mode: run(mode, Path(tmp) / mode, shard, then) for mode in (net, "embedded")}
        fault_free = fault_free_weights(Path(tmp) / "fault-free") if then == "restarts" else {}
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
                (3, 8, 20, 5, then), (mode, name, fr)
            if then == "restarts":
                # The three dead restarted, each told by one survivor, up 1 s after the decision.
                assert fr["restarted"] == 3 and fr["restarted_at_s"] >= fr["decided_at_s"] + 1.0 - 1e-9, (mode, name, fr)
                back = sorted((e["rank"], e["policy"]) for e in f["events"] if e["event"] == "restart")
                assert back == [(1, "full_recovery"), (2, "full_recovery"), (6, "full_recovery")], (mode, name, back)
            assert 25 <= fr["boundary_step"] < 60 and fr["steps_redone"] == fr["boundary_step"] - 20, (mode, name, fr)
            assert fr["decided_at_s"] <= fr["rewound_at_s"], (mode, name, fr)
            assert m["replica_max_abs_diff"] == 0.0, (mode, name, m["replica_max_abs_diff"])
            assert f["false_detections"] == 0, (mode, name, f["detections"])
            seen[mode] = (s["final_weights_sha256"], m["final_test_accuracy"])
            restarted = (f", {fr['restarted']} restarted, the last up at {fr['restarted_at_s']:.3f} s"
                         if then == "restarts" else "")
            print(f"{name}, shard {shard}, then {then}, --net {mode}: 3 of 8 dead at step 25, decided at {fr['decided_at_s']:.3f} s, "
                  f"back at boundary {fr['boundary_step']} to the checkpoint after 20 steps ({fr['steps_redone']} "
                  f"redone), {fr['survivors']} survivors{restarted}, accuracy {m['final_test_accuracy']:.4f}, weights "
                  f"{s['final_weights_sha256'][:16]}")
        assert seen[net] == seen["embedded"], (name, shard, then, seen)
        if then == "restarts":  # from the checkpoint on, the fault-free run
            assert seen[net][0] == fault_free[name], (name, seen, fault_free)
            print(f"{name}, restarts: the fault-free run's weights too ({fault_free[name][:16]})")
