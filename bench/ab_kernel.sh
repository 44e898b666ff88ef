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
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$runs"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    # JSON, not CSV: Google Benchmark's CSV reporter aborts when the selected benchmarks
    # report different counters (the passes and BM_PointBlock do).
    taskset -c "$core" "$bin" --benchmark_filter="$filter" --benchmark_format=json \
      > "$tmp/$side.$r.json" 2> /dev/null
  done
done
python3 - "$tmp" <<'PY'
import glob, json, os, sys
best = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    side = os.path.basename(path).split(".")[0]
    for b in json.load(open(path))["benchmarks"]:
        key = (b["name"], side)
        if key not in best or b["real_time"] < best[key][0]:
            best[key] = (b["real_time"], b["time_unit"])
print(f"{'benchmark':60s} {'bin':>4s} {'min real time':>16s}")
for (name, side), (t, unit) in sorted(best.items()):
    print(f"{name:60s} {side:>4s} {t:13.4g} {unit}")
PY
