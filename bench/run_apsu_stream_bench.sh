#!/usr/bin/env bash
# An APS-U-sized streamed fit: ANGLES angles × FRAMES frames (23 × 5000 ≈ 290 M points of the
# upper triangles) made by homodyne-synth, fitted streamed under --memory-limit at 1 and at 2
# ranks with the default pipeline from the default start (`values: null`), the fitted-data
# files off (at this size they would be tens of GB). Per run: rank 0's passes as the stream
# timed them (run_report.yaml throughput.passes.stream_timings: seconds, seconds inside the
# reads, bytes read), the passes by stage, the whole job's wall time, and every rank's RSS
# sampled every SAMPLE seconds from /proc. The I/O floor of a pass is the same number of bytes
# read sequentially from the page cache by dd (1 MiB blocks; at 2 ranks two dd's of the two
# halves of the file at once), measured before each run: a pass is compared with the bytes it
# reads at that rate. RSS flatness is taken over the fit (its seconds from the report). The
# share of the data file in the page cache is sampled with the RSS (fincore): a pass that
# finds its pages gone reads from the disk, not at the floor's rate.
# Writes docs/bench/apsu_stream_<date>.json and .png (per pass: time, reading, floor; RSS).
#   bash bench/run_apsu_stream_bench.sh [build dir] [output dir]
# Environment: FRAMES (5000), ANGLES (23), MODE (static: laminar_flow takes about three
# times the passes), MEMORY_LIMIT (300M), RANKS ("1 2"), SAMPLE (0.5), WORK (directory for
# the data file, default $TMPDIR or /tmp; FRAMES 5000 needs 4.6 GB), DATA (an existing file
# of this set: linked instead of generated).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
frames=${FRAMES:-5000}
n_angles=${ANGLES:-23}
mode=${MODE:-static}
limit=${MEMORY_LIMIT:-300M}
rank_counts=${RANKS:-1 2}
sample=${SAMPLE:-0.5}
work=$(mktemp -d "${WORK:-${TMPDIR:-/tmp}}/homodyne_apsu.XXXXXX")
trap 'rm -rf "$work"' EXIT
angles=$(even_angles "$n_angles")

if [ "$mode" = static ]; then
  truth=(--param D0=3000 --param alpha=-0.6 --param D_offset=20)
else
  truth=(--param D0=12000 --param alpha=-0.4 --param D_offset=5 --param gamma_dot_t0=0.003
         --param beta=0.15 --param gamma_dot_t_offset=0.0002 --param phi0=3)
fi
write_default_start_config "$mode" "$work/data.h5" > "$work/config.yaml"
if [ -n "${DATA:-}" ]; then
  ln -s "$(realpath "$DATA")" "$work/data.h5"
else
  echo "== generating $n_angles x $frames ($mode)"
  "$build/apps/homodyne-synth" --config "$work/config.yaml" -o "$work/data.h5" \
    --frames "$frames" --angles "$angles" "${truth[@]}" --contrast 0.3 --offset 1.0 \
    --noise 0.01 --seed 7 --force -q
fi
file_bytes=$(stat -L -c %s "$work/data.h5")

# Seconds for `ranks` concurrent dd's, each of 1/ranks of the file (1 MiB blocks, page cache).
bare_read() {
  local ranks=$1 mib=$((file_bytes / 1048576)) t0 t1 r
  local share=$((mib / ranks))
  cat "$work/data.h5" > /dev/null  # the file in the page cache, as the job finds it
  t0=$(date +%s.%N)
  for ((r = 0; r < ranks; r++)); do
    dd if="$work/data.h5" of=/dev/null bs=1M count="$share" skip=$((r * share)) status=none &
  done
  wait
  t1=$(date +%s.%N)
  echo "$(echo "$t1 - $t0" | bc) $((share * 1048576))"
}

