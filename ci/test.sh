#!/usr/bin/env bash
# README command (b): build, then run every test suite that this machine can run.
# unit + e2e always; dpdk + fidelity need root (namespaces, veth); gpu skips without a device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
suites=(--suite unit --suite e2e --suite gpu)
if [ "$(id -u)" -eq 0 ]; then
  suites+=(--suite dpdk --suite fidelity)
else
  echo "test.sh: not root: skipping the dpdk and fidelity suites (they need network namespaces)"
fi
meson test -C build --print-errorlogs --num-processes 1 "${suites[@]}"
# Bounded libFuzzer run of the compression wire decoder (ci/fuzz.sh; 1M executions took 81 s here).
bash ci/fuzz.sh "${GEOTB_FUZZ_RUNS:-300000}" build-fuzz
# The regression gate: replay a short scenario and compare with its committed baseline.
bash ci/check.sh
