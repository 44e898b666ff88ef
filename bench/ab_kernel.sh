#!/usr/bin/env bash
# A/B comparison of two bench_kernel binaries (e.g. before and after a kernel change): runs
# them alternately, pinned to one core, and prints the minimum real time of each benchmark
# per binary — how the changes in docs/performance.md were judged on a shared host, where
# one run of a binary can be several per cent off the next.
#   bash bench/ab_kernel.sh <bench_kernel A> <bench_kernel B> [runs (5)] [filter] [core (last)]
# Default filter: the one-thread χ² and normal-equation passes and the point loops alone.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
a=$1; b=$2; runs=${3:-5}
filter=${4:-'^BM_(Kernel(Chi2|NormalEquations)/threads:1/exact:0|PointBlock)'}
core=${5:-$(( $(nproc) - 1 ))}
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "ab_kernel.sh: $bin is not an executable bench_kernel" >&2; exit 2; }
done
for _ in $(seq "$runs"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    taskset -c "$core" "$bin" --benchmark_filter="$filter" --benchmark_format=csv 2>/dev/null \
      | awk -F, -v side="$side" '/^"BM/ {gsub(/"/, "", $1); print side, $1, $4, $5}'
  done
done | awk '{k = $2 " " $1; if (!(k in m) || $3 < m[k]) {m[k] = $3; u[k] = $4}}
            END {for (k in m) print k, m[k], u[k]}' | sort \
  | awk 'BEGIN {printf "%-60s %4s %14s\n", "benchmark", "bin", "min real time"}
         {printf "%-60s %4s %14.4g %s\n", $1, $2, $3, $4}'
