#!/usr/bin/env python3
"""dpdk suite (root; exit 77 = skipped otherwise): `geotb exec` with a tiny job (exec_job.py, no torch).

scenarios/dpdk-2x2.json's network (2 DCs x 2 ranks, 1 Gbit/s, 30 ms RTT) with a 1 s outage
scheduled 30 s in (never reached: the job is done by then, so 0 of 2 changes apply).
1. Success, started as if through sudo by nobody (SUDO_UID/SUDO_GID 65534): every rank got the
   torchrun environment and ran as nobody, its log has its output and the live view prefixed it,
   every exit status is 0, the report validates and names the command; the west ranks sent
   2 x BYTES bytes to the east ranks over TCP and the report's west->east bytes are within
   [2·BYTES, 2·BYTES + ceil(2·BYTES/1448)·90 + 5 %]; no namespace is left; `geotb compare` shows
   the job beside a run report's strategies.
2. Rank 2 exits 3: geotb exits 1, the report names rank 2 and exit status 3, the other ranks were
   stopped by geotb (SIGTERM: 143), no namespace left.
3. Ctrl-C while every rank blocks: exit 130, no report, no process of the job, no namespace.
"""
import json
import math
import os
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
for tool in ("ip", "ethtool", "taskset", "setpriv"):
    if shutil.which(tool) is None:
        print(f"{tool} missing: skipped")
        sys.exit(77)

BYTES = 400_000  # per sending rank
prefix = f"gte{os.getpid() & 0xfffff:x}"


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [l.split()[0] for l in out.splitlines() if l.startswith(prefix + "-")]


def exec_job(tmp, job_args, env=None, name="run"):
    out = Path(tmp) / name
    cmd = [geotb, "exec", str(Path(tmp) / "scenario.json"), "--net-prefix", prefix, "--out", str(out),
           "--deadline", "90s", "--", sys.executable, str(Path(tmp) / "exec_job.py")] + job_args
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    print(proc.stdout[-3000:])
    print(proc.stderr[-2000:], file=sys.stderr)
    reports = list(out.glob("dpdk-2x2-exec-*.json"))
    return proc, (json.loads(reports[0].read_text()) if reports else None)


def validate(rep):
    """Against harness/exec_report.schema.json, which takes the scenario and context from the run
    report's schema (harness/report.schema.json, "$id" geotb.report.v1)."""
    import jsonschema
    schemas = [json.loads((source_root / f"harness/{n}.schema.json").read_text()) for n in ("report", "exec_report")]
    try:  # jsonschema >= 4.18
        from referencing import Registry, Resource
        registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas])
        validator = jsonschema.Draft202012Validator(schemas[1], registry=registry)
    except ImportError:  # Debian 12's 4.10
        resolver = jsonschema.RefResolver.from_schema(schemas[1], store={s["$id"]: s for s in schemas})
        validator = jsonschema.Draft202012Validator(schemas[1], resolver=resolver)
    validator.validate(rep)


def check_common(rep):
    validate(rep)
    assert rep["schema"] == "geotb.exec" and rep["schema_version"] == 1, rep["schema"]
    assert rep["scenario"]["name"] == "dpdk-2x2" and rep["scenario"]["network"] == "dpdk"
    assert rep["world_size"] == 4 and rep["ranks_per_dc"] == 2 and rep["master_port"] == 29500
    assert [r["rank"] for r in rep["ranks"]] == [0, 1, 2, 3]
    assert [r["dc"] for r in rep["ranks"]] == [0, 0, 1, 1]
    assert {(l["from"], l["to"]) for l in rep["links"]} == {("east", "west"), ("west", "east")}, rep["links"]
    for l in rep["links"]:
        assert set(l["drops"]) >= {"link_down", "queue_bytes", "loss"}, l["drops"]


