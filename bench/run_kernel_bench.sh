#!/usr/bin/env bash
# Model-kernel benchmark against the roofline (laminar_flow and the two-component model,
# 23 angles × 1000 frames):
# both ceilings, the χ² and χ² + JᵀJ + Jᵀr passes at 1 and 2 threads with their roofline
# counters, the point loop alone on a cache-resident block, and one χ² pass split over 1 and
# 2 MPI ranks. Writes the Google Benchmark JSON of each run and a summary JSON (thread and
# rank speedups).
#   bash bench/run_kernel_bench.sh [build dir] [output dir]
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
main="$out/kernel_${stamp}.json"
"$build/bench/bench_kernel" --benchmark_filter='^BM_(Ceiling|Kernel(Chi2|NormalEquations)/|HeterodyneKernel|PointBlock)' \
  --benchmark_out="$main" --benchmark_out_format=json
run_at_1_and_2_ranks "kernel_${stamp}_ranks" bench_kernel --benchmark_filter='^BM_KernelChi2Ranks'
python3 - "$out/kernel_${stamp}_summary.json" "$main" "${runs[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
summary = {"benchmark": "model kernel vs roofline, laminar_flow, 23 angles x 1000 frames",
           "ceilings": {}, "passes": [], "thread_speedup": {}, "rank_speedup": {}}
rate = {}
for b in d["benchmarks"]:
    name = b["name"]
    if name.startswith("BM_CeilingMemory"):
        summary["ceilings"]["bandwidth_bytes_per_s"] = b["bandwidth_bytes_per_s"]
    elif name.startswith("BM_CeilingPeak"):
        summary["ceilings"]["peak_flops_per_s"] = b["peak_flops_per_s"]
        summary["ceilings"]["isa"] = b.get("label", "")
    elif name.startswith("BM_PointBlock"):
        summary.setdefault("point_block_alone", {})[name] = {
            "points_per_s": b["points_per_s"], "avx512_copy": b.get("avx512_copy")}
    else:
        keys = ["points_per_s", "points_per_s_per_core", "flops_per_point", "bytes_per_point",
                "roofline_bound_points_per_s", "bandwidth_only_points_per_s",
                "compute_only_points_per_s", "attained_fraction_of_bound",
                "ratio_to_bandwidth_rate", "separable_shear_fraction",
                "separable_diffusion_fraction", "separable_phase_fraction",
                "separable_decay_fraction", "label"]
        summary["passes"].append(dict({"name": name}, **{k: b[k] for k in keys if k in b}))
        rate[name] = b["points_per_s"]
for kind in ["BM_KernelChi2", "BM_KernelNormalEquations", "BM_HeterodyneKernelChi2",
             "BM_HeterodyneKernelNormalEquations", "BM_HeterodyneKernelOneAngleChi2",
             "BM_HeterodyneKernelOneAngleNormalEquations"]:
    one = rate.get(kind + "/threads:1/exact:0/real_time", rate.get(kind + "/threads:1/real_time"))
    two = rate.get(kind + "/threads:2/exact:0/real_time", rate.get(kind + "/threads:2/real_time"))
    if one and two:
        summary["thread_speedup"][kind] = two / one
rr = {}
for path in sys.argv[3:]:
    b = json.load(open(path))["benchmarks"][0]
    rr[int(b["ranks"])] = b["points_per_s"]
summary["rank_points_per_s"] = rr
if 1 in rr and 2 in rr:
    summary["rank_speedup"]["BM_KernelChi2Ranks"] = rr[2] / rr[1]
summary["machine"] = {"host": d["context"]["host_name"], "cpus": d["context"]["num_cpus"],
                      "mhz": d["context"]["mhz_per_cpu"], "date": d["context"]["date"]}
json.dump(summary, open(sys.argv[1], "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
