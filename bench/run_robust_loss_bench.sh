#!/usr/bin/env bash
# The kernel's passes under each robust loss against the linear pass of the same kind
# (BM_KernelChi2Loss, BM_KernelNormalEquationsLoss: laminar_flow; BM_HeterodyneKernel*Loss:
# two_component; 23 angles × 1000 frames, one thread). The repetitions run interleaved in random order (a shared machine's load
# then falls on every case alike); the summary takes each case's median CPU time and its
# ratio to the linear pass of the same kind from the same run.
# Then the same passes paired (BM_RobustOverLinearPaired: a linear and a robust kernel over the
# same data take turns within one process, each pass timed by the thread's CPU clock; the ratio
# is the median of the pairs'), static, laminar_flow and two_component, for each point-loop copy
# this CPU runs (AVX-512 where it has it, and AVX2 with HOMODYNE_NO_AVX512=1):
# robust_loss_paired_<date>.json.
#   bash bench/run_robust_loss_bench.sh [build dir] [output dir]     (REPS: repetitions, 9;
#   PAIRED_ONLY=1: the paired part alone; PROCESSES: processes of the paired part, 5)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
main="$out/robust_loss_kernel_${stamp}.json"
paired="$out/robust_loss_paired_${stamp}.json"
for f in $([[ -z ${PAIRED_ONLY:-} ]] && echo "$main") "$paired"; do
  if [[ -e $f ]]; then
    echo "$f exists: set BENCH_STAMP for another run of the day" >&2
    exit 1
  fi
done
if [[ -z ${PAIRED_ONLY:-} ]]; then
"$build/bench/bench_kernel" --benchmark_filter='^BM_(Heterodyne)?Kernel(Chi2|NormalEquations)Loss' \
  --benchmark_repetitions="${REPS:-9}" --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_out="$main" --benchmark_out_format=json
python3 - "$out/robust_loss_kernel_${stamp}_summary.json" "$main" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[2]))
names = {0: "linear", 1: "soft_l1", 2: "huber", 3: "cauchy", 4: "arctan"}
median = {}
for b in d["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    m = re.match(r"BM_(Heterodyne)?Kernel(\w+)Loss/threads:1/loss:(\d)/f_scale_sigma:(\d+)",
                 b["name"])
    model = "two_component" if m.group(1) else "laminar_flow"
    median[(model, m.group(2), int(m.group(3)), int(m.group(4)))] = b["cpu_time"]
rows = []
for (model, kind, loss, fs), t in sorted(median.items()):
    linear = median[(model, kind, 0, 1)]
    rows.append({"model": model, "pass": kind, "loss": names[loss], "f_scale_c2": fs * 0.01,
                 "median_cpu_ms": t, "vs_linear": t / linear,
                 "repetitions": d["benchmarks"][0]["repetitions"]})
summary = {"benchmark": "robust-loss passes vs the linear pass of the same kind and model "
                        "(laminar_flow, two_component), 23 angles x 1000 frames, data at the "
                        "model plus noise 0.002, 1 thread",
           "context": d["context"], "rows": rows}
json.dump(summary, open(sys.argv[1], "w"), indent=1)
for r in rows:
    print(f'{r["model"]:13} {r["pass"]:16} {r["loss"]:8} f_scale {r["f_scale_c2"]:<5g} '
          f'{r["median_cpu_ms"]:8.2f} ms  x{r["vs_linear"]:.3f}')
PY
fi

