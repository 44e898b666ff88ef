#!/usr/bin/env bash
# Full NLSQ fit benchmark (laminar_flow, 23 angles × 1000 frames, auto mode) at 1 and 2
# ranks; writes one Google Benchmark JSON per run and a combined summary JSON.
#   bash bench/run_nlsq_fit_bench.sh [build dir] [output dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/bench}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
stamp=$(date -u +%Y-%m-%d)
runs=()
for ranks in 1 2; do
  f="$out/nlsq_fit_${stamp}_np${ranks}.json"
  mpiexec -n "$ranks" "$build/bench/bench_nlsq_fit" --benchmark_out="$f" --benchmark_out_format=json
  runs+=("$f")
done
python3 - "$out/nlsq_fit_${stamp}_summary.json" "${runs[@]}" <<'PY'
import json, sys, platform
summary = {"benchmark": "full NLSQ fit, laminar_flow, auto per-angle mode", "runs": []}
for path in sys.argv[2:]:
    d = json.load(open(path))
    b = d["benchmarks"][0]
    keys = ["ranks", "threads_per_rank", "angles", "frames", "points", "passes", "iterations",
            "fit_seconds", "points_per_second_per_core", "peak_rss_mib_max_rank", "converged",
            "D0_rel_error"]
    summary["runs"].append({k: b[k] for k in keys if k in b})
summary["machine"] = {"host": d["context"]["host_name"], "cpus": d["context"]["num_cpus"],
                      "mhz": d["context"]["mhz_per_cpu"], "date": d["context"]["date"]}
json.dump(summary, open(sys.argv[1], "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