: > "$work/runs.txt"
for ranks in $rank_counts; do
  read -r dd_seconds dd_bytes < <(bare_read "$ranks")
  dir="$work/out_np$ranks"
  echo "== $ranks rank(s), streamed under $limit per rank (bare read: $dd_bytes B per rank in $dd_seconds s)"
  start=$(date +%s.%N)
  mpiexec -n "$ranks" "$build/apps/homodyne" --config "$work/config.yaml" --output-dir "$dir" \
    --strategy streaming --memory-limit "$limit" --threads 1 -q > "$work/log_np$ranks.txt" 2>&1 &
  job=$!
  : > "$work/rss_np$ranks.txt"
  : > "$work/cache_np$ranks.txt"
  while kill -0 "$job" 2> /dev/null; do
    now=$(echo "$(date +%s.%N) - $start" | bc)
    # How much of the data file is in the page cache (the floor is a read from it).
    if command -v fincore > /dev/null; then
      echo "$now $(fincore -n -b -o RES "$work/data.h5" 2> /dev/null || echo -1)" >> "$work/cache_np$ranks.txt"
    fi
    for pid in $(pgrep -f -- "--output-dir $dir" || true); do
      [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = homodyne ] || continue
      rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
      [ -n "$rss" ] && echo "$now $pid $rss" >> "$work/rss_np$ranks.txt"
    done
    sleep "$sample"
  done
  rc=0
  wait "$job" || rc=$?
  end=$(date +%s.%N)
  echo "$ranks $rc $(echo "$end - $start" | bc) $dd_seconds $dd_bytes $dir/run_report.yaml $work/rss_np$ranks.txt $work/log_np$ranks.txt $work/cache_np$ranks.txt" >> "$work/runs.txt"
  [ "$rc" = 0 ] || { echo "run at $ranks rank(s) failed (exit $rc):"; tail -20 "$work/log_np$ranks.txt"; }
done

/usr/bin/python3 - "$work/runs.txt" "$out/apsu_stream_$stamp" "$frames" "$n_angles" "$mode" "$limit" "$file_bytes" <<'PY'
import json, os, platform, statistics as st, sys
import yaml
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

runs_file, stem, frames, n_angles, mode, limit, file_bytes = sys.argv[1:8]

def find(d, key):
    if isinstance(d, dict):
        for k, v in d.items():
            if k == key:
                return v
            x = find(v, key)
            if x is not None:
                return x
    return None

runs = []
for line in open(runs_file):
    ranks, rc, wall, dd_s, dd_b, report, rss_file, log, cache_file = line.split()
    run = {"ranks": int(ranks), "exit_code": int(rc), "wall_seconds": float(wall),
           "bare_read": {"bytes_per_rank": int(dd_b), "seconds": float(dd_s),
                         "bytes_per_second": int(dd_b) / float(dd_s)}}
    try:
        r = yaml.safe_load(open(report))
    except OSError:
        runs.append(run)
        continue
    passes = find(r, "passes")
    t = passes["stream_timings"]
    rate = run["bare_read"]["bytes_per_second"]
    floor = [b / rate for b in t["bytes"]]
    ratio = [s / f for s, f in zip(t["seconds"], floor)]
    rss = {}
    for row in open(rss_file):
        when, pid, kb = row.split()
        rss.setdefault(pid, []).append((float(when), int(kb) * 1024))
    # Flatness over the fit, per rank: the samples while the fit ran, i.e. the fit's seconds
    # (timing_seconds) before the outputs' phases and the shutdown (the last second of the
    # run), less the fit's first 5 % (its first window is being read). The middle 80 % of
    # the whole run, which stood for it before, reaches into the initial scaling's ramp
    # once the job is short.
    timing = find(r, "timing_seconds") or {}
    fit_s = timing.get("fit", {}).get("max", 0.0)
    post = 1.0 + sum(timing.get(k, {}).get("max", 0.0)
                     for k in ("write_outputs", "write_fitted_data", "write_fitted_data_npz"))
    fit_end = float(wall) - post
    fit_begin = fit_end - 0.95 * fit_s
    flat, flat_run = {}, {}
    for pid, samples in rss.items():
        t0, t1 = samples[0][0], samples[-1][0]
        mid = [b for w, b in samples if t0 + 0.1 * (t1 - t0) <= w <= t0 + 0.9 * (t1 - t0)]
        fit = [b for w, b in samples if fit_begin <= w <= fit_end]
        for out_map, sel in ((flat, fit), (flat_run, mid)):
            if sel:
                out_map[pid] = {"min_bytes": min(sel), "max_bytes": max(sel),
                                "max_over_min": max(sel) / min(sel)}
    run.update({
        "passes_total": passes["total"], "accepted_steps": passes["accepted_steps"],
        "passes_per_accepted_step": passes["per_accepted_step"],
        "by_stage": passes["by_stage"],
        "pass_seconds": t["seconds"], "pass_read_seconds": t["read_seconds"],
        "pass_bytes": t["bytes"], "pass_floor_seconds": floor,
        "pass_over_floor_median": st.median(ratio), "pass_over_floor_max": max(ratio),
        "passes_within_1_5x_of_floor": sum(1 for x in ratio if x <= 1.5),
        "read_over_floor_median": st.median(s / f for s, f in zip(t["read_seconds"], floor)),
        "pass_windows": t.get("windows"), "pass_read_ahead_windows": t.get("read_ahead_windows"),
        "read_ahead_share": (sum(t["read_ahead_windows"]) / sum(t["windows"])
                             if t.get("windows") else None),
        "chi_squared": find(r, "chi_squared"), "status": find(r, "status"),
        "rss_samples": {pid: s for pid, s in rss.items()}, "rss_flatness": flat,
        "rss_flatness_window_seconds": [fit_begin, fit_end],
        "rss_flatness_middle_80_percent_of_run": flat_run,
        "timing_seconds": find(r, "timing_seconds"),
    })
    cached = [float(b) for _, b in (row.split() for row in open(cache_file)) if float(b) >= 0]
    if cached:
        run["data_file_cached_fraction"] = {"min": min(cached) / int(file_bytes),
                                            "median": st.median(cached) / int(file_bytes)}
    runs.append(run)

