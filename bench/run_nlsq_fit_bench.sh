#!/usr/bin/env bash
# Full NLSQ fit benchmark (laminar_flow, 23 angles × 1000 frames, auto mode) at 1 and 2
# ranks; writes one Google Benchmark JSON per run and a combined summary JSON.
#   bash bench/run_nlsq_fit_bench.sh [build dir] [output dir]
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
run_at_1_and_2_ranks "nlsq_fit_${stamp}" bench_nlsq_fit
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
