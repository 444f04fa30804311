#!/usr/bin/env python3
"""e2e: a represented model (README "Represented models") through `geotb run`: scenarios/tiny.json
training its 784-64-10 MLP while representing GPT-2 124M on H100s. Checks the report's context,
that samples count the represented model's sequences, that the WAN bytes are the proxy's scaled
(to the byte, up to one byte of rounding per message), that the proxy's training is untouched
(the same loss series as without the represented model), and what `geotb run` refuses."""
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tiny_run import run_and_report, tiny_scenario

geotb, source_root = sys.argv[1], Path(sys.argv[2])
TRAINED = 784 * 64 + 64 + 64 * 10 + 10   # 50,890
GPT2 = 124439808

base = tiny_scenario(source_root, "represented-tiny")
base["workload"]["steps"] = 12
base["clock"] = "virtual"
base["strategies"] = [{"name": "naive_ddp", "collective": "eager_ring"},
                      {"name": "hier_ef_topk_int8", "K": 4, "density": "5%", "block": 256, "overlap": True}]
# The proxy alone, with the same declared compute: what the represented run's messages scale.
plain = copy.deepcopy(base)
plain["name"] = "plain-tiny"
plain["compute"] = {"step_time": "50ms"}
rep_s = copy.deepcopy(base)
rep_s["workload"]["represents"] = "gpt2-124m"
rep_s["compute"] = {"gpu": "h100-sxm", "mfu": 0.4, "tokens_per_worker_per_step": 4096}

with tempfile.TemporaryDirectory() as out:
    _, p, _ = run_and_report(geotb, source_root, plain, out)
    proc, r, _ = run_and_report(geotb, source_root, rep_s, out)

ctx = r["context"]["represented_model"]
assert ctx["name"] == "gpt2-124m" and ctx["params"] == GPT2 and ctx["trained_params"] == TRAINED, ctx
assert ctx["sequence_length"] == 1024 and ctx["how"] == "catalog layer formula", ctx
assert abs(ctx["scale"] - GPT2 / TRAINED) < 1e-9, ctx
derived = r["context"]["compute_profile"]["derived"]
assert derived["params"] == GPT2, derived          # compute for the represented parameters
assert "proxy acc" in proc.stdout and "tokens/s" in proc.stdout and "represents gpt2-124m" in proc.stdout

steps, workers = 12, 4
for s, q in zip(r["strategies"], p["strategies"]):
    m, mp = s["metrics"], q["metrics"]
    # 4096 tokens / 1024 per sequence = 4 samples per worker and step.
    assert m["samples"] == steps * workers * 4, (s["name"], m["samples"])
    # The trained model's arithmetic is the same: same losses, same accuracy.
    assert s["series"]["loss"] == q["series"]["loss"], s["name"]
    assert m["final_test_accuracy"] == mp["final_test_accuracy"], s["name"]
    # Every WAN message is a tensor message here: its bytes scale, up to one byte of rounding each
    # (headers that do not grow make the represented bytes slightly smaller than a pure scaling).
    scaled = mp["wan_payload_bytes"] * ctx["scale"]
    assert m["wan_messages"] == mp["wan_messages"], s["name"]
    assert scaled * 0.999 <= m["wan_payload_bytes"] <= scaled + m["wan_messages"], \
        (s["name"], m["wan_payload_bytes"], scaled)
    print(f"{s['name']}: {m['wan_payload_bytes']} WAN bytes = {m['wan_payload_bytes'] / scaled:.6f} x the proxy's "
          f"{mp['wan_payload_bytes']} x {ctx['scale']:.1f}; exposed {m['exposed_comm_s_per_step']:.3f} s/step")
naive = r["strategies"][0]["metrics"]
# naive_ddp's eager ring over 4 ranks: a rank crossing the WAN sends 2 (4 - 1) = 6 chunks of a
# quarter of the 498 MB gradient per step, 747 MB: at 1 Gbit/s no less than 5.97 s per step.
assert naive["exposed_comm_s_per_step"] > 6 * (GPT2 / 4) * 4 * 8 / 1e9, naive["exposed_comm_s_per_step"]


def refused(edit, needle, args=()):
    s = copy.deepcopy(rep_s)
    s["name"] = "refused"
    edit(s)
    with tempfile.TemporaryDirectory() as out:
        path = Path(out) / "refused.json"
        path.write_text(json.dumps(s))
        proc = subprocess.run([geotb, "run", str(path), "--out", out, *args], capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert needle in proc.stderr, proc.stderr


refused(lambda s: None, "workload.represents: \"gpt2-124m\": a represented model needs the virtual clock",
        ("--clock", "wall"))
refused(lambda s: s["strategies"][0].pop("collective"), "strategies[0].collective: \"gloo_ring\": Gloo's ring cuts")
refused(lambda s: s["workload"].update(represents="gpt5"), "workload.represents: \"gpt5\": unknown model")
print("e2e represented: context, samples, scaled WAN bytes, untouched training, refusals")
