#!/usr/bin/env python3
"""`geotb check` on the committed baseline of scenarios/us-east-us-west.json:
- the baseline against itself passes (exit 0) and prints the table;
- a copy with hier_ef_topk_int8's throughput halved fails (exit 1) naming the strategy, the figure,
  both values and the allowed range;
- a copy without that strategy fails (exit 1) saying it is missing;
- a copy whose hier_ef_topk_int8 WAN bytes doubled fails on the WAN-bytes ratio;
- unreadable input and a baseline of another scenario exit 2 with a message naming the file;
- --update replaces the baseline through a rename (a copy here, never the committed file)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

geotb, root = sys.argv[1], Path(sys.argv[2])
baseline = root / "reports/baselines/us-east-us-west.json"
base = json.loads(baseline.read_text())


def check(report, against, *extra):
    p = subprocess.run([geotb, "check", str(report), "--baseline", str(against), *extra],
                       capture_output=True, text=True, timeout=60)
    print(f"$ geotb check {report.name} --baseline {against.name} {' '.join(extra)} -> exit {p.returncode}")
    print(p.stdout + p.stderr)
    return p


def strategy(rep, name):
    return next(s for s in rep["strategies"] if s["name"] == name)


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)

    p = check(baseline, baseline)
    assert p.returncode == 0, "the baseline must pass against itself"
    assert "PASS" in p.stdout and "hier_ef_topk_int8" in p.stdout and "throughput ratio" in p.stdout

    slow = json.loads(json.dumps(base))
    h = strategy(slow, "hier_ef_topk_int8")["metrics"]
    h["samples_per_s"] /= 2
    (tmp / "slow.json").write_text(json.dumps(slow))
    p = check(tmp / "slow.json", baseline)
    assert p.returncode == 1, f"halved throughput must fail with exit 1, got {p.returncode}"
    ratio = strategy(base, "hier_ef_topk_int8")["metrics"]["samples_per_s"] / \
        strategy(base, "naive_ddp")["metrics"]["samples_per_s"]
    expected = f"hier_ef_topk_int8: throughput ratio {ratio:.3f}x -> {ratio / 2:.3f}x (allowed >= "
    assert expected in p.stdout, f"expected {expected!r} in the output"
    assert "fell 50% below the baseline" in p.stdout
    assert "FAIL: 1 of" in p.stdout

    # The gate's own scenario is deterministic (virtual clock + compute profile): its baseline
    # allows 2 %, so one strategy 10 % slower fails, and the report under test cannot loosen that
    # with its own scenario.check (tolerances come from the baseline).
    tol = base["scenario"]["check"]["throughput_ratio_tolerance"]
    assert tol <= 0.02, f"the committed gate should be tight, has {tol}"
    slower = json.loads(json.dumps(base))
    strategy(slower, "hier_ef_topk_int8")["metrics"]["samples_per_s"] *= 0.9
    slower["scenario"]["check"]["throughput_ratio_tolerance"] = 0.5
    (tmp / "slower.json").write_text(json.dumps(slower))
    p = check(tmp / "slower.json", baseline)
    assert p.returncode == 1, f"10% slower must fail with exit 1, got {p.returncode}\n{p.stdout}"
    assert "fell 10% below the baseline" in p.stdout, p.stdout

    gone = json.loads(json.dumps(base))
    gone["strategies"] = [s for s in gone["strategies"] if s["name"] != "hier_ef_topk_int8"]
    (tmp / "gone.json").write_text(json.dumps(gone))
    p = check(tmp / "gone.json", baseline)
    assert p.returncode == 1
    assert "hier_ef_topk_int8: present: in the baseline but missing from this run" in p.stdout

    fat = json.loads(json.dumps(base))
    strategy(fat, "hier_ef_topk_int8")["metrics"]["wan_payload_bytes"] *= 2
    (tmp / "fat.json").write_text(json.dumps(fat))
    p = check(tmp / "fat.json", baseline)
    assert p.returncode == 1
    assert "hier_ef_topk_int8: WAN bytes ratio" in p.stdout and "rose 100% above the baseline" in p.stdout

    # A looser tolerance from the command line lets the same halving pass, and says where it came from.
    p = check(tmp / "slow.json", baseline, "--throughput-tolerance", "0.6")
    assert p.returncode == 0 and "tolerances (command line): throughput ratio -60%" in p.stdout

    (tmp / "broken.json").write_text("{ not json")
    p = check(tmp / "broken.json", baseline)
    assert p.returncode == 2 and "broken.json: not valid JSON" in p.stderr

    bad = json.loads(json.dumps(base))
    strategy(bad, "naive_ddp")["metrics"]["samples_per_s"] = "fast"
    (tmp / "bad.json").write_text(json.dumps(bad))
    p = check(tmp / "bad.json", baseline)
    assert p.returncode == 2
    assert 'bad.json: strategies[0].metrics.samples_per_s: expected a number, got "fast"' in p.stderr

    other = json.loads(json.dumps(base))
    other["scenario"]["name"] = "tiny"
    (tmp / "other.json").write_text(json.dumps(other))
    p = check(tmp / "other.json", baseline)
    assert p.returncode == 2 and 'is a run of scenario "tiny"' in p.stderr

    p = check(baseline, tmp / "absent.json")
    assert p.returncode == 2 and "no such baseline" in p.stderr

    copy = tmp / "baseline-copy.json"
    shutil.copy(baseline, copy)
    inode = os.stat(copy).st_ino
    p = check(tmp / "slow.json", copy, "--update")
    assert p.returncode == 0, "--update is deliberate: it replaces even a failing baseline"
    assert json.loads(copy.read_text()) == slow
    assert os.stat(copy).st_ino != inode, "--update must write a new file and rename it over the old one"
    assert not list(tmp.glob("*.tmp*")), "no temporary file may be left behind"
    p = check(tmp / "slow.json", copy)
    assert p.returncode == 0

print("check_regression: regressions fail with readable messages, bad input exits 2, --update replaces")
