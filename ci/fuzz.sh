#!/usr/bin/env bash
# Bounded libFuzzer runs of every reader of untrusted bytes (docs/measurements/fuzzing.md):
#   decoder      the compression wire decoder            kernels/fuzz/fuzz_decoder.cc
#   qsgd         the QSGD wire decoder and encoder       kernels/fuzz/fuzz_qsgd.cc
#   scenario     the scenario parser                     tests/fuzz/fuzz_scenario.cc
#   checkpoint   the checkpoint rank file and manifest   tests/fuzz/fuzz_checkpoint.cc
#   rank_file    the rank file (`geotb worker --out`)    tests/fuzz/fuzz_rank_file.cc
#   exec_report  the exec report (+ GEOTB_METRIC lines)  tests/fuzz/fuzz_exec_report.cc
#   run_report   the run report and baselines            tests/fuzz/fuzz_run_report.cc
# Usage: ci/fuzz.sh [RUNS] [WORKDIR] [TARGET[=N]...]
#   RUNS     the decoder's executions (default 1000000)
#   WORKDIR  build, corpora and crash inputs (default build-fuzz)
#   TARGET   run only these targets (default: all seven, in the order above); TARGET=N runs N
#            executions. Without =N a file reader (and qsgd) runs its CI count (READER_RUNS below). With
#            RUNS=300000 the six took 61 s on the 2-core VM with the build up to date, ~3 min
#            with the build from nothing (6 min beside another build; docs/measurements/fuzzing.md).
# Builds with clang (-fsanitize=fuzzer,address,undefined; ninja, FUZZ_JOBS parallel jobs, default
# 2, which also run that many targets at once), checks that every file reader accepts its seeds
# (GEOTB_FUZZ_SEED_CHECK, tests/fuzz/fuzz_util.h), replays the inputs of past findings in
# tests/fuzz/regressions/<target>/ (GEOTB_FUZZ_STRICT: an exception not of the reader's own type
# fails too), seeds each corpus (WORKDIR/corpus-<target>, kept between runs), then fuzzes with
# -seed=1 and fails on any crash, sanitizer report, leak, timeout (-timeout=10 s per input) or
# out-of-memory, or on fewer executions than asked. Prints per target "fuzz: <target>: exit S,
# N executions in T s". The scenario target links libtorch: two torch-free functions the scenario
# parser calls (engine::param_count, engine::validate of a ModelConfig) are defined in
# engine/model/torch_learner.cc.
# One target's 1M run from its seeds alone (a fresh WORKDIR: corpora are kept between runs):
#   ci/fuzz.sh 1000000 build-fuzz-1m scenario=1000000
set -euo pipefail
RUNS=${1:-1000000}
WORK=${2:-build-fuzz}
shift $(( $# < 2 ? $# : 2 ))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${FUZZ_CXX:-clang++}
JOBS=${FUZZ_JOBS:-2}
ALL=(decoder qsgd scenario checkpoint rank_file exec_report run_report)
# CI executions of each file reader: 15-22 s each here, two at a time (docs/measurements/fuzzing.md
# has each target's rate).
declare -A READER_RUNS=([qsgd]=300000 [scenario]=50000 [checkpoint]=300000 [rank_file]=80000
                        [exec_report]=60000 [run_report]=20000)
declare -A N=()
SELECTED=()
for arg in "$@"; do
  t=${arg%%=*}
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz: unknown target \"$t\" (one of: ${ALL[*]})"; exit 2; }
  SELECTED+=("$t")
  [[ "$arg" == *=* ]] && N[$t]=${arg#*=}
done
[ ${#SELECTED[@]} -gt 0 ] || SELECTED=("${ALL[@]}")
for t in "${SELECTED[@]}"; do
  if [ -z "${N[$t]:-}" ]; then
    if [ "$t" = decoder ]; then N[$t]=$RUNS; else N[$t]=${READER_RUNS[$t]}; fi
  fi
done
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

# ---- build (ninja: objects shared between targets, rebuilt only when a source or header changed)
KERNELS=(kernels/index_coding.cc kernels/validate.cc kernels/wire_format.cc kernels/cpu/compress_ef.cc
         kernels/cpu/decompress_add.cc kernels/cpu/ef_pass.cc kernels/cpu/qsgd.cc kernels/cpu/quantize.cc
         kernels/cpu/topk.cc kernels/cpu/powersgd.cc)
# The readers and what they call; the scenario parser needs the strategy table, whose descriptors
# name every strategy's factory, hence the strategies, collectives and kernels (linked, not run).
LIB=(common/units.cc common/atomic_file.cc
     model/report.cc model/asynchrony.cc model/faults.cc model/exec_report.cc model/rank_report.cc model/metrics.cc
     model/report_error.cc model/json_fields.cc model/json_file.cc model/hardware.cc model/represented.cc
     engine/checkpoint/file.cc engine/checkpoint/state.cc
     harness/network_mode.cc harness/scenario.cc harness/link_trace.cc engine/strategies/table.cc engine/strategies/descriptor.cc
     engine/strategies/adaptive_k.cc engine/strategies/async_ef_topk_int8.cc engine/strategies/drift_control.cc engine/data/global_batch.cc
     engine/strategies/dc_exchange.cc engine/strategies/ddp_buckets.cc engine/strategies/diloco.cc
     engine/strategies/hier_ef_topk_int8.cc engine/strategies/lan_ddp.cc engine/strategies/local_sgd.cc
     engine/strategies/naive_ddp.cc engine/strategies/powersgd.cc engine/strategies/qsgd.cc engine/collectives/gloo_ring.cc
     engine/collectives/buckets.cc engine/collectives/ring_allreduce.cc engine/optim/sgd.cc engine/transport/tags.cc
     engine/compute_charge.cc emulator/inproc/fibers.cc engine/faults/estimate.cc engine/faults/quorum.cc engine/data/fashion_mnist.cc)
LIBS="-lfmt -lcrypto -lz -lpthread -lboost_context"
obj() { echo "obj/${1%.cc}.o"; }
{
  echo "root = $ROOT"
  echo "cxx = $CXX"
  echo "flags = -std=c++20 -O2 -g -I\$root -ffp-contract=off -DGEOTB_SCENARIO_DIR='\"$ROOT/scenarios\"'"
  echo "san = -fsanitize=address,undefined -fno-sanitize-recover=all"
  cat <<'EOF'
rule cc
  command = $cxx $flags $san -fsanitize=fuzzer-no-link -MMD -MF $out.d -c $in -o $out
  depfile = $out.d
  deps = gcc
  description = CXX $in
rule cc_plain
  command = $cxx $flags $san -MMD -MF $out.d -c $in -o $out
  depfile = $out.d
  deps = gcc
  description = CXX $in
# libtorch 1.13's headers do not compile with clang 14 in C++20 mode; not instrumented (the
# parser runs two of its functions, both plain arithmetic on a ModelConfig).
rule cc_torch
  command = $cxx -std=c++17 -O1 -I$root -isystem /usr/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=1 -MMD -MF $out.d -c $in -o $out
  depfile = $out.d
  deps = gcc
  description = CXX $in (libtorch, C++17, uninstrumented)
rule ar
  command = rm -f $out && ar crs $out $in
  description = AR $out
rule fuzz
  command = $cxx $flags $san -fsanitize=fuzzer -o $out $in $libs
  description = LINK $out
rule tool
  command = $cxx $flags $san -o $out $in $libs
  description = LINK $out
EOF
  for s in "${KERNELS[@]}" "${LIB[@]}" tests/fuzz/fuzz_{scenario,checkpoint,rank_file,exec_report,run_report}.cc \
           kernels/fuzz/fuzz_decoder.cc kernels/fuzz/fuzz_qsgd.cc; do
    echo "build $(obj "$s"): cc \$root/$s"
  done
  for s in kernels/fuzz/make_seeds.cc kernels/fuzz/make_qsgd_seeds.cc tests/fuzz/make_seeds.cc; do
    echo "build $(obj "$s"): cc_plain \$root/$s"
  done
  echo "build $(obj engine/model/torch_learner.cc): cc_torch \$root/engine/model/torch_learner.cc"
  echo "build libkernels.a: ar $(for s in "${KERNELS[@]}"; do obj "$s"; done | tr '\n' ' ')"
  echo "build libreaders.a: ar $(for s in "${LIB[@]}"; do obj "$s"; done | tr '\n' ' ')"
  echo "build fuzz_decoder: fuzz $(obj kernels/fuzz/fuzz_decoder.cc) libkernels.a"
  echo "  libs = -lz"
  # The seed writers are plain programs (no libFuzzer main); instrumented objects link into them.
  echo "build make_decoder_seeds: tool $(obj kernels/fuzz/make_seeds.cc) libkernels.a"
  echo "  libs = -lz"
  echo "build fuzz_qsgd: fuzz $(obj kernels/fuzz/fuzz_qsgd.cc) libkernels.a"
  echo "  libs = -lz"
  echo "build make_qsgd_seeds: tool $(obj kernels/fuzz/make_qsgd_seeds.cc) libkernels.a"
  echo "  libs = -lz"
  echo "build fuzz_scenario: fuzz $(obj tests/fuzz/fuzz_scenario.cc) $(obj engine/model/torch_learner.cc) libreaders.a libkernels.a"
  echo "  libs = -ltorch_cpu -lc10 $LIBS"
  for t in checkpoint rank_file exec_report run_report; do
    echo "build fuzz_$t: fuzz $(obj "tests/fuzz/fuzz_$t.cc") libreaders.a"
    echo "  libs = $LIBS"
  done
  echo "build make_checkpoint_seeds: tool $(obj tests/fuzz/make_seeds.cc) libreaders.a"
  echo "  libs = $LIBS"
} > "$WORK/build.ninja.new"
cmp -s "$WORK/build.ninja.new" "$WORK/build.ninja" || mv "$WORK/build.ninja.new" "$WORK/build.ninja"
rm -f "$WORK/build.ninja.new"
# Only what the selected targets need.
BINS=()
for t in "${SELECTED[@]}"; do
  BINS+=("fuzz_$t")
  [ "$t" = decoder ] && BINS+=(make_decoder_seeds)
  [ "$t" = qsgd ] && BINS+=(make_qsgd_seeds)
  [ "$t" = checkpoint ] && BINS+=(make_checkpoint_seeds)
done
echo "fuzz: building ${SELECTED[*]} with $($CXX --version | head -1)"
b0=$(date +%s)
ninja -C "$WORK" -j "$JOBS" "${BINS[@]}" > "$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
b1=$(date +%s)
echo "fuzz: build took $((b1 - b0)) s"

# ---- seeds: committed files, files of the repository, and what make_seeds writes
seeds() {  # target dir: the seed files of `target` into dir
  local t=$1 d=$2
  mkdir -p "$d"
  case $t in
    decoder) "$WORK/make_decoder_seeds" "$d" > /dev/null ;;
    qsgd) "$WORK/make_qsgd_seeds" "$d" > /dev/null ;;
    scenario) cp "$ROOT"/scenarios/*.json "$d/" ;;
    checkpoint) cp "$ROOT"/tests/fuzz/seeds/checkpoint/* "$d/"; "$WORK/make_checkpoint_seeds" synth "$d" ;;
    rank_file) cp "$ROOT"/tests/fuzz/seeds/rank_file/* "$d/" ;;
    exec_report) cp "$ROOT"/tests/fuzz/seeds/exec_report/* "$d/" ;;
    run_report)
      cp "$ROOT"/reports/baselines/*.json "$d/"
      # The same with every array cut to its first two elements: small inputs, faster runs.
      for f in "$ROOT"/reports/baselines/*.json; do
        python3 -c '
import json, sys
def cut(v):
    if isinstance(v, list): return [cut(x) for x in v[:2]]
    if isinstance(v, dict): return {k: cut(x) for k, x in v.items()}
    return v
json.dump(cut(json.load(open(sys.argv[1]))), sys.stdout, separators=(",", ":"))' "$f" > "$d/cut-$(basename "$f")"
      done ;;
  esac
}
# -max_len: the largest seed, or 4096 where they are smaller.
max_len() { local m; m=$(find "$1" -type f -printf '%s\n' | sort -n | tail -1); echo $(( ${m:-0} > 4096 ? m : 4096 )); }

run_target() {  # target: writes $WORK/<target>.result ("status executions seconds") and its logs
  local t=$1 n=${N[$1]} seeddir="$WORK/seeds-$1" corpus="$WORK/corpus-$1" log="$WORK/fuzz-$1.log"
  local bin="$WORK/fuzz_$t" status=0 execs start end
  rm -rf "$seeddir" "$log"
  if ! seeds "$t" "$seeddir" || [ -z "$(ls -A "$seeddir")" ]; then
    echo "fuzz: $t: cannot write its seeds"; echo "$t 1 0 0" > "$WORK/$t.result"; return
  fi
  mkdir -p "$corpus" "$WORK/artifacts-$t"
  if [ "$t" != decoder ] && [ "$t" != qsgd ]; then  # the kernels' targets: seeds written by the encoder
    if ! GEOTB_FUZZ_SEED_CHECK=1 "$bin" "$seeddir"/* > "$WORK/seedcheck-$t.log" 2>&1; then
      echo "fuzz: $t: a seed is rejected by the reader (GEOTB_FUZZ_SEED_CHECK):"
      grep -E '^(fuzz: |Running: )' "$WORK/seedcheck-$t.log" | tail -4
      echo "$t 1 0 0" > "$WORK/$t.result"; return
    fi
  fi
  local reg="$ROOT/tests/fuzz/regressions/$t"
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    if ! GEOTB_FUZZ_STRICT=1 "$bin" "$reg"/* > "$WORK/regressions-$t.log" 2>&1; then
      echo "fuzz: $t: a regression input fails again:"; tail -30 "$WORK/regressions-$t.log"
      echo "$t 1 0 0" > "$WORK/$t.result"; return
    fi
  fi
  cp "$seeddir"/* "$corpus/"
  start=$(date +%s.%N)
  local kernel=0
  { [ "$t" = decoder ] || [ "$t" = qsgd ]; } && kernel=1
  "$bin" -runs="$n" -seed=1 -max_len="$( [ $kernel = 1 ] && echo 4096 || max_len "$seeddir")" \
    $( [ $kernel = 1 ] || echo -timeout=10 ) -print_final_stats=1 \
    -artifact_prefix="$WORK/artifacts-$t/" "$corpus" > "$log" 2>&1 || status=$?
  end=$(date +%s.%N)
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  echo "$t $status ${execs:-0} $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')" > "$WORK/$t.result"
}

# ---- run: up to JOBS targets at once, results in the order above
for t in "${SELECTED[@]}"; do
  rm -f "$WORK/$t.result"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  run_target "$t" &
done
wait
failed=0
for t in "${SELECTED[@]}"; do
  read -r _ status execs secs < "$WORK/$t.result" || { status=1; execs=0; secs=0; }
  grep -hE '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|==[0-9]+== ?ERROR|SUMMARY)' \
    "$WORK/fuzz-$t.log" 2>/dev/null | sed "s/^/fuzz: $t: /" || true
  echo "fuzz: $t: exit ${status}, ${execs} executions in ${secs} s"
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t: FAILED; crash inputs in $WORK/artifacts-$t/"; tail -40 "$WORK/fuzz-$t.log" 2>/dev/null || true
    failed=1
  elif [ "$execs" -lt "${N[$t]}" ]; then
    echo "fuzz: $t: FAILED: expected ${N[$t]} executions"; failed=1
  fi
done
echo "fuzz: ${#SELECTED[@]} target(s) in $(( $(date +%s) - b1 )) s after the build ($(( $(date +%s) - b0 )) s in all)"
exit $failed
