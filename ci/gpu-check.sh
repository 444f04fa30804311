#!/usr/bin/env bash
# GPU check of the compression kernels, for machines with an NVIDIA GPU (H100/H200 by default).
# Usage: ci/gpu-check.sh OUTDIR
# Builds the CUDA path (meson -Dcuda=enabled; needs the packages of ci/install-deps.sh and nvcc),
# runs the 'gpu' suite (CUDA vs CPU bit for bit on the CPU suite's vectors), the GPU benchmarks
# (ours vs a device-to-device copy of the same bytes) and torch.topk on CUDA where Python torch
# with CUDA is present; writes into OUTDIR:
#   env.json               git revision, nvcc, nvidia-smi, build dir
#   gpu_tests.json         gtest JSON of the gpu suite
#   gpu_bench.json         Google Benchmark JSON (counters: vs_device_copy)
#   torch_topk_cuda.json   torch.topk reference (or why it was not measured)
#   summary.json           per size/density: ours, device copy, torch.topk rates and the ratios
# Budget: 8 minutes in all (each step has its own timeout). Exit status: non-zero if the build
# or the gpu suite fails; a missing device is reported as "not measured" with exit 0.
#
# GPU machines rarely have this project's Debian packages. When Meson cannot configure there, the
# script compiles the two GPU binaries directly with g++ and nvcc (the same sources and flags as
# kernels/meson.build: -ffp-contract=off, --fmad=false, sm_90). They need only gtest, Google
# Benchmark and zlib; GEOTB_GPU_DEPS=DIR points at a folder where those Debian packages were
# unpacked with `dpkg -x` (libgtest-dev, libbenchmark-dev, libbenchmark1debian, zlib1g-dev), for
# machines that lack them and cannot install them. GEOTB_GPU_DIRECT=1 forces the direct build.
set -uo pipefail
OUT=${1:?usage: ci/gpu-check.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${GEOTB_GPU_BUILD:-$ROOT/build-gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
deadline=$(( $(date +%s) + 480 ))
left() { echo $(( deadline - $(date +%s) )); }
export PATH=$PATH:/usr/local/cuda/bin

{
  echo "{"
  echo "  \"git\": \"$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)\","
  echo "  \"nvcc\": \"$(nvcc --version 2>/dev/null | tail -1)\","
  echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)\","
  echo "  \"build\": \"$BUILD\""
  echo "}"
} > "$OUT/env.json"

# Direct build: the gpu suite and the GPU benchmark from the kernel sources, without Meson.
build_direct() {
  local b=$BUILD-direct deps=${GEOTB_GPU_DEPS:-} cuda
  cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  mkdir -p "$b/obj"
  local inc=(-I"$ROOT") lib=(-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64")
  if [ -n "$deps" ]; then
    inc+=(-isystem "$deps/usr/include")
    lib+=(-L"$deps/usr/lib/x86_64-linux-gnu" -Wl,-rpath,"$deps/usr/lib/x86_64-linux-gnu")
  fi
  local cxx=(g++ -std=c++20 -O3 -fPIC -ffp-contract=off -pthread "${inc[@]}")
  local gencode=(${GEOTB_CUDA_GENCODE:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90})
  local objs=() pids=() f o
  for f in "$ROOT"/kernels/{index_coding,validate,wire_format}.cc "$ROOT"/kernels/cpu/*.cc; do
    f=${f#"$ROOT"/}; o=$b/obj/$(echo "$f" | tr / _).o; objs+=("$o")
    "${cxx[@]}" -c "$ROOT/$f" -o "$o" & pids+=($!)
  done
  for f in compress_ef decompress_add device_buffer; do
    o=$b/obj/kernels_cuda_$f.cu.o; objs+=("$o")
    nvcc -std=c++20 -O3 --fmad=false -Xcompiler -fPIC -I"$ROOT" "${gencode[@]}" \
      -c "$ROOT/kernels/cuda/$f.cu" -o "$o" & pids+=($!)
  done
  local rc=0 p
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || return 1
  mkdir -p "$b/tests/kernels" "$b/bench/kernels"
  "${cxx[@]}" "$ROOT/tests/gpu/test_gpu_compress.cc" "${objs[@]}" -o "$b/tests/kernels/kernels_gpu_tests" \
    "${lib[@]}" -lgtest -lz -lcudart || return 1
  "${cxx[@]}" "$ROOT/bench/kernels/bench_compress_cuda.cc" "${objs[@]}" -o "$b/bench/kernels/bench_kernels_cuda" \
    "${lib[@]}" -lbenchmark -lz -lcudart || return 1
}

echo "gpu-check: configure + build ($(left) s left)"
built=0
if [ "${GEOTB_GPU_DIRECT:-0}" != 1 ]; then
  if [ -f "$BUILD/build.ninja" ] || timeout "$(left)" meson setup "$BUILD" "$ROOT" -Dcuda=enabled \
       -Dengine=disabled -Ddpdk=disabled > "$OUT/build.log" 2>&1; then
    timeout "$(left)" ninja -C "$BUILD" tests/kernels/kernels_gpu_tests bench/kernels/bench_kernels_cuda \
      >> "$OUT/build.log" 2>&1 || { echo "gpu-check: build failed"; tail -30 "$OUT/build.log"; exit 1; }
    built=1
  else
    echo "gpu-check: meson setup failed (tail of build.log below); building directly with g++ and nvcc"
    tail -5 "$OUT/build.log"
  fi
fi
if [ $built -eq 0 ]; then
  build_direct >> "$OUT/build.log" 2>&1 || { echo "gpu-check: direct build failed"; tail -30 "$OUT/build.log"; exit 1; }
  BUILD=$BUILD-direct
  echo "gpu-check: direct build done"
fi

echo "gpu-check: gpu suite ($(left) s left)"
timeout $(( $(left) > 200 ? 200 : $(left) )) "$BUILD/tests/kernels/kernels_gpu_tests" \
  --gtest_output=json:"$OUT/gpu_tests.json" > "$OUT/gpu_tests.log" 2>&1
tests_rc=$?
tail -3 "$OUT/gpu_tests.log"
if [ $tests_rc -eq 77 ]; then
  echo '{"measured": false, "reason": "no CUDA device"}' > "$OUT/summary.json"
  echo "gpu-check: no CUDA device: GPU tests skipped, GPU numbers not measured"
  exit 0
fi

echo "gpu-check: benchmarks ($(left) s left)"
timeout $(( $(left) > 150 ? 150 : $(left) - 30 )) "$BUILD/bench/kernels/bench_kernels_cuda" \
  --benchmark_out="$OUT/gpu_bench.json" --benchmark_out_format=json > "$OUT/gpu_bench.log" 2>&1
bench_rc=$?
cat "$OUT/gpu_bench.log"

echo "gpu-check: torch.topk on CUDA ($(left) s left)"
timeout $(( $(left) > 60 ? 60 : $(left) )) python3 "$ROOT/bench/kernels/torch_topk_cuda.py" "$OUT/torch_topk_cuda.json" \
  || echo '{"available": false, "reason": "python3/torch failed or timed out", "results": []}' > "$OUT/torch_topk_cuda.json"

python3 - "$OUT" "$tests_rc" "$bench_rc" <<'PY'
import json, os, sys
out, tests_rc, bench_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
bench = load("gpu_bench.json") or {"benchmarks": []}
torch = load("torch_topk_cuda.json") or {"available": False, "results": []}
tref = {(r["n"], r["ppm"]): r["items_per_second"] for r in torch.get("results", [])}
copy = {}
rows = []
for b in bench["benchmarks"]:
    parts = b["name"].split("/")
    if parts[0] == "BM_DeviceCopy":
        copy[int(parts[1])] = b["items_per_second"]
for b in bench["benchmarks"]:
    parts = b["name"].split("/")
    if parts[0] in ("BM_GpuCompress", "BM_GpuDecompress"):
        n, ppm = int(parts[1]), int(parts[2])
        r = {"op": parts[0][5:].lower(), "n": n, "ppm": ppm, "items_per_second": b["items_per_second"],
             "vs_device_copy": b.get("vs_device_copy")}
        if (n, ppm) in tref:
            r["torch_topk_items_per_second"] = tref[(n, ppm)]
            r["vs_torch_topk"] = b["items_per_second"] / tref[(n, ppm)]
        rows.append(r)
target = [r for r in rows if r["op"] == "compress" and r["n"] == 64 << 20]
summary = {"measured": True, "gpu_suite_exit": tests_rc, "bench_exit": bench_rc,
           "torch_topk_cuda": torch.get("available", False), "device_copy_items_per_second": copy,
           "rows": rows,
           "target_gpu_compress_64M_vs_device_copy_ge_0.5": {str(r["ppm"]): r["vs_device_copy"] for r in target}}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
for r in rows:
    print(f'{r["op"]:10s} n={r["n"]:>9d} ppm={r["ppm"]:>6d}  vs_device_copy={r["vs_device_copy"]}  vs_torch_topk={r.get("vs_torch_topk")}')
PY
echo "gpu-check: done in $(( 480 - $(left) )) s; results in $OUT"
[ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ]
