#!/usr/bin/env bash
# The regression gate (docs/guide/gate.md): replays each gated scenario with the built geotb and
# runs `geotb check` on its report against reports/baselines/<scenario>.json.
#   ci/check.sh [scenario.json ...]    exit 0 all pass, 1 a regression, 2 bad input / nothing built
# Default: the gated scenarios below. Reports, check tables and checkpoints stay in
# $GEOTB_BUILD/check/<scenario>/ (default build/check/) for inspection.
# No retry: every gated scenario runs on the virtual clock with a declared compute profile, so
# every figure it compares is a function of the scenario (docs/guide/clocks.md): the same on any host,
# under any load. The gate compares absolute figures of every strategy at 0.5 % (timing, bytes)
# and accuracy identical to 4 decimals: room for nothing but a deliberate change. Only on another
# CPU (its OpenBLAS core: the reports' context.cpu) does the accuracy move, and the gate allows it
# 0.01 there (docs/guide/gate.md "Across CPUs").
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GEOTB_BUILD:-build}
geotb="$build/harness/geotb"
if [ "$#" -gt 0 ]; then
  scenarios=("$@")
else
  scenarios=(scenarios/us-east-us-west.json scenarios/gate-triangle.json scenarios/gate-full-recovery.json)
fi
if [ ! -x "$geotb" ]; then
  echo "check.sh: $geotb not built (run ci/build.sh)" >&2
  exit 2
fi
worst=0
for scenario in "${scenarios[@]}"; do
  name=$(basename "$scenario" .json)
  baseline="reports/baselines/$name.json"
  if [ ! -f "$baseline" ]; then
    echo "check.sh: no baseline $baseline (make one deliberately: geotb check <report> --baseline $baseline --update --reason ...)" >&2
    exit 2
  fi
  out="$build/check/$name"
  rm -rf "$out"
  mkdir -p "$out"
  echo "check.sh: geotb run $scenario"
  start=$EPOCHREALTIME
  if ! "$geotb" run "$scenario" --out "$out/run" --checkpoint-dir "$out/checkpoints" > "$out/run.log" 2>&1; then
    cat "$out/run.log"
    echo "check.sh: geotb run $scenario failed (log: $out/run.log)" >&2
    exit 1
  fi
  host_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  report=$(ls "$out/run"/*.json)
  rc=0
  "$geotb" check "$report" --baseline "$baseline" | tee "$out/check.txt" || rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then
    printf 'check.sh: PASS (%s against %s; replay took %s s of host time)\n' "$name" "$baseline" "$host_s"
  else
    echo "check.sh: FAIL ($name against $baseline, exit $rc); reports in $out" >&2
    if [ "$rc" -gt "$worst" ]; then worst=$rc; fi
  fi
done
exit "$worst"
