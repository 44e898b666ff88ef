#!/usr/bin/env bash
# Data passes of the default pipeline from a template's start: the xpcsjax two-component
# template as users copy it (values: null, its own tolerances; only the data path changed) on
# the synthetic set of issue 38's plateau case (phi 0, 5, 88, 92; dt 0.1, q 0.0237; D0_ref 50,
# D0_sample 300, v0 5, f0 0.4, every other physical parameter 0, contrast 0.5, noise 0.002),
# at FRAMES frames, 2 ranks, in core and streamed under --memory-limit. Per run: the whole
# job's seconds, exit code, status, chi2 against the fit from the truth, and the run report's
# passes (total, accepted steps, per accepted step, by stage and kind).
# With BEFORE_BIN (a folder holding another build's homodyne) each template run is made with
# both binaries, one after the other ("before", then "after": the build's).
# Writes docs/bench/template_passes_<date>.{json,md}.
#   bash bench/run_template_passes_bench.sh [build dir] [output dir]
# Environment: FRAMES ("80 150"), RANKS (2), MEMORY_LIMIT (100M), BEFORE_BIN, BENCH_STAMP,
# KEEP_WORK (keep the work folder).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
frames_list=${FRAMES:-80 150}
build=$(cd "$build" && pwd)  # the runs work inside each case's folder
ranks=${RANKS:-2}
limit=${MEMORY_LIMIT:-100M}
template=$root/tests/data/configs/xpcsjax/xpcsjax_two_component.yaml
work=$(mktemp -d "${TMPDIR:-/tmp}/homodyne_template_passes.XXXXXX")
[ -n "${KEEP_WORK:-}" ] && echo "work folder: $work" || trap 'rm -rf "$work"' EXIT
names="[D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]"

: > "$work/runs.txt"
for frames in $frames_list; do
  dir=$work/f$frames
  mkdir -p "$dir"
  cat > "$dir/truth.yaml" <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0237}
experimental_data:
  data_folder_path: $dir
  data_file_name: het.h5
initial_parameters:
  parameter_names: $names
  values: [50, 0, 0, 300, 0, 0, 5, 0, 0, 0.4, 0, 0, 0, 0]
YAML
  "$build/apps/homodyne-synth" --config "$dir/truth.yaml" -o "$dir/het.h5" --frames "$frames" \
    --angles "0,5,88,92" --contrast 0.5 --offset 1 --noise 0.002 --seed 1 -q
  sed -e "s#data_folder_path: \"./data/\"#data_folder_path: \"$dir/\"#" \
      -e 's#data_file_name: "sample_heterodyne.hdf"#data_file_name: "het.h5"#' \
      "$template" > "$dir/template.yaml"
  grep -q 'data_file_name: "het.h5"' "$dir/template.yaml"
  echo "== $frames frames: fit from the truth (the minimum's reference)"
  (cd "$dir" && mpiexec -n "$ranks" "$build/apps/homodyne" --config truth.yaml -o truth -q) ||
    echo "   (exit $?)"
  for path in in_core streamed; do
    extra=()
    [ $path = streamed ] && extra=(--strategy streaming --memory-limit "$limit")
    for version in ${BEFORE_BIN:+before} after; do
      bin=$build/apps; [ "$version" = before ] && bin=$BEFORE_BIN
      echo "== $frames frames: template start, $path, $ranks ranks, $version ($bin)"
      start=$(date +%s.%N)
      set +e
      # The template writes checkpoints into ./checkpoints: run it inside the case's folder.
      (cd "$dir" && rm -rf checkpoints && mpiexec -n "$ranks" "$bin/homodyne" \
        --config template.yaml -o "out_${path}_$version" -q "${extra[@]}")
      rc=$?
      set -e
      end=$(date +%s.%N)
      echo "$frames $path $version $rc $(echo "$end - $start" | bc) $dir" >> "$work/runs.txt"
    done
  done
done

/usr/bin/python3 - "$work/runs.txt" "$out/template_passes_${stamp}" "$ranks" "$limit" "$root" <<'PY'
import json, os, platform, socket, subprocess, sys, yaml
runs_file, dest, ranks, limit, root = sys.argv[1:6]
def answer(d):
    p = os.path.join(d, "nlsq", "parameters.json")
    if not os.path.exists(p):
        return None, "none"
    j = json.load(open(p))
    return j["chi_squared"], j["convergence_status"]
git = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                     text=True).stdout.strip()
summary = {"benchmark": "data passes of the default pipeline from the xpcsjax two-component "
                        "template's start (issue 38's plateau case)",
           "builds": {"before": os.environ.get("BEFORE_BIN"), "after": "the build's"},
           "ranks": int(ranks), "memory_limit_per_rank_streamed": limit, "git": git,
           "runs": []}
for line in open(runs_file):
    frames, path, version, rc, wall, d = line.split()
    chi_ref, st_ref = answer(os.path.join(d, "truth"))
    out = os.path.join(d, f"out_{path}_{version}")
    chi, st = answer(out)
    run = {"frames": int(frames), "path": path, "version": version, "exit_code": int(rc),
           "wall_seconds": round(float(wall), 2), "status": st, "chi_squared": chi,
           "truth_start_chi_squared": chi_ref,
           "chi_squared_over_truth_start": chi / chi_ref if chi and chi_ref else None}
    rep = os.path.join(out, "run_report.yaml")
    if os.path.exists(rep):
        r = yaml.safe_load(open(rep))
        thr = r["throughput"]
        p = thr["passes"]
        run.update({"fit_seconds_max_rank": r["timing_seconds"]["fit"]["max"],
                    "data_passes": thr["data_passes"], "passes_total": p["total"],
                    "accepted_steps": p["accepted_steps"],
                    "passes_per_accepted_step": p["per_accepted_step"],
                    "stream_reads": p["stream_reads"], "by_kind": p["by_kind"],
                    "by_stage": p["by_stage"], "strategy": r["memory"]["strategy"]})
    summary["runs"].append(run)
summary["machine"] = {"host": socket.gethostname(), "platform": platform.platform(),
                      "load_average": os.getloadavg()}
json.dump(summary, open(dest + ".json", "w"), indent=2)
lines = ["# Data passes from the two-component template's start", "",
         f"Written by `bench/run_template_passes_bench.sh` (git {git}), {ranks} ranks; streamed "
         f"runs under `--memory-limit {limit}`.", "",
         "| frames | path | version | exit | status | chi2 / truth start | whole job (s) | fit (s) | "
         "passes | accepted steps | passes per step | by stage |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in summary["runs"]:
    stages = ", ".join(f"{s['stage']} {s['total']}" for s in r.get("by_stage") or [])
    ratio = r["chi_squared_over_truth_start"]
    head = f"| {r['frames']} | {r['path']} | {r['version']} | {r['exit_code']} | {r['status']} | "
    if ratio is None:
        lines.append(head + f"– | {r['wall_seconds']} | | | | | |")
        continue
    per = r.get("passes_per_accepted_step")
    lines.append(head + f"{ratio:.6f} | {r['wall_seconds']} | {r['fit_seconds_max_rank']:.2f} | "
                 f"{r['passes_total']} | {r['accepted_steps']} | {per:.2f} | {stages} |")
open(dest + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "wrote $out/template_passes_${stamp}.{json,md}"
