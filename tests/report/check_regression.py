#!/usr/bin/env python3
"""`geotb check` on the committed baselines (reports/baselines/*.json):
- every baseline is of a clean commit, on the virtual clock with a compute profile (so gated on
  absolute figures), says why it is one, and passes against itself (exit 0);
- on us-east-us-west's baseline, each of these crafted copies fails (exit 1) with a line naming the
  strategy, the figure, both values and the allowed range: naive_ddp 3 % slower (which ratio gating
  reads as hier getting better), hier_ef_topk_int8 1 % slower, every strategy 1.5x slower,
  hier_ef_topk_int8's WAN bytes 1 % higher, naive_ddp's exposed comm 1 % higher, one exchange
  more, accuracy 0.002 lower, a missing strategy; a copy that claims a loose tolerance for itself
  still fails (tolerances come from the baseline);
- a copy that ran on other CPU kernels (context.cpu.blas changed) passes with accuracy 0.002 lower
  and fails with 0.02 lower (check.cross_cpu_accuracy_tolerance, 0.01), saying why;
- a baseline whose clock is unrecorded is gated on ratios and says so: there naive_ddp 10 % slower
  passes and hier 20 % slower fails (default ratio tolerance 15 %);
- a baseline made from a dirty tree fails; unreadable input and a baseline of another scenario
  exit 2 with a message naming the file;
- --update needs --reason, refuses a report of a dirty tree, and otherwise replaces the baseline
  through a rename (a copy here, never the committed file), recording the reason."""
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

geotb, root = sys.argv[1], Path(sys.argv[2])
baselines = sorted((root / "reports/baselines").glob("*.json"))
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


