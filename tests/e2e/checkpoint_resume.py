#!/usr/bin/env python3
"""e2e, no root: checkpoint, SIGKILL, --resume (docs/guide/checkpoints.md).

A small variant of scenarios/tiny.json (80 steps, a checkpoint every 10) with hier_ef_topk_int8,
overlap on and off:
1. embedded: the run killed with SIGKILL as soon as its first checkpoint is complete, then
   `geotb run --resume <dir>/<strategy>` ends with the same final_weights_sha256 (bit-identical
   rank 0 model), loss series and accuracy as the uninterrupted run; its report says where it
   resumed from and validates against the schema.
2. process mode (overlap on): coordinator and every worker killed with SIGKILL after a
   checkpoint, resumed with --net process: the same final weights again.
   qsgd (its stochastic rounding keyed by the run's seed, the DC and the round): embedded killed
   and resumed, then the process mode killed and resumed: the embedded run's final weights both
   times.
3. SIGUSR1 to `geotb run` (embedded, then process mode: the coordinator passes the request on to
   every worker) with a checkpoint directory and no period: a checkpoint is written mid-run, and
   resuming from it gives the same final weights.
4. Refused, exit 2, nothing run: a truncated rank file ("truncated"), a checkpoint of another
   scenario (other seed: "a checkpoint of another scenario"), of another strategy.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema

geotb, source_root = sys.argv[1], Path(sys.argv[2])
schema = json.loads((source_root / "harness/report.schema.json").read_text())
STRATEGY = "hier_ef_topk_int8"


def scenario(tmp, name, overlap, ckpt_dir, every=10, seed=7, entry=None):
    s = json.loads((source_root / "scenarios/tiny.json").read_text())
    s["name"] = name.lower()
    s["seed"] = seed
    s["workload"]["steps"] = 80
    s["strategies"] = [entry or {"name": STRATEGY, "K": 4, "density": "5%", "block": 256, "overlap": overlap}]
    s["checkpoint"] = {"every_steps": every}
    if ckpt_dir is not None:  # None: given by --checkpoint-dir
        s["checkpoint"]["dir"] = str(ckpt_dir)
    p = tmp / f"{name}.json"
    p.write_text(json.dumps(s))
    return p


def run(args, out, expect_rc=0):
    proc = subprocess.run([geotb, "run", *map(str, args), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect_rc, f"geotb run {args}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def report(out):
    reports = sorted(Path(out).glob("*.json"))
    assert len(reports) == 1, reports
    rep = json.loads(reports[0].read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    return rep["strategies"][0]


def owner_only(strategy_dir):
    """A checkpoint holds the model: every file 0600, its step and strategy directories 0700."""
    modes = {p: p.stat().st_mode & 0o777 for p in [strategy_dir, *strategy_dir.rglob("*")]}
    bad = {str(p): oct(m) for p, m in modes.items() if m != (0o700 if p.is_dir() else 0o600)}
    assert not bad, f"checkpoint files readable by others: {bad}"
    return len(modes)


def kill_after_checkpoint(args, latest, group):
    """Starts geotb run, SIGKILLs it (its whole process group) once `latest` exists."""
    proc = subprocess.Popen([geotb, "run", *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    end = time.monotonic() + 300
    while not latest.exists():
        assert proc.poll() is None, f"geotb run {args} ended (exit {proc.returncode}) before its first checkpoint"
        assert time.monotonic() < end, "no checkpoint within 300 s"
        time.sleep(0.005)
    # Process mode: every worker (each leads its own process group) and the coordinator, found by
    # the scenario file in their command lines (a fresh temporary path: only this run's).
    pids = [proc.pid]
    if group:
        for c in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = c.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"worker" in argv and str(args[0]).encode() in argv:
                pids.append(int(c.parent.name))
        assert len(pids) == 5, f"expected the coordinator and 4 workers, found {pids}"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    for pid in pids[1:]:
        while Path(f"/proc/{pid}").exists() and "Z" not in (Path(f"/proc/{pid}/stat").read_text().split()[2:3] or ["Z"]):
            time.sleep(0.01)
    assert proc.returncode == -signal.SIGKILL
    step = latest.read_text().strip()
    print(f"  killed after checkpoint {step}")
    return int(step.split("-")[1])


def same_run(a, b, what):
    assert a["final_weights_sha256"] == b["final_weights_sha256"], f"{what}: final weights differ"
    assert a["series"]["loss"] == b["series"]["loss"], f"{what}: loss series differ"
    assert a["metrics"]["final_test_accuracy"] == b["metrics"]["final_test_accuracy"], what
    assert len(a["exchanges"]) == len(b["exchanges"]), what


with tempfile.TemporaryDirectory(prefix="geotb-ckpt-e2e-") as t:
    tmp = Path(t)
    for overlap in (True, False):
        print(f"embedded, overlap {overlap}")
        d = tmp / f"ckpt-{overlap}"
        sc = scenario(tmp, f"ck-{overlap}", overlap, d)
        run([sc], tmp / f"ref-{overlap}")
        ref = report(tmp / f"ref-{overlap}")
        assert "resumed_from" not in ref
        shutil.rmtree(d)
        step = kill_after_checkpoint([sc, "--out", tmp / f"killed-{overlap}"], d / STRATEGY / "latest", group=False)
        assert step < 80
        owner_only(d / STRATEGY)
        assert not list(tmp.glob(f"killed-{overlap}/*.json"))  # no report from the killed run
        run([sc, "--resume", d / STRATEGY], tmp / f"res-{overlap}")
        res = report(tmp / f"res-{overlap}")
        assert res["resumed_from"] == {"step": step, "checkpoint": str(d / STRATEGY / f"step-{step}")}, res["resumed_from"]
        same_run(res, ref, f"embedded overlap {overlap}")
        print(f"  resumed from step {step}: final weights {res['final_weights_sha256'][:16]}... = uninterrupted")

    print("process mode, overlap on")
    d = tmp / "ckpt-proc"
    sc = scenario(tmp, "ck-proc", True, d)
    ref = report(tmp / "ref-True")
    step = kill_after_checkpoint([sc, "--net", "process", "--out", tmp / "killed-proc"], d / STRATEGY / "latest", group=True)
    print(f"  {owner_only(d / STRATEGY)} checkpoint files and directories, all owner-only (0600 / 0700)")
    run([sc, "--net", "process", "--resume", d / STRATEGY], tmp / "res-proc")
    res = report(tmp / "res-proc")
    assert res["resumed_from"]["step"] == step
    same_run(res, ref, "process mode")
    print(f"  resumed from step {step}: final weights {res['final_weights_sha256'][:16]}... = uninterrupted")

    # qsgd: K 7 (its rounds and the checkpoints every 10 steps fall apart), 16 levels.
    QSGD = {"name": "qsgd", "K": 7, "levels": 16}
    qref = None
    for mode in ("embedded", "process"):
        print(f"qsgd, {mode} mode")
        d = tmp / f"ckpt-qsgd-{mode}"
        sc = scenario(tmp, f"ck-qsgd-{mode}", True, d, entry=QSGD)
        if qref is None:
            run([sc], tmp / "ref-qsgd")
            qref = report(tmp / "ref-qsgd")
            assert qref["name"] == "qsgd" and qref["config"]["levels"] == 16, qref["config"]
            shutil.rmtree(d)
        step = kill_after_checkpoint([sc, "--net", mode, "--out", tmp / f"killed-qsgd-{mode}"], d / "qsgd" / "latest",
                                     group=mode == "process")
        run([sc, "--net", mode, "--resume", d / "qsgd"], tmp / f"res-qsgd-{mode}")
        res = report(tmp / f"res-qsgd-{mode}")
        assert res["resumed_from"]["step"] == step
        same_run(res, qref, f"qsgd {mode} mode")
        print(f"  resumed from step {step}: final weights {res['final_weights_sha256'][:16]}... = uninterrupted embedded")

    # stdbuf line-buffers geotb's stdout through LD_PRELOAD, which an ASan build (ci/sanitizers.sh)
    # refuses unless told that its runtime need not come first.
    env = dict(os.environ, ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""),
                                                               "verify_asan_link_order=0"])))
    for mode in ("embedded", "process"):
        print(f"SIGUSR1, {mode} mode")
        d = tmp / f"ckpt-usr1-{mode}"
        sc = scenario(tmp, f"ck-usr1-{mode}", True, None, every=0)  # the directory from --checkpoint-dir
        proc = subprocess.Popen(["stdbuf", "-oL", geotb, "run", str(sc), "--net", mode, "--checkpoint-dir", str(d),
                                 "--out", str(tmp / f"usr1-{mode}")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in proc.stdout:  # the handler is in place once the scenario line is out
            if line.startswith("geotb: scenario"):
                break
        while proc.poll() is None and not (d / STRATEGY / "latest").exists():
            proc.send_signal(signal.SIGUSR1)
            time.sleep(0.05)
        rest = proc.stdout.read()
        assert proc.wait() == 0, rest
        assert (d / STRATEGY / "latest").exists(), f"{mode}: no checkpoint on SIGUSR1\n" + rest[-1000:]
        latest = (d / STRATEGY / "latest").read_text().strip()
        if mode == "embedded":  # the process mode's completing worker says it in its own log
            assert f"geotb: checkpoint after step {latest.split('-')[1]}" in rest, rest[-1000:]
        run([sc, "--net", mode, "--resume", d / STRATEGY], tmp / f"res-usr1-{mode}")
        res = report(tmp / f"res-usr1-{mode}")
        same_run(res, ref, f"SIGUSR1 checkpoint, {mode} mode")
        print(f"  checkpoint {latest} on request; resumed: final weights = uninterrupted")

    print("refusals")
    d = tmp / "ckpt-True"
    step_dir = d / STRATEGY / (d / STRATEGY / "latest").read_text().strip()
    other = scenario(tmp, "ck-other", True, d, seed=8)
    p = run([other, "--resume", step_dir], tmp / "refused1", expect_rc=2)
    assert "a checkpoint of another scenario" in p.stderr and str(step_dir / "manifest") in p.stderr, p.stderr
    print("  " + p.stderr.strip())
    sc = tmp / "ck-True.json"
    p = run([sc, "--resume", step_dir, "--strategies", "naive_ddp"], tmp / "refused2", expect_rc=2)
    assert "--strategies" in p.stderr, p.stderr
    rank1 = step_dir / "rank-1.ckpt"
    data = rank1.read_bytes()
    rank1.write_bytes(data[: len(data) // 3])
    p = run([sc, "--resume", step_dir], tmp / "refused3", expect_rc=2)
    assert f"{rank1}: truncated" in p.stderr, p.stderr
    print("  " + p.stderr.strip())
    # A period without a directory (neither checkpoint.dir nor --checkpoint-dir).
    nodir = scenario(tmp, "ck-nodir", True, None, every=10)
    p = run([nodir], tmp / "refused4", expect_rc=2)
    assert "checkpoint.every_steps: 10: no directory to write them to" in p.stderr, p.stderr
    print("  " + p.stderr.strip())
    assert not list(tmp.glob("refused*/*.json"))  # refused before anything ran
print("checkpoint_resume: ok")
