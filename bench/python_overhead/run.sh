#!/usr/bin/env bash
# Call overhead of the Python module: one 1,024-point model evaluation (static, one angle,
# 32×32 frames) from Python (homodyne_hpc.model_c2, numpy in and out) against the same
# evaluation from the C++ API, each the median over 21 rounds of 2,000 calls per run. The
# runs alternate (C++ then Python, then Python then C++, …) so that the load of a shared
# machine falls on both alike; the answer is the ratio of the medians over the runs. The
# goal (issue 42): Python within 1.2x of C++.
#   bash bench/python_overhead/run.sh [BUILD_DIR] [OUT_DIR] [RUNS (5)]
# Writes OUT_DIR/python_overhead_<date>.json (default docs/bench/).
set -euo pipefail
source "$(dirname "$0")/../lib.sh" "${1:-}" "${2:-}"
runs=${3:-5}
[ "$runs" -ge 3 ] || { echo "run.sh: at least 3 runs" >&2; exit 2; }
cpp_bin="$build/python/bench_python_model_call"
[ -x "$cpp_bin" ] || { echo "run.sh: $cpp_bin is missing (build with the Python module)" >&2; exit 2; }
script="$(dirname "$0")/model_call.py"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$runs"); do
  order="cpp python"; [ $((r % 2)) = 0 ] && order="python cpp"
  for side in $order; do
    if [ "$side" = cpp ]; then
      "$cpp_bin" >> "$tmp/cpp.txt"
    else
      PYTHONPATH="$build/python" /usr/bin/python3 "$script" >> "$tmp/python.txt"
    fi
  done
done
f="$out/python_overhead_${stamp}.json"
python3 - "$tmp" "$f" "$runs" <<'PY'
import json, os, statistics, sys
tmp, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def column(name, key):
    return [float(line.split()[1]) for line in open(os.path.join(tmp, name)) if line.startswith(key)]
cpp = column("cpp.txt", "cpp_us_per_call")
py = column("python.txt", "python_us_per_call")
load = os.getloadavg()
result = {
    "benchmark": "Python call overhead: homodyne_hpc.model_c2 vs homodyne::EvaluateC2, static, 1 angle, 32x32 frames",
    "points_per_call": 1024,
    "runs": runs,
    "calls_per_run": "median of 21 rounds of 2000 calls",
    "order": "alternating: C++ first in odd runs, Python first in even runs",
    "cpp_us_per_call": cpp,
    "python_us_per_call": py,
    "cpp_us_median": statistics.median(cpp),
    "python_us_median": statistics.median(py),
    "ratio_of_medians": statistics.median(py) / statistics.median(cpp),
    "run_ratios": [p / c for p, c in zip(py, cpp)],
    "goal_ratio": 1.2,
    "load_average_after": [round(x, 2) for x in load],
    "cpus": os.cpu_count(),
}
with open(path, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print("C++ EvaluateC2        median %.3f us per call" % result["cpp_us_median"])
print("Python (numpy result) median %.3f us per call" % result["python_us_median"])
print("ratio of medians Python / C++ %.3f  (per run: %s)"
      % (result["ratio_of_medians"],
         ", ".join("%.2f" % r for r in result["run_ratios"])))
print("wrote", path)
PY
