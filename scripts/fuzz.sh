#!/usr/bin/env bash
# Builds one libFuzzer target (clang, ASan + UBSan) in build-fuzz and runs it for a
# bounded time on a scratch copy of its committed seed corpus.
#   scripts/fuzz.sh fuzz_config 600
#   scripts/fuzz.sh fuzz_h5_metadata 600
# New inputs that raise coverage land in build-fuzz/corpus/<target>; crashing inputs in
# build-fuzz/artifacts/<target>/ (copy them to fuzz/corpus/<target>/ with the fix).
# FUZZ_ARGS adds libFuzzer options, e.g. FUZZ_ARGS="-fork=1 -ignore_crashes=1" to keep
# going past crashes inside libhdf5 (see docs/reliability.md) and triage them afterwards.
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HOMODYNE_FUZZ_BUILD_DIR:-$root/build-fuzz}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DHOMODYNE_FUZZ=ON -DHOMODYNE_BUILD_TESTS=OFF \
  -DHOMODYNE_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"${FUZZ_JOBS:-2}" --target "$target"
work=$build/corpus/$target
artifacts=$build/artifacts/$target
mkdir -p "$work" "$artifacts"
cp -n "$root/fuzz/corpus/$target"/* "$work"/ 2>/dev/null || true
# HDF5 keeps some allocations for the life of the process (released by H5close at exit),
# which libFuzzer's per-input leak check reports as leaks; fuzz_h5_metadata checks
# instead that the reader closes every HDF5 object it opens. A corrupt header can also
# make libhdf5 itself ask for an impossible block (e.g. 160 GB in its metadata cache):
# plain malloc returns NULL there and HDF5 reports an error, so ASan must return NULL
# too (allocator_may_return_null) instead of aborting.
leaks=1
[ "$target" = fuzz_h5_metadata ] && leaks=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=$leaks:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
dict=()
[ -f "$root/fuzz/$target.dict" ] && dict=(-dict="$root/fuzz/$target.dict")
exec "$build/fuzz/$target" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" ${FUZZ_ARGS:-}
