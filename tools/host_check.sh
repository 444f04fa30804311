#!/usr/bin/env bash
# Replays a scenario three ways, one after the other: as is, pinned to one core (taskset -c 0),
# and beside two busy loops (one per core); prints each run's summary rows. A figure that is a
# function of the scenario does not move between the three (docs/measurements/virtual-clock.md).
# Usage: tools/host_check.sh scenarios/X.json OUTDIR   (reports under OUTDIR/{plain,taskset,hog})
set -euo pipefail
G="$(dirname "$0")/../build/harness/geotb"
S=$1 T=$2
rm -rf "$T" && mkdir -p "$T"
"$G" run "$S" --out "$T/plain" >"$T/plain.txt" 2>&1
taskset -c 0 "$G" run "$S" --out "$T/taskset" >"$T/taskset.txt" 2>&1
( while :; do :; done ) & H1=$!
( while :; do :; done ) & H2=$!
trap 'kill $H1 $H2 2>/dev/null || true' EXIT
"$G" run "$S" --out "$T/hog" >"$T/hog.txt" 2>&1
for f in plain taskset hog; do
  echo "== $f"
  grep -E "^[a-z_0-9]+ +[0-9]|host took" "$T/$f.txt"
done
