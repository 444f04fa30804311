#!/usr/bin/env bash
# Installs every system package geotb needs on Debian 12 (non-interactive, idempotent).
# Usage: ci/install-deps.sh            (as root, or with sudo available)
set -euo pipefail

PKGS=(
  # build
  meson ninja-build pkg-config g++ clang
  # libraries (README "Dependencies" says why each is there)
  nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev zlib1g-dev libboost-context-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libgloo-dev libopenblas0-openmp
  dpdk-dev libdpdk-dev libpcap-dev
  # data
  dataset-fashion-mnist
  # network emulation and tests
  iproute2 ethtool iputils-ping iperf3
  python3 python3-jsonschema
  # the PyTorch job of docs/guide/exec.md (examples/, run by the doc tests as root), and torch's
  # powerSGD_hook for tests/unit/powersgd_torch_test.cc (python3-numpy comes with it)
  python3-torch
  # geotb_torch (python/), the DDP communication hook: its C++ extension's build
  python3-dev python3-setuptools pybind11-dev python3-pip
  # the compare report's browser test (headless rendering + screenshot analysis)
  chromium python3-pil
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
