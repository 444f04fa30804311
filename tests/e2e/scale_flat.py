#!/usr/bin/env python3
"""timing: the embedded mode's cost per worker-step stays flat from 16 to 256 workers.

Two clusters of 8-worker sites, 2 x 8 (16 workers) and 32 x 8 (256 workers), every site pair linked
(10 Gbit/s, 30 ms), hier_ef_topk_int8 on a 784-32-10 MLP with a declared 20 ms step (virtual
clock). Per-site rings keep the messages per worker-step the same in both. Each runs with S1 and
with S1 + D steps, D chosen so that both clusters do 10,240 more worker-steps; the difference
divided by those worker-steps is the cost of one worker-step without the setup, for:

- the scheduler's work (the report's metrics.host_scheduler: reevaluations, readiness checks,
  network events and wake-ups; a function of the scenario with fibers): within 1.25x (measured
  1.066x). A scan over every actor or every waiter per event shows here, exactly.
- the host time (metrics.host_wall_s; the VM is shared and noisy: each pair of runs is repeated
  and the smallest cost kept, what the host adds only lengthens): within 4x, against a quadratic
  regression (16x) or a kernel thread switch per hand-off. It does grow, 1.6-2.7x measured on the
  shared 2-core VM on 2026-12-03 (docs/measurements/scale-out.md): the scheduler's index and the
  network's event heap cost O(log n) per operation, and 256 workers' state (about 1 GB) overflows
  the caches that 16 workers' state fits in.

Then the scheduler's work alone, once more with heartbeats on (faults.heartbeat, no kills), 2,560
more worker-steps: within 1.25x too. Each worker's heartbeat monitor waits in the fabric's
recv_any; while that wait was unkeyed, every re-evaluation checked every monitor, and the readiness
checks per worker-step grew with the workers (16x here; docs/measurements/scale-out.md).

Last, the workers per site: 2 x 8 (16 workers) against 4 x 64 (256) with "lan": {"collectives":
"analytic"} (docs/guide/scale.md), each intra-DC collective one computed event: the host time per
worker-step within 2x (the issue's bound; measured 1.22x), the scheduler's work within 1.25x
(measured 0.984x; with one wake-up per arrival, as first written, 4.4x, and with hier's forward
of the other sites' payloads as LAN messages, 1.39x). With Gloo's ring message by message it grows
with the ring (4 (N - 1) messages per worker and allreduce: 9x from 8 to 64 per site), which the
message model must.

Usage: scale_flat.py GEOTB SOURCE_ROOT"""
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

geotb = sys.argv[1]
S1 = 4
EXTRA_WORKER_STEPS = 10240
REPEATS = 2
BOUND = 4.0
OPS_BOUND = 1.25
ANALYTIC_BOUND = 2.0
ANALYTIC_OPS_BOUND = 1.25


