#!/usr/bin/env python3
"""dpdk suite (root; exit 77 = skipped otherwise): `geotb run --net dpdk scenarios/dpdk-2x2.json`.

One worker process per rank inside its data center's network namespace, the WAN through
geotb-emulate at 1 Gbit/s and 30 ms RTT. Asserts: the run succeeds, the report validates and
says network "dpdk", both strategies learn (test accuracy well above chance), every replica is
identical at the end, naive_ddp's exposed communication per step is at least one RTT (its ring
really crossed the emulated WAN, not loopback) and within 25 % of the embedded mode's on the same
scenario and of real c10d Gloo's (naive_ddp_c10d) in the same run, the DC namespaces ran a
loss-based congestion control (scenario default "auto"), the scenario's timeline started at each
strategy's first step (a 1 s outage 3 s in: in each mode naive_ddp's longest step spans it on its own clock), hier_ef_topk_int8 sends a small fraction of naive_ddp's WAN bytes, and no
namespace of the run is left behind (also torn down in `finally`). Then Ctrl-C mid-training: exit
130, no report, no worker, emulator or namespace left.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

geotb, source_root = sys.argv[1], Path(sys.argv[2])
if os.geteuid() != 0:
    print("needs root (network namespaces): skipped")
    sys.exit(77)
for tool in ("ip", "ethtool", "taskset"):
    if shutil.which(tool) is None:
        print(f"{tool} missing: skipped")
        sys.exit(77)

import jsonschema  # noqa: E402  (after the skips: the check is about root, not about python modules)

schema = json.loads((source_root / "harness/report.schema.json").read_text())
prefix = f"gtp{os.getpid() & 0xfffff:x}"


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [l.split()[0] for l in out.splitlines() if l.startswith(prefix + "-")]


try:
    with tempfile.TemporaryDirectory() as out:
        # The shipped scenario plus naive_ddp_c10d: real c10d Gloo DDP through the emulator, the
        # reference for naive_ddp's message-level model of Gloo's ring.
        # A 1 s outage 3 s after the first step: the emulator's timeline must start at the
        # workers' first step, as the embedded mode's does, so the outage falls in the same span
        # of training time.
        scen = json.loads((source_root / "scenarios/dpdk-2x2.json").read_text())
        scen["strategies"].append({"name": "naive_ddp_c10d"})
        scen["timeline"] = [{"at": "3s", "link": ["east", "west"], "set": {"up": False}},
                            {"at": "4s", "link": ["east", "west"], "set": {"up": True}}]
        scen_path = Path(out) / "dpdk-2x2.json"
        scen_path.write_text(json.dumps(scen))
        # The same scenario in the embedded mode: naive_ddp's exposed communication per step.
        emb = subprocess.run([geotb, "run", str(scen_path), "--net", "embedded", "--strategies", "naive_ddp",
                              "--out", str(Path(out) / "emb")], capture_output=True, text=True, timeout=300)
        assert emb.returncode == 0, emb.stdout + emb.stderr
        emb_rep = json.loads(next((Path(out) / "emb").glob("dpdk-2x2-2*.json")).read_text())
        # The timing comparisons below are of the emulator only when its data plane had its CPU:
        # a run whose naive strategies saw the data plane stalled over 1 % of the time (the
        # hypervisor or another poller took the CPU: docs/guide/network-modes.md "A CPU for the data plane"; 13 % in
        # one fresh-clone run on 2026-12-02, which put dpdk 27 % above embedded) is run once more.
        for attempt in (1, 2):
            run_out = Path(out) / f"dpdk-{attempt}"
            proc = subprocess.run([geotb, "run", str(scen_path), "--net", "dpdk",
                                   "--net-prefix", prefix, "--out", str(run_out)], capture_output=True, text=True,
                                  timeout=480)
            print(proc.stdout)
            print(proc.stderr, file=sys.stderr)
            assert proc.returncode == 0, f"geotb run --net dpdk exited {proc.returncode}"
            assert namespaces() == [], f"namespaces left after the run: {namespaces()}"
            rep = json.loads(next(run_out.glob("dpdk-2x2-2*.json")).read_text())
            origins = re.findall(r"timeline started (-?[0-9.]+) s after the data plane \(the first step\), (\d+) of (\d+)",
                                 proc.stdout)
            shares = {s["name"]: s["dataplane"]["stall_share"] for s in rep["strategies"]
                      if s["name"] in ("naive_ddp", "naive_ddp_c10d")}
            if max(shares.values()) <= 0.01:
                break
            print(f"attempt {attempt}: the data plane stalled {shares} of the time (over 1 %): "
                  + ("once more" if attempt == 1 else "the comparisons below run on this one"))
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    assert rep["scenario"]["network"] == "dpdk", rep["scenario"]["network"]
    assert rep["failures"] == []
    by = {s["name"]: s for s in rep["strategies"]}
    assert set(by) == {"naive_ddp", "hier_ef_topk_int8", "naive_ddp_c10d"}, by.keys()
    rtt = rep["scenario"]["wan"][0]["rtt_s"]
    for name, s in by.items():
        m = s["metrics"]
        print(f"{name}: accuracy {m['final_test_accuracy']:.4f}, exposed comm {1e3 * m['exposed_comm_s_per_step']:.1f} "
              f"ms/step, WAN payload {m['wan_payload_bytes']} B, wire {m['wan_wire_bytes']} B")
        d = s["dataplane"]  # every dpdk-mode strategy records the data plane that carried it
        print(f"{name}: data plane {d['scheduling']}: {d['stalls']} stalls > 1 ms, {1e3 * d['stall_total_s']:.1f} ms "
              f"of {d['run_s']:.1f} s ({100 * d['stall_share']:.3f} %), longest iteration {1e3 * d['max_iteration_s']:.1f} ms")
        assert d["run_s"] > 0 and d["scheduling"] and d["stall_share"] == (d["stall_total_s"] / d["run_s"]), d
        assert m["final_test_accuracy"] > 0.6, f"{name} did not learn: {m['final_test_accuracy']} (chance is 0.1)"
        assert m["replica_max_abs_diff"] == 0.0, f"{name}: replicas differ by {m['replica_max_abs_diff']}"
        if name != "naive_ddp_c10d":  # Gloo's own TCP: the emulator counts its wire bytes, no payload figure
            assert m["wan_wire_bytes"] >= m["wan_payload_bytes"] > 0, name
    assert by["naive_ddp"]["metrics"]["exposed_comm_s_per_step"] >= rtt, "naive_ddp's ring did not pay the WAN RTT"
    # The model of Gloo's ring vs Gloo itself, same emulator, same run (measured: 189.7 vs 187.2 ms
    # per step with reno, 233.6 vs 229.8 with bbr).
    model = by["naive_ddp"]["metrics"]["exposed_comm_s_per_step"]
    real = by["naive_ddp_c10d"]["metrics"]["exposed_comm_s_per_step"]
    assert real >= rtt, "naive_ddp_c10d's Gloo ring did not pay the WAN RTT"
    stalled = {n: f"{100 * by[n]['dataplane']['stall_share']:.2f} %" for n in ("naive_ddp", "naive_ddp_c10d")}
    assert abs(model / real - 1) <= 0.25, (f"naive_ddp (Gloo's ring, modelled) {model:.4f} s/step vs c10d Gloo {real:.4f} "
                                           f"(data plane stalled: {stalled})")
    assert by["hier_ef_topk_int8"]["metrics"]["wan_payload_bytes"] < 0.1 * by["naive_ddp"]["metrics"]["wan_payload_bytes"]
    # The two network modes agree on naive_ddp's exposed communication per step (the hosts run
    # the scenario's default congestion control, loss-based and unpaced, as the model assumes;
    # measured: docs/guide/network-modes.md).
    cc = rep["context"].get("dc_tcp_congestion_control")
    assert rep["scenario"]["tcp_congestion_control"] == "auto" and cc in ("cubic", "reno"), (rep["scenario"], cc)
    emb_c = emb_rep["strategies"][0]["metrics"]["exposed_comm_s_per_step"]
    print(f"naive_ddp exposed comm: embedded {1e3 * emb_c:.1f} ms/step, dpdk ({cc}) {1e3 * model:.1f} ms/step, "
          f"ratio {model / emb_c:.3f}")
    assert abs(model / emb_c - 1) <= 0.25, (f"dpdk {model:.4f} vs embedded {emb_c:.4f} s/step "
                                            f"(data plane stalled: {stalled})")
    # The timeline started at each strategy's first step (a worker start takes seconds), not with
    # the emulator; the naive strategies (~19 s) saw both changes in both directions (hier
    # finishes in about a second, before the outage).
    assert len(origins) == 3, origins
    for origin, applied, scheduled in origins:
        assert float(origin) >= 0.2 and scheduled == "4", (origin, applied, scheduled)
    assert origins[0][1] == origins[2][1] == "4", origins

    # The outage (the link down from 3 s to 4 s of the timeline, which starts with the first
    # step) is where each mode's own clock puts it: naive_ddp's longest step (the one that waits
    # for retransmissions after the link comes back) overlaps [3 s, 4 s] of its own step times.
    # Which step that is depends on the pace (the dpdk mode's wall-clock steps are longer on a
    # loaded or stolen-from host), so the modes' step numbers are printed, not compared.
    def longest_step(strategy_report):
        ends = strategy_report["series"]["step_end_s"]
        starts = [0.0] + ends[:-1]
        d = [b - a for a, b in zip(starts, ends)]
        i = max(range(len(d)), key=lambda k: d[k])
        return i + 1, d[i], starts[i], ends[i]
    steps = {"embedded": longest_step(emb_rep["strategies"][0]), "dpdk": longest_step(by["naive_ddp"]),
             "naive_ddp_c10d": longest_step(by["naive_ddp_c10d"])}
    print("1 s outage at 3 s: longest naive_ddp step " +
          "; ".join(f"{m} {s} ({d:.3f} s, {a:.3f}-{b:.3f} s)" for m, (s, d, a, b) in steps.items()))
    for mode, (step, d, start, end) in steps.items():
        assert start <= 4.0 and end >= 3.0, f"{mode}: the longest step {step} ({start:.3f}-{end:.3f} s) misses the outage"
        assert d >= 1.0, f"{mode}: the longest step {step} took {d:.3f} s, less than the 1 s outage"
    print("dpdk replay: both strategies learned through the emulated WAN, replicas identical, namespaces removed")

    # Ctrl-C in the middle of training: the coordinator kills the workers, stops the emulator,
    # removes the namespaces and exits 130 without a report.
    with tempfile.TemporaryDirectory() as out:
        scen = json.loads((source_root / "scenarios/dpdk-2x2.json").read_text())
        scen["workload"]["steps"] = 100000
        scen_path = Path(out) / "dpdk-2x2.json"
        scen_path.write_text(json.dumps(scen))
        coord = subprocess.Popen([geotb, "run", str(scen_path), "--net", "dpdk", "--strategies", "naive_ddp",
                                  "--net-prefix", prefix, "--out", out], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        log0 = Path(tempfile.gettempdir()) / f"geotb-run-dpdk-2x2-{coord.pid}/naive_ddp/rank-0.log"
        end = time.monotonic() + 120
        while not (log0.exists() and "progress" in log0.read_text()):
            assert time.monotonic() < end and coord.poll() is None, "no training progress before Ctrl-C"
            time.sleep(0.1)
        in_ns_before = namespaces()
        coord.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        text, _ = coord.communicate(timeout=60)
        took = time.monotonic() - t0
        print(text[-600:])
        ours = [l for l in subprocess.run(["pgrep", "-af", f"{prefix}-emu|{scen_path}"], capture_output=True,
                                          text=True).stdout.splitlines() if "pgrep" not in l]
        print(f"Ctrl-C: exit {coord.returncode} after {took:.1f} s; namespaces before {in_ns_before}, after "
              f"{namespaces()}; processes left {ours}")
        assert len(in_ns_before) >= 3, in_ns_before
        assert coord.returncode == 130, coord.returncode
        assert namespaces() == [] and ours == [], (namespaces(), ours)
        assert not list(Path(out).glob("dpdk-2x2-2*.json")), "a report was written after Ctrl-C"
        assert took < 20, f"teardown took {took:.1f} s"
        shutil.rmtree(log0.parent.parent, ignore_errors=True)
    print("dpdk Ctrl-C: workers and emulator stopped, namespaces removed, exit 130")
finally:
    subprocess.run([geotb, "net", "down", "--prefix", prefix], capture_output=True)
