#!/usr/bin/env bash
# Installs what is missing (ci/install-deps.sh), configures build/ once, and builds it (-j2: the
# machines here have 2 cores and libtorch translation units take ~1.3 GB each).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build -j"${GEOTB_JOBS:-2}"
