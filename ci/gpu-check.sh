#!/usr/bin/env bash
# GPU check, for machines with an NVIDIA GPU (H100/H200 by default).
# Usage: ci/gpu-check.sh OUTDIR
# Two stages, chosen by GEOTB_GPU_STAGES (default "kernels engine"):
#
# kernels: the CUDA compression kernels. Builds them (meson -Dcuda=enabled; needs the packages of
# ci/install-deps.sh and nvcc), runs the 'gpu' suite (CUDA vs CPU bit for bit on the CPU suite's
# vectors), the GPU benchmarks (ours vs a device-to-device copy of the same bytes) and torch.topk on
# CUDA where Python torch with CUDA is present; writes into OUTDIR:
#   env.json               git revision, nvcc, nvidia-smi, build dir
#   gpu_tests.json         gtest JSON of the gpu suite
#   gpu_bench.json         Google Benchmark JSON (counters: vs_device_copy)
#   torch_topk_cuda.json   torch.topk reference (or why it was not measured)
#   summary.json           per size/density: ours, device copy, torch.topk rates and the ratios
#
# engine: geotb against the machine's CUDA PyTorch (meson -Dtorch_dir=<python3's torch>, CUDA kernels
# on), then on the GPU: `geotb calibrate` for tiny's and beijing-ningxia's models (with a Llama-3-8B-
# wide transformer block), tiny replayed on the CPU and on the GPU with the same calibrated profile and
# seed, and beijing-ningxia (2 sites) on the GPU and the CPU. Writes OUTDIR/engine/ (profiles, reports,
# logs) and prints a summary (accuracy CPU vs GPU, replica spread, the device context).
# GEOTB_GPU_PROFILE=1 adds Nsight Compute's per-kernel durations of compress 64M and 1M at 1 % (kernels stage).
# GEOTB_GPU_SANITIZE=1 adds compute-sanitizer (memcheck, racecheck, synccheck) on the gpu suite's small cases.
# GEOTB_GPU_ENGINE_DEPS=DIR: a folder with debs/ (Debian's libboost-context 1.74, libgloo-dev, pkgconf)
# and fashion-mnist/ (the dataset's four .gz files), for GPU machines without them.
#
# Budget: 8 minutes in all (each step has its own timeout). Exit status: non-zero if a build or the
# gpu suite fails; a missing device is reported as "not measured" with exit 0.
#
# GPU machines rarely have this project's Debian packages. When Meson cannot configure there, the
# kernels stage compiles the two GPU binaries directly with g++ and nvcc (the same sources and flags as
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
deadline=$(( $(date +%s) + ${GEOTB_GPU_BUDGET:-480} ))
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

STAGES=${GEOTB_GPU_STAGES:-kernels engine}
kernels_rc=0
engine_rc=0

