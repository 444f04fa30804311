#!/usr/bin/env python3
"""False-detection sweep of the heartbeat detector (docs/measurements/false-detections.md).

Replays scenarios/heartbeat-lossy.json (2 x 4 workers, 1 Gbit/s WAN, naive_ddp and
hier_ef_topk_int8, 120 steps) with its WAN loss and RTT replaced: Bernoulli 2, 5, 10 % and a
bursty Gilbert-Elliott loss (1 % good->bad, 10 % bad->good per frame, 50 % loss in the bad state),
at 150 and 300 ms RTT, one run per seed. With --kill, ningxia's worker 2 is killed at step 30.
Prints one Markdown row per (loss, RTT, strategy): runs, failed runs, runs failed or with a false
detection, declarations and false ones in the runs that completed (a failed run writes none), kills
never detected, the first detection's latency of each kill, the mean final accuracy. Existing
reports under OUTDIR are reused.

usage: tools/false_detection_sweep.py GEOTB OUTDIR [--kill] [--seeds N] [--witnesses K] [--worker-timeout 1800s]
"""
import argparse
import collections
import itertools
import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
LOSSES = [("b2", "bernoulli 2 %", {"model": "bernoulli", "p": "2%"}),
          ("b5", "bernoulli 5 %", {"model": "bernoulli", "p": "5%"}),
          ("b10", "bernoulli 10 %", {"model": "bernoulli", "p": "10%"}),
          ("ge", "gilbert-elliott", {"model": "gilbert_elliott", "p_good_to_bad": "1%", "p_bad_to_good": "10%",
                               "loss_good": "0%", "loss_bad": "50%"})]
RTTS = ["150ms", "300ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("geotb")
    ap.add_argument("out")
    ap.add_argument("--kill", action="store_true")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--witnesses", type=int, help="sets faults.heartbeat.witnesses (0: the observer's silence "
                                                  "alone decides, the rule before 2026-12-03; default: the scenario's)")
    ap.add_argument("--worker-timeout", help="passed to geotb run (embedded: a message not delivered by then "
                                             "fails the run; default 120s)")
    a = ap.parse_args()
    base = json.loads((ROOT / "scenarios/heartbeat-lossy.json").read_text())
    os.makedirs(a.out, exist_ok=True)
    agg = collections.OrderedDict()
    for (key, ln, loss), rtt, seed in itertools.product(LOSSES, RTTS, range(base["seed"], base["seed"] + a.seeds)):
        s = json.loads(json.dumps(base))
        s["name"] = f"fd-{key}-{rtt}-{seed}" + ("-kill" if a.kill else "")
        s["seed"] = seed
        s["wan"][0]["loss"] = loss
        s["wan"][0]["rtt"] = rtt
        if a.witnesses is not None:
            s["faults"]["heartbeat"]["witnesses"] = a.witnesses
        if a.kill:
            s["timeline"] = [{"at_step": 30, "kill": {"dc": "ningxia", "worker": 2}}]
        path = pathlib.Path(a.out) / (s["name"] + ".json")
        path.write_text(json.dumps(s, indent=1))
        d = pathlib.Path(a.out) / s["name"]
        if not list(d.glob("*.json")):
            with open(str(d) + ".log", "w") as log:
                extra = ["--worker-timeout", a.worker_timeout] if a.worker_timeout else []
                subprocess.run([a.geotb, "run", str(path), "--out", str(d)] + extra, stdout=log, stderr=subprocess.STDOUT,
                               timeout=1800)
        reports = list(d.glob("*.json"))
        for st in ("naive_ddp", "hier_ef_topk_int8"):
            agg.setdefault((ln, rtt, st), {"runs": 0, "failed": 0, "det": 0, "false": 0, "lat": [], "acc": [],
                                           "missed": 0, "hit": 0})
        if not reports:
            for st in ("naive_ddp", "hier_ef_topk_int8"):
                agg[(ln, rtt, st)]["runs"] += 1
                agg[(ln, rtt, st)]["failed"] += 1
                agg[(ln, rtt, st)]["hit"] += 1
            continue
        r = json.loads(reports[0].read_text())
        for f in r.get("failures", []):
            x = agg[(ln, rtt, f["strategy"])]
            x["runs"] += 1
            x["failed"] += 1
            x["hit"] += 1
        for st in r["strategies"]:
            x = agg[(ln, rtt, st["name"])]
            fa = st["faults"]
            x["runs"] += 1
            x["det"] += len(fa["detections"])
            x["false"] += fa["false_detections"]
            x["hit"] += fa["false_detections"] > 0
            kills = [e for e in fa["events"] if e["event"] == "kill" and e.get("policy") == "shrink"]
            for e in kills:
                if e.get("detection_latency_s") is None:
                    x["missed"] += 1
                else:
                    x["lat"].append(e["detection_latency_s"])
            x["acc"].append(st["metrics"]["final_test_accuracy"])
    print("| loss | RTT | strategy | runs | failed | runs failed or with a false detection | declarations | false | "
          "kills undetected | kill detected after s (min–max) | accuracy (mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (ln, rtt, st), x in agg.items():
        lat = f"{min(x['lat']):.2f}–{max(x['lat']):.2f}" if x["lat"] else "–"
        acc = f"{sum(x['acc']) / len(x['acc']):.4f}" if x["acc"] else "–"
        print(f"| {ln} | {rtt} | {st} | {x['runs']} | {x['failed']} | {x['hit']} | {x['det']} | {x['false']} | "
              f"{x['missed'] if a.kill else '–'} | {lat} | {acc} |")


if __name__ == "__main__":
    main()
