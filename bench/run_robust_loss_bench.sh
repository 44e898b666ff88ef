#!/usr/bin/env bash
# The kernel's passes under each robust loss against the linear pass of the same kind
# (BM_KernelChi2Loss, BM_KernelNormalEquationsLoss: laminar_flow; BM_HeterodyneKernel*Loss:
# two_component; 23 angles × 1000 frames, one thread). The repetitions run interleaved in random order (a shared machine's load
# then falls on every case alike); the summary takes each case's median CPU time and its
# ratio to the linear pass of the same kind from the same run.
#   bash bench/run_robust_loss_bench.sh [build dir] [output dir]     (REPS: repetitions, 9)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
main="$out/robust_loss_kernel_${stamp}.json"
if [[ -e $main ]]; then
  echo "$main exists: set BENCH_STAMP for another run of the day" >&2
  exit 1
fi
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
