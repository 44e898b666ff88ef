#!/usr/bin/env bash
# What bounds each homodyne kernel pass (static and laminar_flow, χ² and χ² + JᵀJ + Jᵀr; 23
# angles × 1000 frames, one pinned thread), without hardware counters:
#   1. the point-loop copies compiled to assembly with llvm-mca's region markers
#      (-DHOMODYNE_MCA_MARKERS, the build's own flags for src/model), each pass's loop body
#      given to llvm-mca and counted against a Zen 5 port model (bench/kernel_bounds.py);
#   2. bench_kernel's BM_Ceiling* and BM_Bound* (CPU time per point, the core clock by a
#      dependent-add chain, the point loop alone from cache) and bench_kernel_standins'
#      BM_BoundPass (the direct columns' sines replaced by a multiply);
#   3. kernel_bounds.py combines them into docs/bench/kernel_bounds_<date>.json, the roofline
#      from the ceilings of a quiet run (QUIET_CEILINGS, a run_kernel_bench.sh summary; the
#      wall-clock ceilings of a loaded host measure its load).
#   bash bench/run_kernel_bounds.sh [build dir] [output dir]       (BENCH_STAMP as lib.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(sed -n 's/^CXX_FLAGS = //p' "$build/src/CMakeFiles/homodyne_model.dir/flags.make")
includes=$(sed -n 's/^CXX_INCLUDES = //p' "$build/src/CMakeFiles/homodyne_model.dir/flags.make")
defines=$(sed -n 's/^CXX_DEFINES = //p' "$build/src/CMakeFiles/homodyne_model.dir/flags.make")
for copy in avx512 avx2; do
  # shellcheck disable=SC2086  # the flags are lists
  c++ $defines $includes $flags -DHOMODYNE_MCA_MARKERS -S -o "$tmp/$copy.s" \
    "$root/src/model/point_terms_$copy.cpp"
done
"$build/bench/bench_kernel" --benchmark_filter='^BM_(Ceiling|Bound)' \
  --benchmark_out="$tmp/bench.json" --benchmark_out_format=json
"$build/bench/bench_kernel_standins" --benchmark_filter='^BM_BoundPass' \
  --benchmark_out="$tmp/standins.json" --benchmark_out_format=json
cp "$tmp/bench.json" "$out/kernel_bounds_${stamp}_bench.json"
cp "$tmp/standins.json" "$out/kernel_bounds_${stamp}_standins.json"
python3 "$root/bench/kernel_bounds.py" "$out/kernel_bounds_${stamp}.json" "$tmp/bench.json" \
  "$tmp/standins.json" "${QUIET_CEILINGS:-$root/docs/bench/kernel_2026-11-27d_summary.json}" \
  "$tmp/avx512.s" "$tmp/avx2.s"