def scenario(m: int, n: int, steps: int, heartbeats: bool = False, analytic: bool = False) -> dict:
    sc = {
        "schema": 1, "name": f"scale-{m}x{n}-{steps}", "description": "scale-out timing test", "seed": 7,
        "datacenters": [{"name": f"dc{i}", "workers": n} for i in range(m)],
        "lan": {"bandwidth": "100Gbps", "rtt": "20us", "collectives": "analytic" if analytic else "messages"},
        "wan": [{"between": [f"dc{a}", f"dc{b}"], "bandwidth": "10Gbps", "rtt": "30ms"}
                for a, b in itertools.combinations(range(m), 2)],
        "workload": {"model": {"name": "mlp", "hidden": [32]}, "dataset": "fashion-mnist", "partition": "iid",
                     "batch_per_worker": 8, "steps": steps, "train_examples": 16000, "test_examples": 1000,
                     "eval_points": 2, "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}},
        "strategies": [{"name": "hier_ef_topk_int8", "K": 4, "density": "1%", "block": 256, "overlap": True}],
        "compute": {"step_time": "20ms"}, "clock": "virtual", "network": "embedded"}
    if heartbeats:
        sc["name"] += "-hb"
        sc["faults"] = {"heartbeat": {"interval": "2s", "timeout": "3s", "confirmation": "2s"}, "policy": "shrink"}
    return sc


def host_cost(m: int, n: int, steps: int, out: Path, heartbeats: bool = False, analytic: bool = False):
    """(host seconds, scheduler operations) of the strategy's run."""
    sc = scenario(m, n, steps, heartbeats, analytic)
    path = out / (sc["name"] + ".json")
    path.write_text(json.dumps(sc))
    p = subprocess.run([geotb, "run", str(path), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rep = json.loads(next(out.glob(sc["name"] + "-*.json")).read_text())
    m = rep["strategies"][0]["metrics"]
    hs = m["host_scheduler"]
    assert hs["actors"] == "fibers", hs
    return m["host_wall_s"], hs["reevaluations"] + hs["readiness_checks"] + hs["network_events"] + hs["wakeups"]


with tempfile.TemporaryDirectory() as d:
    out = Path(d)

    def per_worker_step(sizes, label: str, analytic: bool = False):
        """{workers: host seconds per worker-step (the smaller of REPEATS)}, {workers: scheduler operations}."""
        per, ops = {}, {}
        for m, n in sizes:
            s2 = S1 + EXTRA_WORKER_STEPS // (m * n)
            costs = []
            for _ in range(REPEATS):
                (h1, o1), (h2, o2) = host_cost(m, n, S1, out, analytic=analytic), host_cost(m, n, s2, out, analytic=analytic)
                for f in out.glob("scale-*"):
                    f.unlink()
                worker_steps = (s2 - S1) * m * n
                costs.append((h2 - h1) / worker_steps)
                ops[m * n] = (o2 - o1) / worker_steps
                print(f"{m} x {n} ({m * n} workers{label}): host {h1:.2f} s at {S1} steps, {h2:.2f} s at {s2} steps: "
                      f"{costs[-1] * 1e3:.3f} ms and {ops[m * n]:.1f} scheduler operations per worker-step")
            per[m * n] = min(costs)
        return per, ops

    per, ops = per_worker_step(((2, 8), (32, 8)), "")
    hb_ops = {}
    for m, n in ((2, 8), (32, 8)):
        s2 = S1 + 2560 // (m * n)
        (_, o1), (_, o2) = host_cost(m, n, S1, out, True), host_cost(m, n, s2, out, True)
        for f in out.glob("scale-*"):
            f.unlink()
        hb_ops[m * n] = (o2 - o1) / ((s2 - S1) * m * n)
        print(f"{m} x {n} with heartbeats: {hb_ops[m * n]:.1f} scheduler operations per worker-step")
    an_per, an_ops = per_worker_step(((2, 8), (4, 64)), ", analytic", analytic=True)
an_ratio = an_per[256] / an_per[16]
an_op_ratio = an_ops[256] / an_ops[16]
print(f"analytic collectives, per worker-step, 4 x 64 against 2 x 8: host time {an_ratio:.2f}x (bound "
      f"{ANALYTIC_BOUND}x), scheduler operations {an_op_ratio:.3f}x (bound {ANALYTIC_OPS_BOUND}x)")
hb_ratio = hb_ops[256] / hb_ops[16]
print(f"with heartbeats, per worker-step, 256 against 16 workers: scheduler operations {hb_ratio:.3f}x "
      f"(bound {OPS_BOUND}x)")
ratio = per[256] / per[16]
op_ratio = ops[256] / ops[16]
print(f"per worker-step, 256 against 16 workers: host time {ratio:.2f}x (bound {BOUND}x), scheduler operations "
      f"{op_ratio:.3f}x (bound {OPS_BOUND}x)")
assert op_ratio <= OPS_BOUND, f"scheduler operations per worker-step grew {op_ratio:.3f}x from 16 to 256 workers"
assert hb_ratio <= OPS_BOUND, (f"with heartbeats, scheduler operations per worker-step grew {hb_ratio:.3f}x from 16 "
                               "to 256 workers")
assert ratio <= BOUND, f"host time per worker-step grew {ratio:.2f}x from 16 to 256 workers (bound {BOUND}x)"
assert an_op_ratio <= ANALYTIC_OPS_BOUND, (f"analytic collectives: scheduler operations per worker-step grew {an_op_ratio:.3f}x "
                                  "from 8 to 64 workers per site")
assert an_ratio <= ANALYTIC_BOUND, (f"analytic collectives: host time per worker-step grew {an_ratio:.2f}x from 16 to "
                                    f"256 workers (bound {ANALYTIC_BOUND}x)")