try:
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # nobody reads the job from here
        shutil.copy(source_root / "tests/dpdk/exec_job.py", Path(tmp) / "exec_job.py")
        scen = json.loads((source_root / "scenarios/dpdk-2x2.json").read_text())
        scen["timeline"] = [{"at": "30s", "link": ["east", "west"], "set": {"up": False}},
                            {"at": "31s", "link": ["east", "west"], "set": {"up": True}}]
        (Path(tmp) / "scenario.json").write_text(json.dumps(scen))

        # 1. success, as nobody through "sudo"
        env = dict(os.environ, SUDO_UID="65534", SUDO_GID="65534", RANK="99", GEOTB_DC="7")
        proc, rep = exec_job(tmp, [str(BYTES)], env)
        assert proc.returncode == 0, f"geotb exec exited {proc.returncode}"
        assert namespaces() == [], namespaces()
        assert rep is not None, "no report"
        check_common(rep)
        assert rep["status"] == "ok" and rep["first_failure"] is None, rep["status"]
        assert rep["command"][-2:] == [str(Path(tmp) / "exec_job.py"), str(BYTES)], rep["command"]
        assert rep["run_as"] == {"uid": 65534, "gid": 65534}, rep.get("run_as")
        master = rep["master_addr"]
        for r in rep["ranks"]:
            assert r["exit_status"] == 0 and r["signal"] == 0 and not r["stopped_by_geotb"], r
            assert r["wall_s"] > 0, r
            log = Path(r["log"]).read_text()
            assert f"hello from rank {r['rank']}" in log, log
            dcname = ["east", "west"][r["dc"]]
            assert f"[r{r['rank']} {dcname}] hello from rank {r['rank']}" in proc.stdout, "live view without prefix"
            m = r["metrics"]
            e = m[0]["env"]
            assert m[0]["uid"] == 65534 and m[0]["gid"] == 65534, m[0]
            assert e == {"MASTER_ADDR": master, "MASTER_PORT": "29500", "RANK": str(r["rank"]), "WORLD_SIZE": "4",
                         "LOCAL_RANK": str(r["rank"] % 2), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": str(r["dc"]),
                         "GROUP_WORLD_SIZE": "2", "GEOTB_DC": str(r["dc"]), "GEOTB_DC_NAME": dcname,
                         "GEOTB_BIND_ADDR": e["GEOTB_BIND_ADDR"]}, e
            assert (e["GEOTB_BIND_ADDR"] == master) == (r["dc"] == 0), e
            assert m[1] == ({"received": BYTES, "seconds": m[1]["seconds"]} if r["dc"] == 0
                            else {"sent": BYTES, "seconds": m[1]["seconds"]}), m
        n = 2 * BYTES
        w2e = next(l for l in rep["links"] if (l["from"], l["to"]) == ("west", "east"))
        hi = n + math.ceil(n / 1448) * 90 + 0.05 * n
        print(f"west->east: {w2e['bytes']} bytes in {w2e['frames']} frames for {n} payload bytes "
              f"(allowed [{n}, {hi:.0f}])")
        assert n <= w2e["bytes"] <= hi, (w2e, n, hi)
        # "shutdown": frames still in the delay line when the emulator stopped (the last FIN/ACKs of
        # ranks that exit at once); every data byte had been acknowledged by then
        assert sum(n for cause, n in w2e["drops"].items() if cause != "shutdown") == 0, w2e["drops"]
        tl = rep["timeline"]
        assert tl["scheduled"] == 4 and tl["applied"] == 0 and tl["origin_s"] is not None and tl["origin_s"] >= 0, tl
        assert tl["changes"] == [{"at_s": 30.0, "link": ["east", "west"], "set": {"up": False}},
                                 {"at_s": 31.0, "link": ["east", "west"], "set": {"up": True}}], tl
        assert Path(rep["ranks"][0]["log"]).stat().st_uid == 65534
        # geotb compare puts the job beside a run report's strategies (this job prints no step_time_s)
        job_report = next((Path(tmp) / "run").glob("dpdk-2x2-exec-*.json"))
        cmp = subprocess.run([geotb, "compare", str(source_root / "reports/baselines/us-east-us-west.json"),
                              str(job_report), "--out", str(Path(tmp) / "cmp"), "--name", "c"],
                             capture_output=True, text=True)
        assert cmp.returncode == 0, cmp.stderr
        md = (Path(tmp) / "cmp/c.md").read_text()
        assert f"| `{job_report}` | `{sys.executable} {Path(tmp) / 'exec_job.py'} {BYTES}` | ok | – |" in md, md
        html = (Path(tmp) / "cmp/c.html").read_text()
        assert "Your job (geotb exec)" in html and "west → east" in html, "no job section"

        # 2. rank 2 exits 3
        proc, rep = exec_job(tmp, [str(BYTES), "--fail-rank", "2", "--exit-code", "3"], name="fail")
        assert proc.returncode == 1, f"geotb exec exited {proc.returncode}"
        assert namespaces() == [], namespaces()
        check_common(rep)
        assert rep["status"] == "failed", rep["status"]
        ff = rep["first_failure"]
        assert ff["rank"] == 2 and ff["dc"] == 1 and ff["exit_status"] == 3 and ff["signal"] == 0, ff
        assert "rank 2 (dc 1, west): exit status 3" in ff["message"], ff["message"]
        assert "first failure: rank 2 (dc 1, west): exit status 3" in proc.stderr
        by = {r["rank"]: r for r in rep["ranks"]}
        assert by[2]["exit_status"] == 3 and not by[2]["stopped_by_geotb"], by[2]
        # rank 0 waited for rank 2's bytes, ranks 1 and 3 had finished and waited: all stopped
        for k in (0, 1, 3):
            assert by[k]["stopped_by_geotb"] and by[k]["signal"] == signal.SIGTERM and by[k]["exit_status"] == 143, by[k]

        # 3. Ctrl-C
        out = Path(tmp) / "int"
        coord = subprocess.Popen([geotb, "exec", str(Path(tmp) / "scenario.json"), "--net-prefix", prefix, "--out",
                                  str(out), "--", sys.executable, str(Path(tmp) / "exec_job.py"), "0", "--block"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seen, end = "", time.monotonic() + 60
        while seen.count("] ready") < 4:
            line = coord.stdout.readline()
            assert line and time.monotonic() < end, f"no ranks ready: {seen}"
            seen += line
        in_ns = namespaces()
        coord.send_signal(signal.SIGINT)
        rest, _ = coord.communicate(timeout=60)
        left = [l for l in subprocess.run(["pgrep", "-af", str(Path(tmp) / "exec_job.py")], capture_output=True,
                                          text=True).stdout.splitlines() if "pgrep" not in l]
        print(rest[-500:])
        print(f"Ctrl-C: exit {coord.returncode}; namespaces before {in_ns}, after {namespaces()}; left {left}")
        assert len(in_ns) == 3, in_ns
        assert coord.returncode == 130, coord.returncode
        assert namespaces() == [] and left == [], (namespaces(), left)
        assert not list(out.glob("*.json")), "a report was written after Ctrl-C"
    print("geotb exec: environment, logs, live view, exit statuses, link bytes, first failure and Ctrl-C as expected")
finally:
    subprocess.run([geotb, "net", "down", "--prefix", prefix], capture_output=True)
