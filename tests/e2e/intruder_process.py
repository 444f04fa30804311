#!/usr/bin/env python3
"""e2e, no root: strangers at the ports of a process-mode run (`geotb run --net process`).

1. An undisturbed run of scenarios/tiny.json (400 steps, hier_ef_topk_int8): its final-weights
   SHA-256. geotb run drew the run's secret itself (GEOTB_SECRET unset).
2. The same run again; while it trains, `socket_intruder` connects to every rank's transport port
   (from each rank's log line "transport listening on ADDR:PORT") three times: a HELLO with a
   made-up proof of the secret, a HELLO without one, garbage. Every attempt must be refused, the
   run must end as the undisturbed one did (exit 0, the same final-weights SHA-256), and its
   report must count the 12 refused connections (refused_connections).
3. During that run, `ss -ltnp`: every listener of a geotb process is on 127.0.0.1 (the store that
   rank 0 serves included: libtorch's TCPStore would listen on every address).
Usage: intruder_process.py GEOTB SOCKET_INTRUDER SOURCE_ROOT
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

geotb, intruder, source_root = sys.argv[1], sys.argv[2], Path(sys.argv[3])
STRATEGY = "hier_ef_topk_int8"


def report_of(out):
    reps = sorted(out.glob("*.json"))
    assert len(reps) == 1, f"expected one report in {out}, found {reps}"
    rep = json.loads(reps[0].read_text())
    return {s["name"]: s for s in rep["strategies"]}[STRATEGY]


def listeners(pid_set):
    """[(address, port, pid)] of the TCP listeners of these processes (ss -ltnp)."""
    out = subprocess.run(["ss", "-ltnpH"], text=True, stdout=subprocess.PIPE, check=True).stdout
    found = []
    for line in out.splitlines():
        cols = line.split()
        pids = [int(p) for p in re.findall(r"pid=(\d+)", line)]
        if any(p in pid_set for p in pids):
            addr, _, port = cols[3].rpartition(":")
            found.append((addr, int(port), pids[0]))
    return found


def descendants(pid):
    kids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                kids.add(int(d.name))
    for k in list(kids):
        kids |= descendants(k)
    return kids


def main():
    env = {k: v for k, v in os.environ.items() if k != "GEOTB_SECRET"}
    env["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="geotb-intruder-") as tmp:
        tmp = Path(tmp)
        scen = json.loads((source_root / "scenarios/tiny.json").read_text())
        scen["name"] = "intruder"
        scen["workload"]["steps"] = 400
        (tmp / "s.json").write_text(json.dumps(scen))
        base = [geotb, "run", str(tmp / "s.json"), "--net", "process", "--strategies", STRATEGY]

        t0 = time.monotonic()
        p = subprocess.run(base + ["--out", str(tmp / "calm")], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert p.returncode == 0, f"undisturbed run exited {p.returncode}:\n{p.stdout[-3000:]}"
        calm = report_of(tmp / "calm")
        print(f"undisturbed: {time.monotonic() - t0:.1f} s, final weights {calm['final_weights_sha256'][:16]}..., "
              f"refused {calm.get('refused_connections')}")
        assert calm.get("refused_connections") == 0, calm.get("refused_connections")

        run = subprocess.Popen(base + ["--out", str(tmp / "stormy")], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        work = Path(tempfile.gettempdir()) / f"geotb-run-intruder-{run.pid}" / STRATEGY
        ports, attempts, lines = {}, [], []
        deadline = time.monotonic() + 60
        while len(ports) < 4 and time.monotonic() < deadline and run.poll() is None:
            for r in range(4):
                log = work / f"rank-{r}.log"
                if r not in ports and log.exists():
                    m = re.search(r"transport listening on 127\.0\.0\.1:(\d+)", log.read_text())
                    if m:
                        ports[r] = int(m.group(1))
            time.sleep(0.05)
        assert len(ports) == 4, f"found the transport ports of ranks {sorted(ports)} only (logs in {work})"
        pids = {run.pid} | descendants(run.pid)
        seen = listeners(pids)
        for r, port in sorted(ports.items()):
            q = subprocess.run([intruder, "127.0.0.1", str(port), str(r), "4"], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            attempts.append(q.returncode)
            lines.append(f"rank {r} port {port}: " + "; ".join(q.stdout.split("\n")).strip("; "))
        out, _ = run.communicate(timeout=600)
        print("\n".join(lines))
        print("listeners of the run during it (ss -ltnp): " + ", ".join(f"{a}:{p}" for a, p, _ in seen))
        assert attempts == [0, 0, 0, 0], f"intruder exit statuses {attempts}:\n" + "\n".join(lines)
        assert run.returncode == 0, f"disturbed run exited {run.returncode}:\n{out[-3000:]}"
        stormy = report_of(tmp / "stormy")
        print(f"disturbed: final weights {stormy['final_weights_sha256'][:16]}..., refused {stormy.get('refused_connections')}")
        assert stormy["final_weights_sha256"] == calm["final_weights_sha256"], "the intrusions changed the training"
        assert stormy.get("refused_connections") == 12, f"refused_connections {stormy.get('refused_connections')}, expected 12"
        assert seen, "no listener of the run seen"
        public = [(a, p) for a, p, _ in seen if a not in ("127.0.0.1",)]
        assert not public, f"listeners not on 127.0.0.1: {public}"
    print("intruder_process: ok")


if __name__ == "__main__":
    main()
