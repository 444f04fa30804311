#!/usr/bin/env bash
# Installs what is missing (ci/install-deps.sh), configures build/ once, and builds it (-j2: the
# machines here have 2 cores and libtorch translation units take ~1.3 GB each).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# GEOTB_UNITY=1 (CI: .ci/run): a fresh build/ is a Meson unity build (each target's files compiled 4
# to a translation unit, the headers parsed once per 4 files): measured 2026-12-03, fresh, -j2:
# 121 jobs, 805 s of jobs, 6 min 49 s wall; every suite passed on it (42, the gpu one skipped).
# Same sources and tests; a developer's build/ stays per file, so that an edit recompiles one file.
unity=()
if [ "${GEOTB_UNITY:-0}" = 1 ]; then unity=(-Dunity=on); fi
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release "${unity[@]}"
fi
ninja -C build -j"${GEOTB_JOBS:-2}"
# geotb_torch (python/, docs/guide/comm-hook.md): the guide's one install command, pip into the
# system's Python 3 (Debian's, with python3-torch), whenever its sources changed since the last
# install (~50 s: the C++ extension). The tests use the meson build's copy in build/python.
if [ -f build/python/geotb_torch.stamp ]; then
  sum=$(cat python/setup.py python/geotb_torch/*.py python/geotb_torch/csrc/*.cc kernels/*.h kernels/*.cc \
        kernels/cpu/*.cc | sha256sum | cut -c1-64)
  if [ "$(cat build/python/installed.sha256 2>/dev/null)" != "$sum" ]; then
    user=()
    [ "$(id -u)" -eq 0 ] || user=(--user)
    MAX_JOBS="${GEOTB_JOBS:-2}" /usr/bin/python3 -m pip install -q --no-build-isolation --break-system-packages \
      --no-deps "${user[@]}" ./python && echo "$sum" > build/python/installed.sha256
  fi
fi
