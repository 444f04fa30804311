#!/usr/bin/env bash
# Bounded libFuzzer run of the compression wire decoder (kernels/fuzz/fuzz_decoder.cc).
# Usage: ci/fuzz.sh [RUNS] [WORKDIR]     RUNS default 1000000 executions; WORKDIR default build-fuzz
# Builds with clang (-fsanitize=fuzzer,address,undefined), seeds a corpus with valid messages of
# every shape, runs RUNS executions, fails on any crash, sanitizer report or leak.
set -euo pipefail
RUNS=${1:-1000000}
WORK=${2:-build-fuzz}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${FUZZ_CXX:-clang++}
mkdir -p "$WORK/corpus" "$WORK/artifacts"
SRCS=("$ROOT"/kernels/index_coding.cc "$ROOT"/kernels/validate.cc "$ROOT"/kernels/wire_format.cc
      "$ROOT"/kernels/cpu/compress_ef.cc "$ROOT"/kernels/cpu/decompress_add.cc "$ROOT"/kernels/cpu/ef_pass.cc
      "$ROOT"/kernels/cpu/quantize.cc "$ROOT"/kernels/cpu/topk.cc)
FLAGS=(-std=c++20 -O2 -g -I"$ROOT" -ffp-contract=off)
echo "fuzz: building with $($CXX --version | head -1)"
$CXX "${FLAGS[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all \
  -o "$WORK/make_seeds" "$ROOT/kernels/fuzz/make_seeds.cc" "${SRCS[@]}" -lz
$CXX "${FLAGS[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -o "$WORK/fuzz_decoder" "$ROOT/kernels/fuzz/fuzz_decoder.cc" "${SRCS[@]}" -lz
"$WORK/make_seeds" "$WORK/corpus"
start=$(date +%s)
set +e
"$WORK/fuzz_decoder" -runs="$RUNS" -seed=1 -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$WORK/artifacts/" "$WORK/corpus" > "$WORK/fuzz.log" 2>&1
status=$?
set -e
grep -E '^(#[0-9]+ +(INITED|DONE)|stat::|==[0-9]+== ?ERROR|SUMMARY)' "$WORK/fuzz.log" || true
end=$(date +%s)
execs=$(grep -E '^stat::number_of_executed_units' "$WORK/fuzz.log" | awk '{print $2}')
echo "fuzz: exit ${status}, ${execs:-?} executions in $((end - start)) s"
if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED; crash inputs in $WORK/artifacts/"; tail -40 "$WORK/fuzz.log"; exit 1
fi
if [ -z "${execs}" ] || [ "${execs}" -lt "$RUNS" ]; then
  echo "fuzz: FAILED: expected ${RUNS} executions"; exit 1
fi
