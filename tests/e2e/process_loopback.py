#!/usr/bin/env python3
"""e2e, no root: the process mode on loopback.

1. Starts 4 `geotb worker` processes by hand, torchrun-style (MASTER_ADDR, MASTER_PORT, RANK,
   WORLD_SIZE, GEOTB_DC, GEOTB_BIND_ADDR), 2 DCs x 2 workers of scenarios/tiny.json, for
   naive_ddp and hier_ef_topk_int8: every rank exits 0, rank 0's model learned (test accuracy well
   above the 0.1 of chance), every replica is identical at the end, and the process mode trains
   exactly what the embedded mode trains (same loss at every step: same code, same seeds).
2. `geotb run --net process`: the coordinator's report validates against the report schema and
   says network "process".
3. kill -9 of one worker mid-run: every other worker exits with status 3 and a typed error
   (PeerDeadError / CollectiveError / StoreError) in its rank file, within the timeout.
4. kill -9 of one worker of `geotb run --net process`: the coordinator stops the others, exits 1
   and its report names the rank and the signal.
5. `geotb run --net process --deadline 25s` with GEOTB_SECRET set: every worker gets the secret and
   trains (authenticated transport), the run is stopped at the deadline, exit 1, no worker left.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema

geotb, source_root = sys.argv[1], Path(sys.argv[2])
scenario = source_root / "scenarios/tiny.json"
schema = json.loads((source_root / "harness/report.schema.json").read_text())
TIMEOUT_S = 10  # workers' --timeout in the kill test


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_workers(scen, strategy, out, world=4, per_dc=2, extra=()):
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r), WORLD_SIZE=str(world),
                   GEOTB_DC=str(r // per_dc), GEOTB_BIND_ADDR="127.0.0.1", OMP_NUM_THREADS="1")
        log = open(out / f"rank-{r}.log", "w")
        procs.append(subprocess.Popen([geotb, "worker", str(scen), "--strategy", strategy,
                                       "--out", str(out / f"rank-{r}.json"), *extra],
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def wait_all(procs, timeout):
    end = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError(f"workers still running after {timeout} s")
    return [p.returncode for p in procs]


def logs(out):
    return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(out.glob("rank-*.log")))


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)

    # The embedded run of the same scenario: the reference for the loss series.
    emb = subprocess.run([geotb, "run", str(scenario), "--net", "embedded", "--out", str(tmp / "emb")],
                         capture_output=True, text=True, timeout=600)
    assert emb.returncode == 0, emb.stdout + emb.stderr
    emb_rep = json.loads(next((tmp / "emb").glob("tiny-*.json")).read_text())
    emb_by = {s["name"]: s for s in emb_rep["strategies"]}

    # 1. by hand, torchrun-style
    for strategy in ["naive_ddp", "hier_ef_topk_int8"]:
        out = tmp / strategy
        out.mkdir()
        t0 = time.monotonic()
        rcs = wait_all(start_workers(scenario, strategy, out), 300)
        assert rcs == [0, 0, 0, 0], f"{strategy}: exit codes {rcs}\n{logs(out)}"
        ranks = [json.loads((out / f"rank-{r}.json").read_text()) for r in range(4)]
        assert all(r["status"] == "ok" for r in ranks)
        # Started by hand without GEOTB_SECRET: each rank warns that its transport is open.
        for r in range(4):
            log = (out / f"rank-{r}.log").read_text()
            assert "warning: GEOTB_SECRET is not set" in log, f"{strategy}: rank {r} did not warn:\n{log[-2000:]}"
        acc = ranks[0]["accuracy_curve"][-1]["accuracy"]
        diff = max(r["replica_max_abs_diff"] for r in ranks)
        wan = sum(r["wan_sent"]["payload_bytes"] for r in ranks)
        print(f"{strategy}: 4 processes, {time.monotonic() - t0:.1f} s, accuracy {acc:.4f}, "
              f"replica max diff {diff}, WAN payload {wan} B")
        assert acc > 0.6, f"{strategy} did not learn: test accuracy {acc} (chance is 0.1)"
        assert diff == 0.0, f"{strategy}: replicas differ at the end by {diff}"
        assert wan > 0, f"{strategy}: no WAN traffic counted"
        # The same training as the embedded mode: the loss of every step, mean over workers.
        steps = len(ranks[0]["loss"])
        loss = [sum(r["loss"][s] for r in ranks) / 4 for s in range(steps)]
        ref = emb_by[strategy]["series"]["loss"]
        worst = max(abs(a - b) for a, b in zip(loss, ref))
        assert len(loss) == len(ref) and worst <= 1e-6 * max(abs(x) for x in ref), \
            f"{strategy}: process-mode loss differs from embedded by up to {worst}"
        assert abs(acc - emb_by[strategy]["metrics"]["final_test_accuracy"]) < 1e-9, \
            f"{strategy}: accuracy {acc} vs embedded {emb_by[strategy]['metrics']['final_test_accuracy']}"

    # 2. the coordinator
    run = subprocess.run([geotb, "run", str(scenario), "--net", "process", "--out", str(tmp / "rep")],
                         capture_output=True, text=True, timeout=600)
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    rep = json.loads(next((tmp / "rep").glob("tiny-*.json")).read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    assert rep["scenario"]["network"] == "process"
    assert rep["failures"] == []
    by = {s["name"]: s for s in rep["strategies"]}
    for name, s in by.items():
        assert s["metrics"]["final_test_accuracy"] > 0.6, name
        assert s["metrics"]["replica_max_abs_diff"] == 0.0, name
        assert s["metrics"]["wan_payload_bytes"] == emb_by[name]["metrics"]["wan_payload_bytes"], \
            f"{name}: WAN payload {s['metrics']['wan_payload_bytes']} vs embedded {emb_by[name]['metrics']['wan_payload_bytes']}"
    assert by["hier_ef_topk_int8"]["metrics"]["exchanges"] == 60 // 4 + 1

    # 3. kill -9 one worker mid-run
    long = json.loads(scenario.read_text())
    long["workload"]["steps"] = 100000
    (tmp / "long.json").write_text(json.dumps(long))
    for strategy, victim in [("naive_ddp", 3), ("hier_ef_topk_int8", 1)]:
        out = tmp / f"kill-{strategy}"
        out.mkdir()
        procs = start_workers(tmp / "long.json", strategy, out, extra=("--timeout", f"{TIMEOUT_S}s"))
        end = time.monotonic() + 120
        while "progress" not in (out / "rank-0.log").read_text():
            assert time.monotonic() < end and all(p.poll() is None for p in procs), logs(out)
            time.sleep(0.1)
        time.sleep(0.5)
        procs[victim].send_signal(signal.SIGKILL)
        t_kill = time.monotonic()
        others = [p for r, p in enumerate(procs) if r != victim]
        rcs = wait_all(others, TIMEOUT_S + 20)
        elapsed = time.monotonic() - t_kill
        procs[victim].wait()
        types = []
        for r in range(4):
            if r == victim:
                continue
            j = json.loads((out / f"rank-{r}.json").read_text())
            assert j["status"] == "failed", j
            types.append(j["error"]["type"])
        print(f"kill -9 rank {victim} ({strategy}): others exited {rcs} within {elapsed:.1f} s: {types}")
        assert all(rc == 3 for rc in rcs), f"exit codes {rcs}\n{logs(out)}"
        assert all(t in ("PeerDeadError", "CollectiveError", "StoreError", "TransportError") for t in types), types
        assert elapsed < TIMEOUT_S + 5, f"took {elapsed:.1f} s (timeout {TIMEOUT_S} s)"

    # 4. the coordinator when a worker dies: kill -9 rank 2 of `geotb run --net process`; the run
    #    fails naming rank 2 and the signal, every other worker is gone, the report records it.
    def workers_of(scen):
        found = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                env = (d / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"worker" in cmd and str(scen).encode() in cmd:
                rank = [e for e in env if e.startswith(b"RANK=")]
                if rank:
                    found[int(rank[0][5:])] = int(d.name)
        return found

    coord = subprocess.Popen([geotb, "run", str(tmp / "long.json"), "--net", "process", "--strategies", "naive_ddp",
                              "--worker-timeout", f"{TIMEOUT_S}s", "--out", str(tmp / "rep-kill")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.monotonic() + 120
    while True:
        ws = workers_of(tmp / "long.json")
        logs0 = list(Path(tempfile.gettempdir()).glob(f"geotb-run-tiny-{coord.pid}/naive_ddp/rank-0.log"))
        if len(ws) == 4 and logs0 and "progress" in logs0[0].read_text():
            break
        assert time.monotonic() < end and coord.poll() is None, coord.stdout.read() if coord.poll() is not None else ws
        time.sleep(0.1)
    os.kill(ws[2], signal.SIGKILL)
    t_kill = time.monotonic()
    out_text, _ = coord.communicate(timeout=TIMEOUT_S + 30)
    elapsed = time.monotonic() - t_kill
    print(out_text[-1500:])
    assert coord.returncode == 1, f"coordinator exited {coord.returncode}"
    # The coordinator printed rank 0's progress, which comes over its pipe (harness/progress_fifo.h).
    assert "[naive_ddp] step " in out_text, out_text[-1500:]
    assert workers_of(tmp / "long.json") == {}, "workers left running"
    rep = json.loads(next((tmp / "rep-kill").glob("tiny-*.json")).read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    err = rep["failures"][0]["error"]
    assert "first failure: rank 2 (dc 1): killed by signal 9" in err, err
    print(f"coordinator: rank 2 killed -> run failed after {elapsed:.1f} s: {err[:300]}")
    assert elapsed < TIMEOUT_S + 10
    shutil.rmtree(Path(tempfile.gettempdir()) / f"geotb-run-tiny-{coord.pid}", ignore_errors=True)

    # 5. the coordinator's deadline, with a shared secret: GEOTB_SECRET in the coordinator's
    #    environment reaches every worker (their transports then authenticate every connection,
    #    and training proceeds: rank 0 reports steps done), and a run that outlives --deadline is
    #    stopped: exit 1, every worker gone, the report names the deadline.
    DEADLINE_S = 25
    coord = subprocess.Popen([geotb, "run", str(tmp / "long.json"), "--net", "process", "--strategies", "hier_ef_topk_int8",
                              "--deadline", f"{DEADLINE_S}s", "--out", str(tmp / "rep-deadline")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, GEOTB_SECRET="e2e-secret-5"))
    t_start = time.monotonic()
    end = t_start + DEADLINE_S
    seen_secret, progressed = set(), False
    while time.monotonic() < end and coord.poll() is None:
        for rank, pid in workers_of(tmp / "long.json").items():
            try:
                if b"GEOTB_SECRET=e2e-secret-5" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    seen_secret.add(rank)
            except OSError:
                pass
        logs0 = list(Path(tempfile.gettempdir()).glob(f"geotb-run-tiny-{coord.pid}/hier_ef_topk_int8/rank-0.log"))
        if logs0 and "progress" in logs0[0].read_text():
            progressed = True
        if progressed and len(seen_secret) == 4:
            break
        time.sleep(0.1)
    out_text, _ = coord.communicate(timeout=DEADLINE_S + 30)
    elapsed = time.monotonic() - t_start
    print(out_text[-800:])
    assert seen_secret == {0, 1, 2, 3}, f"GEOTB_SECRET reached only ranks {sorted(seen_secret)}"
    assert progressed, "no training progress with GEOTB_SECRET set"
    assert coord.returncode == 1, f"coordinator exited {coord.returncode} past its deadline"
    assert workers_of(tmp / "long.json") == {}, "workers left running after the deadline"
    rep = json.loads(next((tmp / "rep-deadline").glob("tiny-*.json")).read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    err = rep["failures"][0]["error"]
    assert f"not finished within the deadline of {DEADLINE_S} s; every worker killed" in err, err
    print(f"deadline {DEADLINE_S} s with GEOTB_SECRET: all 4 workers had the secret and trained; stopped after "
          f"{elapsed:.1f} s: {err[:200]}")
    assert DEADLINE_S - 1 <= elapsed <= DEADLINE_S + 10, f"stopped after {elapsed:.1f} s"
    shutil.rmtree(Path(tempfile.gettempdir()) / f"geotb-run-tiny-{coord.pid}", ignore_errors=True)

print("e2e process mode: loopback workers learn, replicas identical, same losses as embedded, "
      "report valid, a killed rank fails the others with typed errors, secret passed, deadline kept")
