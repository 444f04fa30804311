#!/usr/bin/env python3
"""e2e: the same node kill in the process mode (one `geotb worker` process per rank on loopback,
no root; or, with a third argument "dpdk", the dpdk mode: root, each DC's ranks in their network
namespace, the WAN through the DPDK emulator; exit 77 without root) and in the embedded mode: scenarios/kill-dpdk-2x3.json (west's worker 1 killed at step
30 of 100, 2 DCs x 3 workers) for naive_ddp and hier_ef_topk_int8. Asserts, per strategy: both
runs exit 0 and their reports validate; the killed process's rank file says its kill; both faults
sections take the same decisions (rank 4 killed at step 30, one step lost, the same survivors
count, detected by the same workers, no false detection), within the detection bound; the final
weights are bit-identical across the two modes (same SHA-256: the shrunk groups computed the
same thing) and the live replicas identical. The real mode kills the process (its peers see its
connections end); in the process mode it also freezes the worker's whole host ("scope": "host":
its peers declare it after timeout + confirmation of silence once a witness, its other site member,
could not hear it either: how "witness", as the embedded heartbeats do). A kill then a restart (rank 4 back at step 60)
ends with the restarted replica identical and the embedded mode's weights; so do two workers of one
group restarted at one boundary (ranks 4 and 5, back together at step 60). Then the process mode
refuses what it does not run yet (a restart of a frozen host, full recovery restarting a frozen host) with exit 2 naming
the field; kills at an instant run (one that
never comes holds nobody back); rank 0's kill (naive_ddp)
runs with the store in a process of its own and rank 1 reporting, with the same weights as the
embedded mode's; and a DC leader's kill (west's worker 0) under hier_ef_topk_int8 and local_sgd
hands west's exchange to rank 4, with the same weights as the embedded mode's. With a checkpoint every 20 steps only the one before the kill is written, and
--resume from it replays the kill and ends with the uninterrupted run's weights. About 20 s."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

geotb, source_root = sys.argv[1], Path(sys.argv[2])
real = sys.argv[3] if len(sys.argv) > 3 else "process"
if real == "dpdk" and os.geteuid() != 0:
    print("needs root (network namespaces): skipped")
    sys.exit(77)
prefix = f"gtk{os.getpid() & 0xfffff:x}"
scenario_path = source_root / "scenarios/kill-dpdk-2x3.json"
scenario = json.loads(scenario_path.read_text())
hb = scenario["faults"]["heartbeat"]
secs = lambda s: float(s[:-1]) if s.endswith("s") and not s.endswith("ms") else float(s[:-2]) / 1000  # noqa: E731
bound = secs(hb["timeout"]) + secs(hb["confirmation"]) + secs(hb["interval"])
schema = json.loads((source_root / "harness/report.schema.json").read_text())


def run(mode: str, out: Path, scope: str = "process", victim: tuple = ("west", 1), only: str = "",
        checkpoint: dict = None, *args: str, strategies: list = None) -> dict:
    extra = ["--net-prefix", prefix] if mode == "dpdk" else []
    out.mkdir(parents=True)
    path = out / "kill-dpdk-2x3.json"
    sc = json.loads(json.dumps(scenario))
    sc["timeline"][0]["kill"].update(scope=scope, dc=victim[0], worker=victim[1])
    if strategies:
        sc["strategies"] = strategies
    if only:
        sc["strategies"] = [x for x in sc["strategies"] if x["name"] == only]
    if checkpoint:
        sc["checkpoint"] = checkpoint
    path.write_text(json.dumps(sc))
    proc = subprocess.run([geotb, "run", str(path), "--net", mode, "--out", str(out), *extra, *args],
                          capture_output=True, text=True, timeout=400)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    assert proc.returncode == 0, f"--net {mode}: exit {proc.returncode}"
    rep = json.loads(next(out.glob("kill-dpdk-2x3-2*.json")).read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    assert rep["failures"] == [], rep["failures"]
    by = {s["name"]: s for s in rep["strategies"]}
    by["_report"] = rep
    return by


with tempfile.TemporaryDirectory() as tmp:
    runs = {mode: run(mode, Path(tmp) / mode) for mode in (real, "embedded")}
    if real == "process":
        runs["process-host"] = run("process", Path(tmp) / "host", "host")
if real == "dpdk":
    left = [l for l in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
            if l.startswith(prefix + "-")]
    assert not left, f"namespaces left after the run: {left}"

decided_sha = None
for name in ("naive_ddp", "hier_ef_topk_int8"):
    decided = {}
    for mode, by in runs.items():
        s = by[name]
        f, m = s["faults"], s["metrics"]
        kills = [e for e in f["events"] if e["event"] == "kill"]
        assert len(kills) == 1, (mode, name, f["events"])
        k = kills[0]
        assert (k["rank"], k["dc"], k["worker"], k["step"], k["steps_lost"], k["policy"]) == (4, 1, 1, 30, 1, "shrink"), \
            (mode, name, k)
        assert k["detection_latency_s"] is not None and 0 <= k["detection_latency_s"] <= bound, (mode, name, k, bound)
        assert f["false_detections"] == 0, (mode, name, f["detections"])
        assert all(d["peer"] == 4 for d in f["detections"]), (mode, name, f["detections"])
        assert m["replica_max_abs_diff"] == 0.0, (mode, name, m["replica_max_abs_diff"])
        if mode in ("process", "dpdk"):  # the kernel closed the killed process's connections
            assert all(d["how"] == "connection" for d in f["detections"]), f["detections"]
        if mode == "process-host":  # nothing closed: silence for timeout + confirmation, and a witness's word
            assert all(d["how"] == "witness" for d in f["detections"]), f["detections"]
            assert k["detection_latency_s"] >= secs(hb["timeout"]) + secs(hb["confirmation"]) - secs(hb["interval"]), k
        decided[mode] = (k["survivors"], sorted(d["observer"] for d in f["detections"]), s["final_weights_sha256"],
                         m["final_test_accuracy"])
        print(f"{name} --net {mode}: killed rank 4 at step 30, detected by {k['detected_by']} after "
              f"{k['detection_latency_s']:.3f} s (bound {bound} s), {k['survivors']} survivors, accuracy "
              f"{m['final_test_accuracy']:.4f}, weights {s['final_weights_sha256'][:16]}")
    assert all(d == decided["embedded"] for d in decided.values()), (name, decided)
    if name == "naive_ddp":
        decided_sha = decided["embedded"][2]
# Rank 0 killed (naive_ddp: it is nobody's DC leader in a world group): the store is served by a
# process of its own (`geotb store`) and rank 1 reports; the same decisions and weights again.
with tempfile.TemporaryDirectory() as tmp:
    r0 = {mode: run(mode, Path(tmp) / mode, "process", ("east", 0), "naive_ddp")["naive_ddp"]
          for mode in (real, "embedded")}
    seen = {}
    for mode, s in r0.items():
        k = [e for e in s["faults"]["events"] if e["event"] == "kill"][0]
        assert (k["rank"], k["step"], k["steps_lost"], k["survivors"]) == (0, 30, 1, 5), (mode, k)
        assert s["faults"]["false_detections"] == 0 and s["metrics"]["replica_max_abs_diff"] == 0.0, (mode, s)
        ends = s["series"]["step_end_s"]  # the reporting rank's (rank 1's) step times
        assert len(ends) == 100 and all(b >= a for a, b in zip(ends, ends[1:])) and ends[0] > 0, (mode, ends[:3])
        seen[mode] = (s["final_weights_sha256"], s["metrics"]["final_test_accuracy"],
                      sorted(d["observer"] for d in s["faults"]["detections"]))
        print(f"naive_ddp, rank 0 killed, --net {mode}: accuracy {seen[mode][1]:.4f}, weights {seen[mode][0][:16]}, "
              f"detected by {seen[mode][2]}")
    assert seen[real] == seen["embedded"], seen
# A DC leader killed (west's worker 0, rank 3) under the strategies with per-DC groups: west's
# lowest survivor (rank 4) takes over rank 3's address; east's leader (rank 0) records the death
# and goes on. The same decisions and weights in both modes.
leader_strategies = [{"name": "hier_ef_topk_int8", "K": 4, "density": "5%", "block": 256, "overlap": True},
                     {"name": "local_sgd", "tau": 4}]
with tempfile.TemporaryDirectory() as tmp:
    lead = {mode: run(mode, Path(tmp) / mode, "process", ("west", 0), strategies=leader_strategies)
            for mode in (real, "embedded")}
    for name in ("hier_ef_topk_int8", "local_sgd"):
        seen = {}
        for mode, by in lead.items():
            s = by[name]
            k = [e for e in s["faults"]["events"] if e["event"] == "kill"][0]
            assert (k["rank"], k["step"], k["steps_lost"], k["survivors"], k.get("new_leader")) == (3, 30, 1, 2, 4), \
                (mode, name, k)
            assert 0 <= k["detection_latency_s"] <= bound, (mode, name, k)
            assert s["faults"]["false_detections"] == 0 and s["metrics"]["replica_max_abs_diff"] == 0.0, (mode, name)
            seen[mode] = (s["final_weights_sha256"], s["metrics"]["final_test_accuracy"],
                          sorted(d["observer"] for d in s["faults"]["detections"]))
            assert seen[mode][2] == [0, 4, 5], (mode, name, seen[mode])
            print(f"{name}, west's leader (rank 3) killed, --net {mode}: rank 4 leads west, accuracy "
                  f"{seen[mode][1]:.4f}, weights {seen[mode][0][:16]}, detected by {seen[mode][2]}")
        assert seen[real] == seen["embedded"], (name, seen)
# Kill, then restart (scenarios/kill-dpdk-2x3-restart.json: west's worker 1, rank 4, killed at step
# 30, back at step 60): the coordinator
# spawns its process again once it has reaped it; at step 60 its group's coordinator (rank 3 for
# hier's DC group, rank 3 too for naive_ddp's world group: the lowest of its DC) hands it the
# group's state and it trains on. Its replica ends identical to the reporting rank's, and the
# weights are the embedded mode's, bit for bit.
def run_restart(mode: str, out: Path, edit=None) -> dict:
    """scenarios/kill-dpdk-2x3-restart.json (kill-dpdk-2x3 + the restart), changed by `edit`, run
    with --net `mode`: its strategies by name, the report validated."""
    out.mkdir(parents=True)
    sc = json.loads((source_root / "scenarios/kill-dpdk-2x3-restart.json").read_text())
    if edit:
        edit(sc)
    path = out / "kill-dpdk-2x3-restart.json"
    path.write_text(json.dumps(sc))
    extra = ["--net-prefix", prefix] if mode == "dpdk" else []
    proc = subprocess.run([geotb, "run", str(path), "--net", mode, "--out", str(out), *extra], capture_output=True,
                          text=True, timeout=400)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    assert proc.returncode == 0, f"restart --net {mode}: exit {proc.returncode}"
    rep = json.loads(next(out.glob("kill-dpdk-2x3-restart-2*.json")).read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    return {x["name"]: x for x in rep["strategies"]}


with tempfile.TemporaryDirectory() as tmp:
    back = {mode: run_restart(mode, Path(tmp) / mode) for mode in (real, "embedded")}
    for name, group in (("naive_ddp", 6), ("hier_ef_topk_int8", 3)):
        seen = {}
        for mode, by in back.items():
            s = by[name]
            f, m = s["faults"], s["metrics"]
            # The kill is in the restarted rank's file: its new process merged its predecessor's.
            kills = [e for e in f["events"] if e["event"] == "kill"]
            restarts = [e for e in f["events"] if e["event"] == "restart"]
            assert len(kills) == 1 and (kills[0]["rank"], kills[0]["step"], kills[0]["steps_lost"]) == (4, 30, 1), \
                (mode, name, kills)
            assert len(restarts) == 1, (mode, name, f["events"])
            r = restarts[0]
            assert (r["rank"], r["step"], r["policy"], r["survivors"]) == (4, 60, "rejoin", group), (mode, name, r)
            assert r["recovery_s"] is not None and r["recovery_s"] >= 0, (mode, name, r)
            assert r["at_s"] > kills[0]["at_s"], (mode, name, r, kills)
            assert f["false_detections"] == 0, (mode, name, f["detections"])
            assert m["replica_max_abs_diff"] == 0.0, (mode, name, m["replica_max_abs_diff"])
            seen[mode] = (s["final_weights_sha256"], m["final_test_accuracy"])
            print(f"{name}, rank 4 killed at 30 and restarted at 60, --net {mode}: rejoined {r['recovery_s']:.3f} s "
                  f"after its hand-over, group of {r['survivors']}, replica diff 0, accuracy "
                  f"{m['final_test_accuracy']:.4f}, weights {s['final_weights_sha256'][:16]}")
        assert seen[real] == seen["embedded"], (name, seen)
if real == "dpdk":
    sys.exit(0)  # what follows is the same in both real modes

# Two workers of one group restarted at one boundary (west's workers 1 and 2, ranks 4 and 5, killed
# at step 30, both back at step 60): every survivor of their group takes both back at once, and
# each one's coordinator hands it the group with both (faults/rejoin.h grow_group). Both modes end
# with both restarted replicas identical and the same weights.
def two_restarts(sc: dict) -> None:
    sc["timeline"] = [{"at_step": 30, "kill": {"dc": "west", "worker": 1}},
                      {"at_step": 30, "kill": {"dc": "west", "worker": 2}},
                      {"at_step": 60, "restart": {"dc": "west", "worker": 1}},
                      {"at_step": 60, "restart": {"dc": "west", "worker": 2}}]
    sc["faults"]["full_recovery"] = {"above_fraction": 1}  # 2 of 6: shrink, not full recovery


with tempfile.TemporaryDirectory() as tmp:
    both = {mode: run_restart(mode, Path(tmp) / mode, two_restarts) for mode in ("process", "embedded")}
    for name, group in (("naive_ddp", 6), ("hier_ef_topk_int8", 3)):
        seen = {}
        for mode, by in both.items():
            s = by[name]
            restarts = sorted((e["rank"], e["step"], e["policy"], e["survivors"])
                              for e in s["faults"]["events"] if e["event"] == "restart")
            assert restarts == [(4, 60, "rejoin", group), (5, 60, "rejoin", group)], (mode, name, restarts)
            assert s["metrics"]["replica_max_abs_diff"] == 0.0, (mode, name, s["metrics"]["replica_max_abs_diff"])
            seen[mode] = (s["final_weights_sha256"], s["metrics"]["final_test_accuracy"])
            print(f"{name}, ranks 4 and 5 killed at 30 and restarted together at 60, --net {mode}: group of {group}, "
                  f"replica diff 0, accuracy {seen[mode][1]:.4f}, weights {seen[mode][0][:16]}")
        assert seen["process"] == seen["embedded"], (name, seen)

# Checkpoints every 20 steps with the kill at step 30: the one after 20 steps completes, the later
# ones cannot (the dead would not write its file) and are not written; --resume from it replays
# the kill and ends with the uninterrupted run's weights.
with tempfile.TemporaryDirectory() as tmp:
    ckpt = Path(tmp) / "ckpt"
    first = run("process", Path(tmp) / "a", only="naive_ddp", checkpoint={"every_steps": 20, "dir": str(ckpt)})
    steps = sorted(p.name for p in (ckpt / "naive_ddp").glob("step-*"))
    assert steps == ["step-20"] and (ckpt / "naive_ddp" / "step-20" / "manifest").exists(), steps
    again = run("process", Path(tmp) / "b", "process", ("west", 1), "naive_ddp", {"every_steps": 20, "dir": str(ckpt)},
                "--resume", str(ckpt / "naive_ddp"))
    s = again["naive_ddp"]
    assert s["resumed_from"]["step"] == 20, s.get("resumed_from")
    k = [e for e in s["faults"]["events"] if e["event"] == "kill"]
    assert len(k) == 1 and (k[0]["rank"], k[0]["step"]) == (4, 30), s["faults"]["events"]
    assert s["final_weights_sha256"] == first["naive_ddp"]["final_weights_sha256"] == decided_sha, s["final_weights_sha256"]
    print(f"naive_ddp: checkpoints {steps} of every 20 steps with the kill at 30; resumed from step 20: the kill "
          f"replayed, weights {s['final_weights_sha256'][:16]} = uninterrupted")

# Kills at an instant, on each rank's own wall clock: one 0.2 s in (at whatever step that is), one
# an hour in (it never fires: nobody waits for it at the end).
with tempfile.TemporaryDirectory() as tmp:
    sc = json.loads(json.dumps(scenario))
    sc["timeline"] = [{"at": "200ms", "kill": {"dc": "west", "worker": 1}},
                      {"at": "60min", "kill": {"dc": "east", "worker": 2}}]
    sc["faults"]["full_recovery"] = {"above_fraction": 1}
    sc["checkpoint"] = {"every_steps": 20, "dir": str(Path(tmp) / "ckpt")}
    path = Path(tmp) / "kill-dpdk-2x3.json"
    path.write_text(json.dumps(sc))
    p = subprocess.run([geotb, "run", str(path), "--net", "process", "--out", tmp], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(next(Path(tmp).glob("kill-dpdk-2x3-2*.json")).read_text())
    for s in rep["strategies"]:
        kills = [e for e in s["faults"]["events"] if e["event"] == "kill"]
        # at_s is on the reporting rank's clock, the kill's 200 ms on the victim's own: the ranks
        # leave the store's start barrier apart (10.5 ms apart measured on 2026-12-05 with a CI
        # run beside it, which failed the 0.19 bound this had), hence 0.15.
        assert len(kills) == 1 and kills[0]["rank"] == 4 and kills[0]["at_s"] >= 0.15, (s["name"], kills)
        assert s["faults"]["false_detections"] == 0 and s["metrics"]["replica_max_abs_diff"] == 0.0, s["name"]
        # Checkpoints every 20 steps: complete ones only up to the kill. naive_ddp's world group all
        # declare the death, so none is even begun after it (before 2026-12-03 every later one was
        # begun and left without a manifest: only kills at a step were counted).
        dirs = {int(p.name.split("-")[1]): (p / "manifest").exists() for p in (Path(tmp) / "ckpt" / s["name"]).glob("step-*")}
        assert all(n <= kills[0]["step"] for n, done in dirs.items() if done), (s["name"], kills[0]["step"], dirs)
        if s["name"] == "naive_ddp":
            assert all(dirs.values()), (kills[0]["step"], dirs)
        print(f"{s['name']}: killed at 0.2 s = step {kills[0]['step']} ({kills[0]['at_s']:.3f} s); the kill an hour "
              f"in never came; accuracy {s['metrics']['final_test_accuracy']:.4f}; checkpoints {sorted(dirs.items())}")

# What the process mode does not run yet is refused before anything starts, naming the field.
with tempfile.TemporaryDirectory() as tmp:
    def frozen_then_restarted(s):
        s["timeline"][0]["kill"]["scope"] = "host"
        s["timeline"].append({"at_step": 60, "restart": {"dc": "west", "worker": 1}})

    def full_recovery_restarts_frozen(s):
        s["timeline"][0]["kill"]["scope"] = "host"
        s["timeline"].append({"at_step": 40, "kill": {"dc": "east", "worker": 1}})
        s["faults"]["full_recovery"] = {"above_fraction": 0.25, "then": "restarts"}
        s["checkpoint"] = {"every_steps": 10, "dir": str(Path(tmp) / "ckpt")}

    for edit, field in [(frozen_then_restarted, "timeline[0].kill.scope"),
                        (full_recovery_restarts_frozen, "timeline[0].kill.scope")]:
        bad = json.loads(json.dumps(scenario))
        edit(bad)
        path = Path(tmp) / "bad.json"
        path.write_text(json.dumps(bad))
        p = subprocess.run([geotb, "run", str(path), "--net", "process", "--out", tmp], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and field in p.stderr, (field, p.returncode, p.stderr)
        print(f"refused: {p.stderr.strip()}")
    assert not list(Path(tmp).glob("*-2*.json")), "a refused run wrote a report"
