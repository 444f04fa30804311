#!/usr/bin/env python3
"""Diffs two `geotb run` reports on the figures that must not change when only the code's shape
changes (seeded runs): per strategy the per-step loss series, the test-accuracy curve and the final
accuracy, WAN payload bytes, exchange count and replica_max_abs_diff. With --timing also every
figure of the virtual clock (wall_s, samples/s, compute, compress and exposed/overlapped
communication per step, the exchanges' seconds and efficiency, WAN wire bytes, messages and
retransmissions, the per-step end times): identical when both reports ran on the virtual clock
with a compute profile (docs/guide/clocks.md); they move with the host otherwise.

  tools/report_diff.py [--timing] BEFORE.json AFTER.json   exit 0: identical, 1: differences, 2: unreadable
"""
import json
import sys


TIMING = ("wall_s", "samples_per_s", "compute_s_per_step", "compress_s_per_step", "exposed_comm_s_per_step",
          "overlapped_comm_s_per_step", "comm_compute_ratio", "exchange_seconds_mean", "exchange_efficiency_mean",
          "wan_wire_bytes", "wan_messages", "wan_retransmissions", "samples")


def strategies(report, timing=False):
    out = {}
    for s in report["strategies"]:
        m = s["metrics"]
        out[s["name"]] = {
            "loss": s["series"]["loss"],
            "test_accuracy": [(p["step"], p["samples"], p["accuracy"]) for p in s["series"]["test_accuracy"]],
            "final_test_accuracy": m["final_test_accuracy"],
            "wan_payload_bytes": m["wan_payload_bytes"],
            "exchanges": m["exchanges"],
            "replica_max_abs_diff": m["replica_max_abs_diff"],
        }
        if timing:
            out[s["name"]].update({k: m.get(k) for k in TIMING})
            out[s["name"]]["step_end_s"] = s["series"].get("step_end_s")
    return out


def main(argv):
    timing = "--timing" in argv[1:]
    argv = [a for a in argv if a != "--timing"]
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        a, b = (strategies(json.load(open(p)), timing) for p in argv[1:3])
    except (OSError, ValueError, KeyError) as e:
        print(f"report_diff: {e}", file=sys.stderr)
        return 2
    diffs = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"{name}: only in {'after' if name in b else 'before'}")
            diffs += 1
            continue
        for field, va in a[name].items():
            vb = b[name][field]
            if va == vb:
                n = f"{len(va)} values" if isinstance(va, list) else repr(va)
                print(f"{name:18} {field:22} identical ({n})")
                continue
            diffs += 1
            if isinstance(va, list):
                first = next((i for i, (x, y) in enumerate(zip(va, vb)) if x != y), min(len(va), len(vb)))
                print(f"{name:18} {field:22} DIFFERS: lengths {len(va)}/{len(vb)}, first at index {first}")
            else:
                print(f"{name:18} {field:22} DIFFERS: {va!r} -> {vb!r}")
    print(f"{'identical' if diffs == 0 else f'{diffs} fields differ'}: {argv[1]} vs {argv[2]}")
    return 0 if diffs == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