kernels_stage() {
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
    for f in compress_ef decompress_add device_buffer wire_device; do
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
        >> "$OUT/build.log" 2>&1 || { echo "gpu-check: build failed"; tail -30 "$OUT/build.log"; return 1; }
      built=1
    else
      echo "gpu-check: meson setup failed (tail of build.log below); building directly with g++ and nvcc"
      tail -5 "$OUT/build.log"
    fi
  fi
  if [ $built -eq 0 ]; then
    build_direct >> "$OUT/build.log" 2>&1 || { echo "gpu-check: direct build failed"; tail -30 "$OUT/build.log"; return 1; }
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

  # GEOTB_GPU_PROFILE=1: each kernel's duration in compress at 64M and 1M, 1 % (Nsight Compute, ~40 s each),
  # to split a call's wall time into device work and the rest.
  if [ "${GEOTB_GPU_PROFILE:-0}" = 1 ] && command -v ncu >/dev/null && [ "$(left)" -gt 75 ]; then
    local n tag
    for n in 67108864:64M 1048576:1M; do
      tag=${n#*:}; n=${n%%:*}
      echo "gpu-check: ncu on compress $tag 1% ($(left) s left)"
      timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 40 --launch-count 80 \
        "$BUILD/bench/kernels/bench_kernels_cuda" --benchmark_filter="BM_GpuCompress/$n/10000" \
        > "$OUT/ncu_compress_${tag}_1pct.csv" 2>> "$OUT/ncu.log" || echo "gpu-check: ncu failed (see ncu.log)"
    done
  fi

  echo "gpu-check: torch.topk on CUDA ($(left) s left)"
  timeout $(( $(left) > 60 ? 60 : $(left) )) python3 "$ROOT/bench/kernels/torch_topk_cuda.py" "$OUT/torch_topk_cuda.json" \
    || echo '{"available": false, "reason": "python3/torch failed or timed out", "results": []}' > "$OUT/torch_topk_cuda.json"

  # GEOTB_GPU_SANITIZE=1: compute-sanitizer's memcheck, racecheck and synccheck on the tests that
  # reach every kernel (small vectors: the tools slow a kernel down 10-100x). Logs in OUTDIR.
  if [ "${GEOTB_GPU_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    # BitIdentical/201, 258, 275, 289: 100003, 300007 and 4M elements, sampled thresholds and exact.
    local tool filter='Gpu.BlockSizesAndTies:Gpu.FallbackPathMatches:Gpu.RejectsNonFiniteAndCorruptInput'
    filter+=':*BitIdentical/1:*BitIdentical/201:*BitIdentical/258:*BitIdentical/275:*BitIdentical/289'
    for tool in memcheck racecheck synccheck; do
      [ "$(left)" -gt 45 ] || { echo "gpu-check: no time left for compute-sanitizer $tool"; break; }
      echo "gpu-check: compute-sanitizer $tool ($(left) s left)"
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
        "$BUILD/tests/kernels/kernels_gpu_tests" --gtest_filter="$filter" > "$OUT/sanitizer_$tool.log" 2>&1
      echo "gpu-check: compute-sanitizer $tool exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer_$tool.log") clean summaries)"
      tail -2 "$OUT/sanitizer_$tool.log"
    done
  fi

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
        r = {"op": parts[0][len("BM_Gpu"):].lower(), "n": n, "ppm": ppm, "items_per_second": b["items_per_second"],
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
  [ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ]
}

engine_stage() {
  local EB=$ROOT/build-gpu-engine E=$OUT/engine T deps=${GEOTB_GPU_ENGINE_DEPS:-}
  mkdir -p "$E"
  T=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))') || { echo "engine: no python3 torch"; return 1; }
  if [ -n "$deps" ]; then
    rm -rf /tmp/geotb-boost /tmp/geotb-gloo /tmp/geotb-pc
    mkdir -p /tmp/geotb-boost /tmp/geotb-gloo /tmp/geotb-pc
    for f in "$deps"/debs/libboost*.deb; do dpkg -x "$f" /tmp/geotb-boost; done
    cp -a /tmp/geotb-boost/usr/lib/x86_64-linux-gnu/libboost_context* /tmp/geotb-boost/usr/lib/
    export BOOST_ROOT=/tmp/geotb-boost/usr
    export LD_LIBRARY_PATH=/tmp/geotb-boost/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    dpkg -x "$deps"/debs/libgloo-dev_*.deb /tmp/geotb-gloo
    export CPLUS_INCLUDE_PATH=/tmp/geotb-gloo/usr/include
    if ! command -v pkg-config >/dev/null; then
      for f in "$deps"/debs/*pkgconf*.deb; do dpkg -x "$f" /tmp/geotb-pc; done
      export PKG_CONFIG=/tmp/geotb-pc/usr/bin/pkgconf LD_LIBRARY_PATH=/tmp/geotb-pc/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
    fi
    if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
      mkdir -p /usr/share/datasets && cp -r "$deps/fashion-mnist" /usr/share/datasets/
    fi
  fi
  echo "gpu-check: engine: configure + build against $T ($(left) s left)"
  # With the unit tests where the machine has gtest and gmock, else without them.
  if [ ! -f "$EB/build.ninja" ]; then
    timeout "$(left)" meson setup "$EB" "$ROOT" -Dtorch_dir="$T" -Dcuda=enabled -Ddpdk=disabled -Dtests=true \
      > "$E/build.log" 2>&1 \
      || { rm -rf "$EB"; timeout "$(left)" meson setup "$EB" "$ROOT" -Dtorch_dir="$T" -Dcuda=enabled -Ddpdk=disabled \
             -Dtests=false >> "$E/build.log" 2>&1; } \
      || { echo "engine: meson setup failed"; tail -40 "$E/build.log"; return 1; }
  fi
  local targets=(harness/geotb) G=$EB/harness/geotb rc=0
  grep -q "tests/unit/engine_gpu_tests:" "$EB/build.ninja" && targets+=(tests/unit/engine_gpu_tests)
  timeout "$(left)" ninja -C "$EB" "${targets[@]}" >> "$E/build.log" 2>&1 \
    || { echo "engine: build failed"; grep -m5 -B2 -A12 "error" "$E/build.log" | head -80; tail -20 "$E/build.log"; return 1; }
  if [ -x "$EB/tests/unit/engine_gpu_tests" ]; then  # the GPU replica against the CPU's
    echo "gpu-check: engine: the engine's gpu tests ($(left) s left)"
    timeout 120 "$EB/tests/unit/engine_gpu_tests" --gtest_output=json:"$E/device_tests.json" \
      > "$E/device_tests.log" 2>&1 || rc=1
    tail -4 "$E/device_tests.log"
  fi
  echo "gpu-check: engine: calibrate ($(left) s left)"
  timeout 120 "$G" calibrate "$ROOT/scenarios/tiny.json" --device cuda --out "$E/calibrate-tiny.json" \
    > "$E/calibrate-tiny.log" 2>&1; cat "$E/calibrate-tiny.log" | head -12
  timeout 90 "$G" calibrate "$ROOT/scenarios/beijing-ningxia.json" --device cuda --no-block --compress-elements 67108864 \
    --out "$E/calibrate-bn.json" > "$E/calibrate-bn.log" 2>&1; head -8 "$E/calibrate-bn.log"
  timeout 60 "$G" calibrate "$ROOT/scenarios/tiny.json" --device cpu --no-block --reps 20 --out "$E/calibrate-tiny-cpu.json" \
    > "$E/calibrate-tiny-cpu.log" 2>&1; head -6 "$E/calibrate-tiny-cpu.log"
  [ -f "$E/calibrate-tiny.json" ] || { echo "engine: calibrate failed"; return 1; }
  # tiny with the calibrated profile, on the CPU and on the GPU: the same virtual schedule, so only
  # the arithmetic differs.
  python3 - "$ROOT/scenarios/tiny.json" "$E" <<'PYV'
import json, sys
src, e = sys.argv[1], sys.argv[2]
s = json.load(open(src))
s["compute"] = {"calibrated": e + "/calibrate-tiny.json"}
s["clock"] = "virtual"
for dev in ("cpu", "cuda"):
    v = json.loads(json.dumps(s)); v["name"] = "tiny-" + dev; v["workload"]["device"] = dev
    json.dump(v, open(e + "/tiny-" + dev + ".json", "w"), indent=1)
PYV
  echo "gpu-check: engine: replays ($(left) s left)"
  for dev in cpu cuda; do
    timeout 150 "$G" run "$E/tiny-$dev.json" --out "$E/reports-tiny-$dev" > "$E/run-tiny-$dev.log" 2>&1 || rc=1
    tail -6 "$E/run-tiny-$dev.log"
  done
  for dev in cuda cpu; do
    [ "$(left)" -gt 60 ] || break
    timeout $(( $(left) - 30 )) "$G" run "$ROOT/scenarios/beijing-ningxia.json" --device $dev --out "$E/reports-bn-$dev" \
      > "$E/run-bn-$dev.log" 2>&1 || rc=1
    tail -6 "$E/run-bn-$dev.log"
  done
  python3 - "$E" <<'PYS'
import glob, json, os, sys
e = sys.argv[1]
out = {}
for name in ("tiny-cpu", "tiny-cuda", "bn-cpu", "bn-cuda"):
    reps = sorted(glob.glob(os.path.join(e, "reports-" + name, "*.json")))
    if not reps: continue
    r = json.load(open(reps[-1]))
    out[name] = {"device": r["context"].get("device"), "clock": r["context"].get("clock"),
                 "strategies": {s["name"]: {"final_test_accuracy": s["metrics"]["final_test_accuracy"],
                                            "replica_max_abs_diff": s["metrics"]["replica_max_abs_diff"],
                                            "samples_per_s": s["metrics"]["samples_per_s"],
                                            "final_weights_sha256": s["final_weights_sha256"]}
                                for s in r["strategies"]}}
json.dump(out, open(os.path.join(e, "summary.json"), "w"), indent=1)
print(json.dumps(out, indent=1))
PYS
  return $rc
}

case " $STAGES " in *" kernels "*) kernels_stage || kernels_rc=1 ;; esac
case " $STAGES " in *" engine "*) engine_stage || engine_rc=1 ;; esac
echo "gpu-check: done, $(left) s of the budget left; results in $OUT"
[ $kernels_rc -eq 0 ] && [ $engine_rc -eq 0 ]
