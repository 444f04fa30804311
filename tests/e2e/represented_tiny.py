#!/usr/bin/env python3
"""e2e: a represented model (docs/guide/represented.md) through `geotb run`: scenarios/tiny.json
training its 784-64-10 MLP while representing GPT-2 124M on H100s. Checks the report's context,
that samples count the represented model's sequences, that the WAN bytes are the proxy's scaled
(to the byte, up to one byte of rounding per message), that the proxy's training is untouched
(the same loss series as without the represented model, where the buckets leave the summation
order alone), that DDP's buckets are GPT-2's (its tensors cut at 25 MiB, in groups) and overlap
the backward pass, and what `geotb run` refuses."""
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


def gpt2_tensors():
    """GPT-2 124M's parameter tensors in Hugging Face order (c_attn as its q, k, v parts)."""
    d, ffn, t = 768, 3072, [50257 * 768, 1024 * 768]
    for _ in range(12):
        t += [d, d] + [d * d, d] * 4 + [d, d] + [d * ffn, ffn, ffn * d, d]
    return t + [d, d]


def ddp_groups(tensors, first=1 << 20, cap=25 << 20, max_groups=64):
    """DDP's buckets (from the end, closed at the limit), grouped as geotb groups a
    represented model's: the first alone, then groups of max(2, ceil(rest / 64))."""
    buckets, acc, limit = [], 0, first
    for x in reversed(tensors):
        acc += x
        if acc * 4 >= limit:
            buckets, acc, limit = buckets + [acc], 0, cap
    buckets += [acc] if acc else []
    rest = len(buckets) - 1
    g = max(2, -(-rest // max_groups))
    return len(buckets), 1 + -(-rest // g)


assert sum(gpt2_tensors()) == GPT2
BUCKETS, GROUPS = ddp_groups(gpt2_tensors())
assert (BUCKETS, GROUPS) == (13, 7), (BUCKETS, GROUPS)

base = tiny_scenario(source_root, "represented-tiny")
base["workload"]["steps"] = 12
base["clock"] = "virtual"
base["strategies"] = [{"name": "naive_ddp", "collective": "eager_ring"},
                      {"name": "hier_ef_topk_int8", "K": 4, "density": "5%", "block": 256, "overlap": True},
                      {"name": "qsgd", "K": 4}]  # its 8 + 28 header bytes fixed, norms and codes scaled
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
    scaled = mp["wan_payload_bytes"] * ctx["scale"]
    if s["name"] == "naive_ddp":
        # GPT-2's 13 buckets in 7 groups: 7 ring allreduces per step where the proxy has one.
        # The proxy's gradient is summed slice by slice, so a 4-rank ring adds in another order:
        # the losses differ by float rounding only.
        assert m["wan_messages"] == GROUPS * mp["wan_messages"], (m["wan_messages"], mp["wan_messages"])
        worst = max(abs(a - b) for a, b in zip(s["series"]["loss"], q["series"]["loss"]))
        assert worst < 1e-4, worst
        assert abs(m["final_test_accuracy"] - mp["final_test_accuracy"]) <= 0.002, s["name"]
        assert s["config"]["bucket_mb"] == 25, s["config"]
    else:
        # Its WAN exchange is one message whatever it stands for, and its intra-DC buckets (2
        # workers: a + b in any order) leave the arithmetic as it was: same losses, same accuracy.
        assert m["wan_messages"] == mp["wan_messages"], s["name"]
        assert s["series"]["loss"] == q["series"]["loss"], s["name"]
        assert m["final_test_accuracy"] == mp["final_test_accuracy"], s["name"]
    # Every WAN message is a tensor message here: its bytes scale, up to one byte of rounding each
    # (headers that do not grow make the represented bytes slightly smaller than a pure scaling).
    # naive_ddp's buckets carry GPT-2's own bucket sizes, or their proxy slice scaled (whole
    # proxy floats: DdpBuckets::scales): the same bytes within 0.1 %.
    if s["name"] == "qsgd":
        # kernels/qsgd.h: 28 + 4 ceil(n/d) + ceil(n (ceil(log2(s+1)) + 1) / 8) bytes, after the 8-byte
        # clock; the 36 header bytes stay, the rest scales (to the byte).
        wire = 8 + 28 + 4 * -(-TRAINED // 128) + -(-TRAINED * 10 // 8)
        assert q["exchanges"][0]["bytes"] == wire, q["exchanges"][0]
        for e in s["exchanges"]:
            assert abs(e["bytes"] - (36 + (wire - 36) * ctx["scale"])) <= 0.5, (e, wire)
    upper = scaled * 1.001 if s["name"] == "naive_ddp" else scaled + m["wan_messages"]
    assert scaled * 0.999 <= m["wan_payload_bytes"] <= upper, (s["name"], m["wan_payload_bytes"], scaled)
    print(f"{s['name']}: {m['wan_payload_bytes']} WAN bytes = {m['wan_payload_bytes'] / scaled:.6f} x the proxy's "
          f"{mp['wan_payload_bytes']} x {ctx['scale']:.1f}; exposed {m['exposed_comm_s_per_step']:.3f} s/step")
naive = r["strategies"][0]["metrics"]
# naive_ddp's eager ring over 4 ranks: a rank crossing the WAN sends 2 (4 - 1) = 6 chunks of a
# quarter of the 498 MB gradient per step, 747 MB: at 1 Gbit/s no less than 5.97 s per step.
assert naive["exposed_comm_s_per_step"] > 6 * (GPT2 / 4) * 4 * 8 / 1e9, naive["exposed_comm_s_per_step"]

# DDP's buckets overlap the backward pass: `lan` (every worker in one site, 10 Gbit/s LAN here)
# with 1.5 s steps, whose 2/3 of backward can hide GPT-2's allreduce (~0.6 s of LAN per step).
# Most of the allreduce is overlapped. What stays exposed is what the backward produces last: GPT-2's
# tied token embedding (38.6 M floats, 31 % of the gradient) is its first parameter, so its bucket
# is DDP's last and its allreduce (~0.23 s here) follows the backward pass.
lan_s = copy.deepcopy(rep_s)
lan_s["name"] = "represented-lan"
lan_s["strategies"] = [{"name": "lan"}]
lan_s["workload"]["steps"] = 4
lan_s["lan"] = {"bandwidth": "10Gbps", "rtt": "100us"}
lan_s["compute"] = {"step_time": "1500ms"}
with tempfile.TemporaryDirectory() as out:
    _, lr, _ = run_and_report(geotb, source_root, lan_s, out)
lm = lr["strategies"][0]["metrics"]
exposed, hidden = lm["exposed_comm_s_per_step"], lm["overlapped_comm_s_per_step"]
assert hidden > 0.3 and 0.15 < exposed < hidden, (exposed, hidden)
assert abs(lm["compute_s_per_step"] - 1.5) < 1e-3, lm["compute_s_per_step"]  # forward + backward shares
print(f"lan: {hidden:.3f} s/step of allreduce hidden behind the backward pass, {exposed:.3f} s exposed")


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