# The paired runs, for each copy of the point loops: the whole set once, then the default
# loss's normal passes in PROCESSES − 1 more processes (where a process's allocations land moves
# a pass's time, and the pairs' ratio with it, by a few per cent).
processes=${PROCESSES:-5}
copies=()
run_paired() {  # run_paired COPY INDEX FILTER [ENV...]
  local f="$out/.paired_$1_$2.json" copy=$1 filter=$3
  shift 3
  env "$@" "$build/bench/bench_kernel" --benchmark_filter="$filter" \
    --benchmark_out="$f" --benchmark_out_format=json > /dev/null
  copies+=("$copy" "$f")
}
for ((i = 1; i <= processes; i++)); do
  filter='^BM_RobustOverLinearPaired'
  ((i > 1)) && filter='^BM_RobustOverLinearPaired/normal:1/loss:1/'
  if grep -qw avx512f /proc/cpuinfo; then run_paired avx512 "$i" "$filter"; fi
  run_paired avx2 "$i" "$filter" HOMODYNE_NO_AVX512=1
done
python3 - "$paired" "$processes" "${copies[@]}" <<'PY'
import json, re, statistics, sys
names = {1: "soft_l1", 2: "huber", 3: "cauchy", 4: "arctan"}
models = {0: "static", 1: "laminar_flow", 2: "two_component"}
runs, contexts = {}, {}
for copy, path in zip(sys.argv[3::2], sys.argv[4::2]):
    d = json.load(open(path))
    contexts.setdefault(copy, d["context"])
    for b in d["benchmarks"]:
        m = re.match(r"BM_RobustOverLinearPaired/normal:(\d)/loss:(\d)/f_scale_sigma:(\d+)/"
                     r"model:(\d)/robust_built_first:(\d)/noisy:(\d)", b["name"])
        key = (copy, models[int(m.group(4))],
               "normal_equations" if m.group(1) == "1" else "chi2", names[int(m.group(2))],
               int(m.group(3)) * 0.01, "gaussian 0.01" if m.group(6) == "1" else "uniform 0.002")
        runs.setdefault(key, []).append({
            "robust_built_first": int(m.group(5)), "pairs": int(b["pairs"]),
            "avx512_copy": int(b["avx512_copy"]), "linear_ms_median": b["linear_ms_median"],
            "robust_ms_median": b["robust_ms_median"], "ratio_median": b["ratio_median"],
            "ratio_q25": b["ratio_q25"], "ratio_q75": b["ratio_q75"]})
rows = []
for (copy, model, kind, loss, fs, noise), rs in runs.items():
    ratios = [r["ratio_median"] for r in rs]
    rows.append({"copy": copy, "model": model, "pass": kind, "loss": loss, "f_scale_c2": fs,
                 "noise": noise,
                 "runs": len(rs), "ratio_median_of_runs": statistics.median(ratios),
                 "ratio_min": min(ratios), "ratio_max": max(ratios),
                 "linear_ms_median": statistics.median(r["linear_ms_median"] for r in rs),
                 "robust_ms_median": statistics.median(r["robust_ms_median"] for r in rs),
                 "per_run": rs})
summary = {"benchmark": "robust-loss pass over the linear pass, paired within one process "
                        "(two kernels over the same data take turns, alternating which goes "
                        "first; thread CPU time; a run's ratio is the median of its pairs' "
                        "ratios; runs over processes and both orders of building the two "
                        "kernels), 23 angles x 1000 frames, data at the model plus noise "
                        "(uniform of sd 0.002, or Gaussian of sd 0.01: the rows' noise), 1 "
                        "thread, pinned",
           "processes": int(sys.argv[2]), "contexts": contexts, "rows": rows}
json.dump(summary, open(sys.argv[1], "w"), indent=1)
for r in rows:
    print(f'{r["copy"]:6} {r["model"]:13} {r["pass"]:16} {r["loss"]:8} f_scale '
          f'{r["f_scale_c2"]:<5g} {r["noise"]:13} linear {r["linear_ms_median"]:7.2f} ms  robust '
          f'{r["robust_ms_median"]:7.2f} ms  x{r["ratio_median_of_runs"]:.3f} '
          f'[{r["ratio_min"]:.3f}, {r["ratio_max"]:.3f}] over {r["runs"]} runs')
PY
rm -f "$out"/.paired_*.json
