#!/usr/bin/env bash
# The regression gate (README "Comparing and gating"): replays a short scenario (default
# scenarios/us-east-us-west.json, ~30 s on 2 cores) with the built geotb and runs
# `geotb check` on the report against reports/baselines/<scenario>.json.
#   ci/check.sh [scenario.json]        exit 0 pass, 1 regression, 2 bad input / nothing built
# Reports and the check table stay in $GEOTB_BUILD/check/ (default build/check/) for inspection.
# One retry: throughput ratios on a shared 2-core machine move by ~15% (more under heavy load),
# so a run that fails is replayed once and the gate fails only if the replay fails too. A real
# regression (say, half the throughput, or more WAN bytes, or lower accuracy: those two are
# deterministic for a seed) fails both.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GEOTB_BUILD:-build}
geotb="$build/harness/geotb"
scenario=${1:-scenarios/us-east-us-west.json}
name=$(basename "$scenario" .json)
baseline="reports/baselines/$name.json"
if [ ! -x "$geotb" ]; then
  echo "check.sh: $geotb not built (run ci/build.sh)" >&2
  exit 2
fi
if [ ! -f "$baseline" ]; then
  echo "check.sh: no baseline $baseline (make one deliberately: geotb check <report> --baseline $baseline --update)" >&2
  exit 2
fi
out="$build/check"
rm -rf "$out"
mkdir -p "$out"
rc=1
for attempt in 1 2; do
  echo "check.sh: attempt $attempt: geotb run $scenario"
  if ! "$geotb" run "$scenario" --out "$out/run-$attempt" > "$out/run-$attempt.log" 2>&1; then
    cat "$out/run-$attempt.log"
    echo "check.sh: geotb run failed (log: $out/run-$attempt.log)" >&2
    exit 1
  fi
  report=$(ls "$out/run-$attempt"/*.json)
  rc=0
  "$geotb" check "$report" --baseline "$baseline" | tee "$out/check-$attempt.txt" || rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 1 ]; then
    break
  fi
  [ "$attempt" -eq 1 ] && echo "check.sh: regression on attempt 1: replaying once to rule out machine noise"
done
if [ "$rc" -eq 0 ]; then
  echo "check.sh: PASS ($name against $baseline)"
else
  echo "check.sh: FAIL ($name against $baseline, exit $rc); reports in $out" >&2
fi
exit "$rc"
