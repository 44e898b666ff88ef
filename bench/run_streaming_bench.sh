#!/usr/bin/env bash
# Streaming (out-of-core) NLSQ benchmark: peak RSS per rank of streaming fits of a
# synthetic static dataset and of one with 10x as many fitted points (frames x sqrt(10)),
# at a fixed --memory-limit, with the in-core fits of both for reference. Peak RSS is
# each rank's VmHWM as homodyne records it in run_report.yaml (memory.peak_rss_bytes).
# Writes docs/bench/streaming_<date>.json; the acceptance figure is
# streaming.peak_rss_ratio (largest rank, 10x / 1x), which should stay within 1.10.
#   bash bench/run_streaming_bench.sh [build dir] [output dir]
# Environment: RANKS (2), FRAMES (700), ANGLES ("0,60,120"), MEMORY_LIMIT (64M), THREADS (1).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
ranks=${RANKS:-2}
frames=${FRAMES:-700}
angles=${ANGLES:-0,60,120}
limit=${MEMORY_LIMIT:-64M}
threads=${THREADS:-1}
big_frames=$(/usr/bin/python3 -c "import math; print(round($frames * math.sqrt(10)))")
work=$(mktemp -d "${TMPDIR:-/tmp}/homodyne_stream_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

write_config() {  # $1 = data file
  cat <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $(dirname "$1")
  data_file_name: $(basename "$1")
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1000, 0.0, 0.0]
optimization:
  nlsq:
    max_iterations: 100
    anti_degeneracy: {per_angle_mode: auto}
YAML
}

results=()
for label in small large; do
  n=$frames; [ $label = large ] && n=$big_frames
  data="$work/data_$label.h5"
  write_config "$data" > "$work/$label.yaml"
  echo "== generating $label dataset: $n frames, angles $angles"
  "$build/apps/homodyne-synth" --config "$work/$label.yaml" -o "$data" --frames "$n" \
    --angles "$angles" --param D0=3000 --param alpha=-0.6 --param D_offset=20 --noise 0.001 \
    --threads "$threads" -q
  for strategy in streaming in-core; do
    dir="$work/out_${label}_${strategy}"
    args=(--config "$work/$label.yaml" --output-dir "$dir" --threads "$threads" -q
          --strategy "$strategy")
    [ $strategy = streaming ] && args+=(--memory-limit "$limit")
    echo "== $label, $strategy, $ranks rank(s)"
    start=$(date +%s.%N)
    mpiexec -n "$ranks" "$build/apps/homodyne" "${args[@]}"
    end=$(date +%s.%N)
    echo "$label $strategy $n $(echo "$end - $start" | bc) $dir/run_report.yaml" >> "$work/runs.txt"
  done
done

/usr/bin/python3 - "$work/runs.txt" "$out/streaming_${stamp}.json" "$limit" "$ranks" "$angles" <<'PY'
import json, platform, socket, sys, yaml
runs_file, dest, limit, ranks, angles = sys.argv[1:6]
summary = {"benchmark": "streaming vs in-core NLSQ fit, static, peak RSS per rank",
           "memory_limit_per_rank": limit, "ranks": int(ranks), "angles": angles, "runs": []}
peaks = {}
for line in open(runs_file):
    label, strategy, frames, wall, report = line.split()
    r = yaml.safe_load(open(report))
    m = r["memory"]
    run = {"dataset": label, "strategy": strategy, "frames": int(frames),
           "fitted_points": r["data"]["fitted_points"],
           "wall_seconds": round(float(wall), 3),
           "fit_seconds_max_rank": r["timing_seconds"]["fit"]["max"],
           "data_passes": r["throughput"]["data_passes"],
           "peak_rss_mib_per_rank": [round(b / 2**20, 1) for b in m["peak_rss_bytes"]],
           "estimate_mib_rank0": round(m["estimate_bytes_rank0"] / 2**20, 1),
           "in_core_estimate_mib_rank0": round(m["in_core_estimate_bytes_rank0"] / 2**20, 1),
           "budget_mib_per_rank": round(m["budget_bytes_per_rank"] / 2**20, 1),
           "window_points_rank0": m.get("window_points_rank0"),
           "converged": r["status"]["result"] == "converged"}
    summary["runs"].append(run)
    peaks[(label, strategy)] = max(m["peak_rss_bytes"])
    summary["runs"][-1]["strategy_reason"] = m["reason"]
for strategy in ("streaming", "in-core"):
    ratio = peaks[("large", strategy)] / peaks[("small", strategy)]
    summary[strategy.replace("-", "_")] = {
        "peak_rss_mib_small": round(peaks[("small", strategy)] / 2**20, 1),
        "peak_rss_mib_large": round(peaks[("large", strategy)] / 2**20, 1),
        "peak_rss_ratio": round(ratio, 4)}
summary["streaming"]["within_10_percent"] = summary["streaming"]["peak_rss_ratio"] <= 1.10
summary["machine"] = {"host": socket.gethostname(), "platform": platform.platform()}
json.dump(summary, open(dest, "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
echo "wrote $out/streaming_${stamp}.json"