assert len(baselines) >= 3, f"expected the gated baselines, found {baselines}"
for b in baselines:
    rep = json.loads(b.read_text())
    assert not rep["context"]["git_revision"].endswith("-dirty"), f"{b.name}: a baseline must be of a clean commit"
    assert rep["context"]["clock"] == "virtual" and "compute_profile" in rep["context"], f"{b.name}: not absolute"
    assert rep["baseline"]["reason"], f"{b.name}: says why it is the baseline"
    assert rep["context"].get("cpu", {}).get("model"), f"{b.name}: records the CPU it trained on (context.cpu)"
    p = check(b, b)
    assert p.returncode == 0, f"{b.name} must pass against itself"
    assert "absolute figures of every strategy" in p.stdout and "naive_ddp            samples/s" in p.stdout
    assert f"scenario hash {rep['scenario']['hash'][:12]}" in p.stdout
    assert f"baseline: git {rep['context']['git_revision']}," in p.stdout

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)

    def crafted(name, edit):
        rep = copy.deepcopy(base)
        edit(rep)
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(rep))
        return path

    def metrics(rep, name):
        return strategy(rep, name)["metrics"]

    def fails(name, edit, *lines):
        p = check(crafted(name, edit), baseline)
        assert p.returncode == 1, f"{name}: must fail with exit 1, got {p.returncode}"
        for line in lines:
            assert line in p.stdout, f"{name}: expected {line!r} in the output"
        return p

    n_sps = metrics(base, "naive_ddp")["samples_per_s"]
    h_sps = metrics(base, "hier_ef_topk_int8")["samples_per_s"]
    fails("naive-3pct", lambda r: metrics(r, "naive_ddp").update(samples_per_s=n_sps * 0.97),
          f"naive_ddp: samples/s {n_sps:.2f} -> {n_sps * 0.97:.2f} (allowed >= {n_sps * 0.995:.2f}): fell 3% below",
          "FAIL: 1 of")
    fails("hier-1pct", lambda r: metrics(r, "hier_ef_topk_int8").update(samples_per_s=h_sps * 0.99),
          f"hier_ef_topk_int8: samples/s {h_sps:.2f} -> {h_sps * 0.99:.2f}", "fell 1% below the baseline (tolerance 0.5%)")

    def all_slower(r):
        for s in r["strategies"]:
            s["metrics"]["samples_per_s"] /= 1.5
    fails("all-1.5x", all_slower, "FAIL: 2 of")

    w = metrics(base, "hier_ef_topk_int8")["wan_payload_bytes"]
    fails("wan-1pct", lambda r: metrics(r, "hier_ef_topk_int8").update(wan_payload_bytes=round(w * 1.01)),
          f"hier_ef_topk_int8: WAN bytes {w} -> {round(w * 1.01)}", "rose 1% above the baseline")
    c = metrics(base, "naive_ddp")["exposed_comm_s_per_step"]
    fails("comm-1pct", lambda r: metrics(r, "naive_ddp").update(exposed_comm_s_per_step=c * 1.01),
          "naive_ddp: exposed comm/step")
    x = metrics(base, "hier_ef_topk_int8")["exchanges"]
    fails("exchanges", lambda r: metrics(r, "hier_ef_topk_int8").update(exchanges=x + 1),
          f"hier_ef_topk_int8: exchanges {x} -> {x + 1} (allowed = {x}): changed from {x} to {x + 1} (must be equal)")
    a = metrics(base, "naive_ddp")["final_test_accuracy"]
    fails("acc-0.002", lambda r: metrics(r, "naive_ddp").update(final_test_accuracy=a - 0.002),
          f"naive_ddp: final accuracy {a:.4f} -> {a - 0.002:.4f} (allowed >= {a:.4f})")

    def other_cpu(drop):
        def edit(r):
            r["context"]["cpu"]["blas"] = "SkylakeX" if r["context"]["cpu"]["blas"] != "SkylakeX" else "Zen"
            metrics(r, "naive_ddp").update(final_test_accuracy=a - drop)
        return edit
    p = check(crafted("other-cpu-0.002", other_cpu(0.002)), baseline)
    assert p.returncode == 0, "another CPU's kernels: 0.002 lower is within the cross-CPU tolerance"
    assert "another CPU or other kernels than the baseline's" in p.stdout and "gated within 0.0100 at least" in p.stdout
    fails("other-cpu-0.02", other_cpu(0.02), f"naive_ddp: final accuracy {a:.4f} -> {a - 0.02:.4f} (allowed >= {a - 0.01:.4f})")
    fails("gone", lambda r: r.update(strategies=[s for s in r["strategies"] if s["name"] != "hier_ef_topk_int8"]),
          "hier_ef_topk_int8: present: in the baseline but missing from this run")

    def loosened(r):
        metrics(r, "hier_ef_topk_int8")["samples_per_s"] *= 0.9
        r["scenario"]["check"] = {"throughput_ratio_tolerance": 0.5, "wan_bytes_ratio_tolerance": 0.5,
                                  "timing_tolerance": 0.5}
    fails("loosened", loosened, "fell 10% below the baseline (tolerance 0.5%)")

    # A looser tolerance from the command line lets a 1 % slowdown pass, and says where it came from.
    p = check(tmp / "hier-1pct.json", baseline, "--timing-tolerance", "0.02")
    assert p.returncode == 0 and "tolerances (command line): samples/s and exposed comm/step 2%" in p.stdout

    # Ratio gating for a baseline whose clock is not recorded (or measured): it says so.
    def unclocked(r):
        del r["context"]["clock"]
    ratio_base = crafted("ratio-base", unclocked)
    p = check(crafted("ratio-naive-10pct", lambda r: (unclocked(r), metrics(r, "naive_ddp").update(
        samples_per_s=n_sps * 0.9))), ratio_base)
    assert p.returncode == 0 and "ratios of each strategy to naive_ddp in the same run" in p.stdout
    p = check(crafted("ratio-hier-20pct", lambda r: (unclocked(r), metrics(r, "hier_ef_topk_int8").update(
        samples_per_s=h_sps * 0.8))), ratio_base)
    assert p.returncode == 1 and "hier_ef_topk_int8: throughput ratio" in p.stdout

    dirty = crafted("dirty", lambda r: r["context"].update(git_revision=r["context"]["git_revision"] + "-dirty"))
    p = check(baseline, dirty)
    assert p.returncode == 1 and "-: baseline: the baseline was made by geotb built from git" in p.stdout

    (tmp / "broken.json").write_text("{ not json")
    p = check(tmp / "broken.json", baseline)
    assert p.returncode == 2 and "broken.json: not valid JSON" in p.stderr
    (tmp / "huge.json").write_text('{"schema": 1e999}')  # a number JSON cannot hold: the file named, exit 2
    p = check(tmp / "huge.json", baseline)
    assert p.returncode == 2 and "huge.json: not valid JSON: [json.exception.out_of_range.406]" in p.stderr, p.stderr
    p = check(crafted("bad", lambda r: metrics(r, "naive_ddp").update(samples_per_s="fast")), baseline)
    assert p.returncode == 2
    assert 'bad.json: strategies[0].metrics.samples_per_s: expected a number, got "fast"' in p.stderr
    p = check(crafted("other", lambda r: r["scenario"].update(name="tiny")), baseline)
    assert p.returncode == 2 and 'is a run of scenario "tiny"' in p.stderr
    p = check(baseline, tmp / "absent.json")
    assert p.returncode == 2 and "no such baseline" in p.stderr

    copy_path = tmp / "baseline-copy.json"
    copy_path.write_text(baseline.read_text())
    inode = os.stat(copy_path).st_ino
    p = check(tmp / "hier-1pct.json", copy_path, "--update")
    assert p.returncode == 2 and "--update needs --reason" in p.stderr
    p = check(dirty, copy_path, "--update", "--reason", "test")
    assert p.returncode == 2 and "refusing to make a run of geotb built from git" in p.stderr
    assert os.stat(copy_path).st_ino == inode, "a refused --update leaves the baseline alone"
    p = check(tmp / "hier-1pct.json", copy_path, "--update", "--reason", "hier is 1% slower on purpose")
    assert p.returncode == 0, "--update is deliberate: it replaces even a failing baseline"
    updated = json.loads(copy_path.read_text())
    assert updated["baseline"]["reason"] == "hier is 1% slower on purpose"
    assert updated["baseline"]["from"].endswith("hier-1pct.json")
    assert updated["strategies"] == json.loads((tmp / "hier-1pct.json").read_text())["strategies"]
    assert os.stat(copy_path).st_ino != inode, "--update must write a new file and rename it over the old one"
    assert not list(tmp.glob("*.tmp*")), "no temporary file may be left behind"
    p = check(tmp / "hier-1pct.json", copy_path)
    assert p.returncode == 0 and "because: hier is 1% slower on purpose" in p.stdout

print(f"check_regression: {len(baselines)} baselines pass against themselves; 8 crafted regressions fail; "
      "ratio gating only for unclocked baselines; bad input exits 2; --update needs a reason and a clean tree")