doc = {"benchmark": "APS-U-sized streamed NLSQ fit, default pipeline from the default start",
       "dataset": f"{mode}, {n_angles} angles x {frames} frames (homodyne-synth, seed 7), {file_bytes} bytes",
       "memory_limit_per_rank": limit, "threads_per_rank": 1,
       "host": platform.node(), "machine": platform.machine(),
       "floor": "bytes of the pass at the rate of dd reading the same number of bytes per rank "
                "sequentially from the page cache (concurrently at 2 ranks)",
       "read_seconds": "what the pass waited for its reads: the whole read, or, for a window "
                       "read ahead (docs/streaming.md), the wait for its thread",
       "read_ahead": "off (HOMODYNE_NO_READ_AHEAD set)" if os.environ.get("HOMODYNE_NO_READ_AHEAD")
                     else "on where the file allows it",
       "runs": runs}
json.dump(doc, open(stem + ".json", "w"), indent=1)

fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
for run in runs:
    if "pass_seconds" not in run:
        continue
    n = run["ranks"]
    x = range(1, len(run["pass_seconds"]) + 1)
    axes[0].plot(x, run["pass_seconds"], ".-", label=f"{n} rank(s): pass")
    axes[0].plot(x, run["pass_read_seconds"], ".", label=f"{n} rank(s): waiting for reads")
    axes[0].plot(x, run["pass_floor_seconds"], "--", label=f"{n} rank(s): bare read of its bytes")
    for pid, samples in run["rss_samples"].items():
        axes[1].plot([w for w, _ in samples], [b / 2**20 for _, b in samples],
                     label=f"{n} rank(s), pid {pid}")
axes[0].set_xlabel("pass (rank 0, in order)")
axes[0].set_ylabel("seconds")
axes[0].set_title(f"{n_angles} x {frames} {mode}, streamed under {limit} per rank")
axes[0].legend(fontsize=7)
axes[1].set_xlabel("seconds since launch")
axes[1].set_ylabel("RSS (MiB)")
axes[1].set_title("RSS per rank")
axes[1].legend(fontsize=7)
fig.tight_layout()
fig.savefig(stem + ".png", dpi=110)
for run in runs:
    print(run["ranks"], "rank(s): exit", run["exit_code"], "wall %.1f s" % run["wall_seconds"],
          *(["passes", run["passes_total"], "median pass/floor %.2f" % run["pass_over_floor_median"],
             "median read/floor %.2f" % run["read_over_floor_median"],
             "RSS max/min", {p: round(f["max_over_min"], 3) for p, f in run["rss_flatness"].items()},
             "data file cached", run.get("data_file_cached_fraction")]
            if "pass_seconds" in run else []))
print("wrote", stem + ".json", stem + ".png")
PY
