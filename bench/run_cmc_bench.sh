#!/usr/bin/env bash
# CMC benchmark (laminar_flow, 8 angles × 50 frames, 2 shards × 2 chains, 150 warmup +
# 150 draws): the shard gradient pass (gradient-only vs normal-equation) and a whole CMC run
# at 1 and 2 ranks; one Google Benchmark JSON per run and a combined summary JSON.
#   bash bench/run_cmc_bench.sh [build dir] [output dir]
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
run_at_1_and_2_ranks "cmc_${stamp}" bench_cmc
python3 - "$out/cmc_${stamp}_summary.json" "${runs[@]}" <<'PY'
import json, sys
summary = {"benchmark": "CMC, laminar_flow, auto per-angle mode (reparameterised)",
           "gradient_pass": [], "runs": []}
for path in sys.argv[2:]:
    d = json.load(open(path))
    for b in d["benchmarks"]:
        if b["name"].startswith("BM_ShardGradient") and path == sys.argv[2]:
            summary["gradient_pass"].append({"pass": b.get("label", ""), "points": b["points"],
                                             "evaluations_per_second": b["evaluations_per_second"]})
        if b["name"].startswith("BM_CmcFitLaminar"):
            keys = ["ranks", "threads_per_rank", "angles", "frames", "points", "shards", "chains",
                    "draws_per_chain", "wall_seconds", "gradient_evaluations",
                    "gradient_evaluations_per_second_per_core", "min_ess",
                    "ess_per_second_per_core", "max_rhat"]
            summary["runs"].append({k: b[k] for k in keys if k in b})
summary["machine"] = {"host": d["context"]["host_name"], "cpus": d["context"]["num_cpus"],
                      "mhz": d["context"]["mhz_per_cpu"], "date": d["context"]["date"],
                      "load_avg": d["context"].get("load_avg")}
json.dump(summary, open(sys.argv[1], "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
