#!/usr/bin/env bash
# The regression gate (README "Comparing and gating"): replays a short scenario (default
# scenarios/us-east-us-west.json, a few seconds) with the built geotb and runs
# `geotb check` on the report against reports/baselines/<scenario>.json.
#   ci/check.sh [scenario.json]        exit 0 pass, 1 regression, 2 bad input / nothing built
# Reports and the check table stay in $GEOTB_BUILD/check/ (default build/check/) for inspection.
# No retry: the gate's scenario runs on the virtual clock with a declared compute profile, so
# every figure it compares is a function of the scenario (README "Clocks"): the same on any host,
# under any load, and the baseline's 2 % throughput tolerance is room for deliberate changes only.
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
echo "check.sh: geotb run $scenario"
if ! "$geotb" run "$scenario" --out "$out/run" > "$out/run.log" 2>&1; then
  cat "$out/run.log"
  echo "check.sh: geotb run failed (log: $out/run.log)" >&2
  exit 1
fi
report=$(ls "$out/run"/*.json)
rc=0
"$geotb" check "$report" --baseline "$baseline" | tee "$out/check.txt" || rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ]; then
  echo "check.sh: PASS ($name against $baseline)"
else
  echo "check.sh: FAIL ($name against $baseline, exit $rc); reports in $out" >&2
fi
exit "$rc"
