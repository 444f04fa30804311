#!/usr/bin/env python3
"""A tiny distributed job for `geotb exec` (tests/dpdk/exec_dpdk.py): no torch.

Every rank prints its torchrun-style environment as a GEOTB_METRIC line. The ranks of every data
center but the first connect over plain TCP to the rank with the same local rank in DC 0
(MASTER_ADDR, port 30000 + LOCAL_RANK) and send it BYTES bytes (argv[1]) of a known pattern; the
receivers check every byte and answer with one byte. Options: --fail-rank R --exit-code C (rank R,
not in DC 0, exits C before it connects; its receiver waits for it, the others wait once done), --block (every
rank blocks on a socket until it is stopped; prints "ready" first).
"""
import argparse
import json
import os
import select
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("bytes", type=int)
ap.add_argument("--fail-rank", type=int, default=-1)
ap.add_argument("--exit-code", type=int, default=3)
ap.add_argument("--block", action="store_true")
args = ap.parse_args()

env = {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                      "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "GEOTB_DC",
                                      "GEOTB_DC_NAME", "GEOTB_BIND_ADDR")}
rank, local_rank, dc = int(env["RANK"]), int(env["LOCAL_RANK"]), int(env["GEOTB_DC"])
print("GEOTB_METRIC " + json.dumps({"env": env, "uid": os.getuid(), "gid": os.getgid()}), flush=True)
print(f"hello from rank {rank}", flush=True)

port = 30000 + local_rank
pattern = bytes(range(256)) * 64  # 16 KiB


def stop_here():
    """Wait for geotb to stop this process: block on a socket nobody writes to."""
    a, b = socket.socketpair()
    print("ready", flush=True)
    select.select([a], [], [])
    sys.exit(5)  # only if the socket became readable: it never does


if args.block:
    stop_here()

t0 = time.monotonic()
if dc == 0:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((env["MASTER_ADDR"], port))
    srv.listen(8)
    peers = int(env["GROUP_WORLD_SIZE"]) - 1
    received = 0
    for _ in range(peers):
        conn, _ = srv.accept()
        got = 0
        while got < args.bytes:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            for i, byte in enumerate(chunk):  # every byte is the pattern's
                if byte != (got + i) % 256:
                    sys.exit(f"rank {rank}: byte {got + i} is {byte}, expected {(got + i) % 256}")
            got += len(chunk)
        if got != args.bytes:
            sys.exit(f"rank {rank}: got {got} of {args.bytes} bytes")
        conn.sendall(b"k")
        conn.close()
        received += got
    print("GEOTB_METRIC " + json.dumps({"received": received, "seconds": time.monotonic() - t0}), flush=True)
else:
    if rank == args.fail_rank:  # before connecting: its receiver keeps waiting until geotb stops it
        print(f"rank {rank}: failing on purpose with exit code {args.exit_code}", flush=True)
        sys.exit(args.exit_code)
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection((env["MASTER_ADDR"], port), timeout=5)
            break
        except (ConnectionRefusedError, socket.timeout):  # the receiver is not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    left = args.bytes
    while left > 0:
        n = min(left, len(pattern))
        s.sendall(pattern[:n])  # pattern starts at a multiple of 256 each time: byte i is i % 256
        left -= n
    if s.recv(1) != b"k":
        sys.exit(f"rank {rank}: no acknowledgement")
    s.close()
    print("GEOTB_METRIC " + json.dumps({"sent": args.bytes, "seconds": time.monotonic() - t0}), flush=True)
if args.fail_rank >= 0:
    stop_here()  # the failing rank's peers wait for geotb to stop them
