#!/usr/bin/env bash
# A/B comparison of two bench_kernel binaries (e.g. before and after a kernel change): runs
# them alternately (A then B, then B then A, …), pinned to one core, and prints per benchmark
# and binary the minimum and the median real time, and the median and range of the run-by-run
# ratio B/A — how the changes in docs/performance.md were judged on a shared host, where
# one run of a binary can be several per cent off the next.
#   bash bench/ab_kernel.sh <bench_kernel A> <bench_kernel B> [runs (5)] [filter] [core (last)]
# Default filter: the one-thread χ² and normal-equation passes and the point loops alone.
# core "all": not pinned (for the two-thread benchmarks).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
a=$1; b=$2; runs=${3:-5}
filter=${4:-'^BM_(Kernel(Chi2|NormalEquations)/threads:1/exact:0|PointBlock)'}
core=${5:-$(( $(nproc) - 1 ))}
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "ab_kernel.sh: $bin is not an executable bench_kernel" >&2; exit 2; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pin=(taskset -c "$core")
[ "$core" = all ] && pin=()
for r in $(seq "$runs"); do
  order="A B"; [ $((r % 2)) = 0 ] && order="B A"
  for side in $order; do
    bin=$a; [ "$side" = B ] && bin=$b
    # JSON, not CSV: Google Benchmark's CSV reporter aborts when the selected benchmarks
    # report different counters (the passes and BM_PointBlock do).
    "${pin[@]}" "$bin" --benchmark_filter="$filter" --benchmark_format=json \
      > "$tmp/$side.$r.json" 2> /dev/null
  done
done
python3 - "$tmp" <<'PY'
import glob, json, os, statistics, sys
times = {}  # (name, side) -> {run: real time}
units = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    side, run = os.path.basename(path).split(".")[:2]
    for b in json.load(open(path))["benchmarks"]:
        times.setdefault((b["name"], side), {})[int(run)] = b["real_time"]
        units[b["name"]] = b["time_unit"]
print(f"{'benchmark':60s} {'bin':>4s} {'min':>10s} {'median':>10s}  B/A median (range)")
for name in sorted({n for n, _ in times}):
    a, b = times.get((name, "A"), {}), times.get((name, "B"), {})
    ratios = [b[r] / a[r] for r in sorted(set(a) & set(b))]
    for side, t in (("A", a), ("B", b)):
        if not t:
            continue
        line = f"{name:60s} {side:>4s} {min(t.values()):7.4g} {units[name]} " \
               f"{statistics.median(t.values()):7.4g} {units[name]}"
        if side == "B" and ratios:
            line += f"  {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})"
        print(line)
PY
