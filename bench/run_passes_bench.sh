#!/usr/bin/env bash
# Data passes of streamed default-pipeline fits, per stage and per accepted step, before and
# after: the same seeded datasets (23 angles x FRAMES, static and laminar_flow, from the
# default start: initial_parameters.values null), streamed under --memory-limit, at 1 and 2
# ranks, with the binary under test (argument 1) and a reference binary (BEFORE_BUILD, by
# default /work/main/build: the main branch). A streamed fit's cost is its passes times a
# read of the rank's share of the file.
# Writes docs/bench/passes_<date>.json:
#   per run: wall and fit seconds, data_passes (the problem's, as every version reports it),
#   iterations of the answer; with a version that reports them (throughput.passes), the
#   passes by stage and kind, accepted steps, passes per accepted step and the stream's own
#   count of whole reads;
#   and the answer (parameters, chi_squared, per-angle values of nlsq/parameters.json)
#   compared between the two versions: it must be identical.
#   bash bench/run_passes_bench.sh [build dir] [output dir]
# Environment: FRAMES (1000), RANKS ("1 2"), MEMORY_LIMIT (100M), MODES ("static
# laminar_flow"), BEFORE_BUILD (/work/main/build), THREADS (1).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
frames=${FRAMES:-1000}
ranks_list=${RANKS:-1 2}
limit=${MEMORY_LIMIT:-100M}
modes=${MODES:-static laminar_flow}
before=${BEFORE_BUILD:-/work/main/build}
threads=${THREADS:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/homodyne_passes_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
angles=$(/usr/bin/python3 -c "print(','.join(repr(round(-90 + i * 180 / 23, 4)) for i in range(23)))")

: > "$work/runs.txt"
for mode in $modes; do
  data="$work/$mode.h5"
  write_default_start_config "$mode" "$data" > "$work/$mode.yaml"
  truth=(--param D0=12000 --param alpha=-0.4 --param D_offset=5)
  [ "$mode" = laminar_flow ] && truth+=(--param gamma_dot_t0=0.003 --param beta=0.15
                                         --param gamma_dot_t_offset=0.0002 --param phi0=3)
  echo "== $mode: 23 angles x $frames frames"
  "$build/apps/homodyne-synth" --config "$work/$mode.yaml" -o "$data" --frames "$frames" \
    --angles "$angles" "${truth[@]}" --contrast 0.3 --offset 1.0 --noise 0.01 --seed 5 \
    --threads "$threads" -q
  for ranks in $ranks_list; do
    for version in before after; do
      bin=$build; [ $version = before ] && bin=$before
      dir="$work/out_${mode}_${ranks}_${version}"
      echo "== $mode, $ranks rank(s), $version ($bin)"
      start=$(date +%s.%N)
      mpiexec -n "$ranks" "$bin/apps/homodyne" --config "$work/$mode.yaml" --output-dir "$dir" \
        --threads "$threads" -q --strategy streaming --memory-limit "$limit"
      end=$(date +%s.%N)
      echo "$mode $ranks $version $(echo "$end - $start" | bc) $dir" >> "$work/runs.txt"
    done
  done
done

/usr/bin/python3 - "$work/runs.txt" "$out/passes_${stamp}.json" "$limit" "$frames" "$before" \
  "$build" <<'PY'
import json, os, platform, socket, sys, yaml
runs_file, dest, limit, frames, before, after = sys.argv[1:7]
summary = {"benchmark": "data passes of streamed default-pipeline NLSQ fits, before and after",
           "data": f"23 angles x {frames} frames, noise 0.01, seed 5, default start",
           "memory_limit_per_rank": limit, "builds": {"before": before, "after": after},
           "runs": []}
params = {}
for line in open(runs_file):
    mode, ranks, version, wall, d = line.split()
    r = yaml.safe_load(open(os.path.join(d, "run_report.yaml")))
    thr = r["throughput"]
    run = {"mode": mode, "ranks": int(ranks), "version": version,
           "wall_seconds": round(float(wall), 2),
           "fit_seconds_max_rank": r["timing_seconds"]["fit"]["max"],
           "data_passes": thr["data_passes"], "iterations": thr["iterations"],
           "strategy": r["memory"]["strategy"]}
    p = thr.get("passes")
    if p:
        run["passes_total"] = p["total"]
        run["accepted_steps"] = p["accepted_steps"]
        run["passes_per_accepted_step"] = p["per_accepted_step"]
        run["stream_reads"] = p["stream_reads"]
        run["by_kind"] = p["by_kind"]
        run["by_stage"] = p["by_stage"]
    summary["runs"].append(run)
    with open(os.path.join(d, "nlsq", "parameters.json")) as f:
        j = json.load(f)
    params[(mode, ranks, version)] = {"parameters": {k: v.get("value")
                                                     for k, v in j["parameters"].items()},
                                      "chi_squared": j["chi_squared"],
                                      "per_angle": j.get("per_angle")}
same = {}
for (mode, ranks, version), p in params.items():
    if version == "after" and (mode, ranks, "before") in params:
        same[f"{mode}_np{ranks}"] = p == params[(mode, ranks, "before")]
summary["parameters_identical_before_after"] = same
summary["machine"] = {"host": socket.gethostname(), "platform": platform.platform(),
                      "load_average": os.getloadavg()}
json.dump(summary, open(dest, "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
echo "wrote $out/passes_${stamp}.json"
