#!/usr/bin/env bash
# README command (a): replay one scenario (default scenarios/beijing-ningxia.json), installing
# and building whatever is missing first. Extra arguments go to `geotb run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-scenarios/beijing-ningxia.json}"
shift || true
bash ci/build.sh
exec ./build/harness/geotb run "$scenario" "$@"
