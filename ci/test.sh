#!/usr/bin/env bash
# README command (b): builds, then runs every test suite this machine can run.
#   ci/test.sh           the quick tier: unit, timing, e2e and gpu (skips without a device), dpdk when
#                        root, a bounded fuzz run of the wire decoder, and the regression gate
#   ci/test.sh --full    the quick tier, then the sanitizer builds (ci/sanitizers.sh): what CI runs.
#                        The tests of the suite `asan` then run once, under ASan + UBSan, not
#                        uninstrumented as well (about 215 s less).
# GEOTB_REQUIRE_ALL=1 (.ci/run sets it): a test outside the gpu suite that skips (exit 77, or a
# GoogleTest case calling GTEST_SKIP) fails the run (ci/require_all.py), so a missing tool, package
# or privilege cannot leave CI green with the test not run. As root the dpdk suite is required too.
# The fidelity suite (root; 3 configurations of ~3 min) runs only when asked: GEOTB_FIDELITY=1.
# Measured durations of each stage: docs/dev/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument \"$arg\" (expected --full)" >&2; exit 2 ;;
  esac
done
t0=$EPOCHREALTIME
stage_times=()
stage() {  # stage NAME: prints and records the seconds since the previous stage ended
  local now=$EPOCHREALTIME secs
  secs=$(awk -v a="$t0" -v b="$now" 'BEGIN { printf "%.0f", b - a }')
  echo "test.sh: stage $1 took $secs s"
  stage_times+=("$1 $secs")
  t0=$now
}

bash ci/build.sh
stage build
suites=(--suite unit --suite e2e --suite timing --suite gpu)
# --full: the suite `asan` runs in the sanitizer stage instead (ci/sanitizers.sh), instrumented.
if [ "$full" = 1 ]; then suites+=(--no-suite asan); fi
if [ "$(id -u)" -eq 0 ]; then
  suites+=(--suite dpdk)
  if [ "${GEOTB_FIDELITY:-0}" = 1 ]; then suites+=(--suite fidelity); fi
else
  echo "test.sh: not root: skipping the dpdk suite (it needs network namespaces)"
  if [ "${GEOTB_REQUIRE_ALL:-0}" = 1 ]; then
    echo "test.sh: GEOTB_REQUIRE_ALL=1 but not root: the dpdk suite cannot run" >&2
    exit 1
  fi
fi
meson test -C build --print-errorlogs --num-processes 1 "${suites[@]}"
python3 - build/meson-logs/testlog.json <<'PY'
import collections, json, sys
n = collections.Counter(json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip())
print(f"test.sh: {n['OK'] + n['EXPECTEDFAIL']} passed, {n['FAIL'] + n['TIMEOUT'] + n['ERROR'] + n['UNEXPECTEDPASS']} failed, {n['SKIP']} skipped")
PY
if [ "${GEOTB_REQUIRE_ALL:-0}" = 1 ]; then python3 ci/require_all.py build; fi
stage tests
# Bounded libFuzzer run of the compression wire decoder (ci/fuzz.sh; 1M executions took 81 s here).
bash ci/fuzz.sh "${GEOTB_FUZZ_RUNS:-300000}" build-fuzz
stage fuzz
# The regression gate: replay the gated scenarios and compare with their committed baselines.
bash ci/check.sh
stage gate
# --full: ThreadSanitizer over the torch-free concurrent code, ASan + UBSan over the unit and e2e
# tests (ci/sanitizers.sh; build-tsan and build-asan).
if [ "$full" = 1 ]; then
  bash ci/sanitizers.sh all
  stage sanitizers
fi
total=0
line=""
for s in "${stage_times[@]}"; do
  set -- $s
  line+=" $1 $2 s,"
  total=$((total + $2))
done
echo "test.sh: $([ "$full" = 1 ] && echo "--full" || echo "quick tier") passed in $total s:${line%,}"
