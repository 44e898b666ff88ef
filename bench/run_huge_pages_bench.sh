#!/usr/bin/env bash
# Large buffers on transparent huge pages (src/core/huge_pages.h), measured with one binary:
# each job run with HOMODYNE_NO_HUGE_PAGES=1 (every buffer on 4 KiB pages) and without it, in
# alternation, REPEATS times each. The job is the fitted-data benchmark's (a laminar_flow set of
# 23 angles × FRAMES frames by homodyne-synth, from the truth, ITERATIONS iterations) with the
# default outputs, at RANKS ranks × 1 thread, in core. Per run: the whole process (wall, user,
# sys), the run report's phases (slowest rank) and every rank's peak RSS. The data set's
# generation by homodyne-synth is timed both ways too (SYNTH=0 skips it). The two variants'
# result files are compared (h5diff, parameters): paging must not change a bit.
# Writes docs/bench/huge_pages_<date>.json and .md.
#   bash bench/run_huge_pages_bench.sh [build dir] [output dir]
# Environment: RANKS (2), FRAMES (2500), REPEATS (3), ITERATIONS (5), SYNTH (1), WORK (a
# directory on the disk under test, default $TMPDIR or /tmp), DATA (an existing data file of
# that set, made by an earlier run: linked instead of generated).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
ranks=${RANKS:-2}
frames=${FRAMES:-2500}
repeats=${REPEATS:-3}
iterations=${ITERATIONS:-5}
synth=${SYNTH:-1}
work=$(mktemp -d "${WORK:-${TMPDIR:-/tmp}}/homodyne_huge_pages.XXXXXX")
trap 'rm -rf "$work"' EXIT
angles=$(even_angles 23)
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null || echo unavailable)

write_truth_fit_config "$work/data.h5" "$iterations" > "$work/config.yaml"

synthesize() {  # $1 = HOMODYNE_NO_HUGE_PAGES, $2 = output file
  HOMODYNE_NO_HUGE_PAGES=$1 /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" \
    "$build/apps/homodyne-synth" --config "$work/config.yaml" -o "$2" --frames "$frames" \
    --angles "$angles" --contrast 0.3 --offset 1.0 --noise 0.01 --seed 5 --force -q
}

if [ -n "${DATA:-}" ]; then
  ln -s "$(realpath "$DATA")" "$work/data.h5"
else
  echo "== generating 23 x $frames"
  synthesize 0 "$work/data.h5"
fi

for r in $(seq 1 "$repeats"); do
  for flag in 1 0; do
    label=$([ $flag = 1 ] && echo small_pages || echo huge_pages)
    dir="$work/out_${label}_$r"
    echo "== $label, repeat $r, $ranks ranks"
    set +e
    HOMODYNE_NO_HUGE_PAGES=$flag /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" \
      mpiexec -x HOMODYNE_NO_HUGE_PAGES -n "$ranks" "$build/apps/homodyne" \
      --config "$work/config.yaml" --output-dir "$dir" --threads 1 -q > "$work/log.txt" 2>&1
    rc=$?
    set -e
    report=$(find "$dir" -name run_report.yaml | head -1)
    [ -n "$report" ] || { tail -20 "$work/log.txt"; echo "FAIL: no run report in $dir"; exit 1; }
    echo "job $label $r $rc $(tail -1 "$work/time.txt") $report" >> "$work/runs.txt"
    if [ "$r" = 1 ]; then
      cp "$(find "$dir" -name fitted_data.h5 | head -1)" "$work/fitted_$label.h5"
      cp "$(find "$dir" -path '*nlsq*' -name 'parameters.json' | head -1)" "$work/parameters_$label.json"
    fi
    if [ "$synth" = 1 ]; then
      synthesize "$flag" "$work/synth.h5"
      echo "synth $label $r 0 $(tail -1 "$work/time.txt") -" >> "$work/runs.txt"
      rm -f "$work/synth.h5"
    fi
    # The report is read below; the result files are not needed past the first repeat.
    find "$dir" -name 'fitted_data.*' -delete
  done
done
h5diff "$work/fitted_small_pages.h5" "$work/fitted_huge_pages.h5" > /dev/null ||
  { echo "FAIL: fitted_data.h5 differs between the two variants"; exit 1; }
cmp -s <(grep -v -i 'time\|timestamp\|date' "$work/parameters_small_pages.json") \
  <(grep -v -i 'time\|timestamp\|date' "$work/parameters_huge_pages.json") ||
  { echo "FAIL: parameters.json differs between the two variants"; exit 1; }

/usr/bin/python3 - "$work/runs.txt" "$out/huge_pages_${stamp}" "$ranks" "$frames" "$iterations" \
  "$thp" <<'PY'
import json, platform, socket, statistics, sys, yaml
runs_file, dest, ranks, frames, iterations, thp = sys.argv[1:7]
phases = ["load", "initial_scaling", "fit", "write_outputs", "write_fitted_data",
          "write_fitted_data_npz"]
runs = []
for line in open(runs_file):
    kind, label, rep, rc, wall, user, sys_s, maxrss_kb, report = line.split()
    run = {"what": kind, "variant": label, "repeat": int(rep), "exit_code": int(rc),
           "wall_s": float(wall), "user_s": float(user), "sys_s": float(sys_s),
           "max_rss_mib_largest_process": int(maxrss_kb) / 1024}
    if kind == "job":
        rep_doc = yaml.safe_load(open(report))
        t = rep_doc.get("timing_seconds", {})
        run["phases_s_slowest_rank"] = {p: t[p]["max"] for p in phases if p in t}
        peaks = rep_doc.get("memory", {}).get("peak_rss_bytes", [])
        run["peak_rss_mib_per_rank"] = [p / 2**20 for p in peaks]
    runs.append(run)

def med(kind, label, get):
    return statistics.median(get(r) for r in runs if r["what"] == kind and r["variant"] == label)

summary = {}
for kind in ("job", "synth"):
    if not any(r["what"] == kind for r in runs):
        continue
    s = {}
    for label in ("small_pages", "huge_pages"):
        s[label] = {k: med(kind, label, lambda r, k=k: r[k]) for k in ("wall_s", "user_s", "sys_s")}
        if kind == "job":
            s[label]["phases_s"] = {p: med(kind, label, lambda r, p=p: r["phases_s_slowest_rank"][p])
                                    for p in phases}
            s[label]["peak_rss_mib_rank0"] = med(kind, label, lambda r: r["peak_rss_mib_per_rank"][0])
    pairs = [(a["wall_s"], b["wall_s"]) for a in runs for b in runs
             if a["what"] == b["what"] == kind and a["repeat"] == b["repeat"]
             and a["variant"] == "small_pages" and b["variant"] == "huge_pages"]
    ratios = sorted(a / b for a, b in pairs)
    s["wall_ratio_small_over_huge"] = {"median": statistics.median(ratios), "min": ratios[0],
                                       "max": ratios[-1]}
    summary[kind] = s
doc = {"benchmark": "large buffers on transparent huge pages: one binary, HOMODYNE_NO_HUGE_PAGES=1 "
                    "(small_pages) against the default (huge_pages), alternating runs",
       "dataset": f"laminar_flow, 23 angles x {frames} frames (homodyne-synth, seed 5)",
       "ranks": int(ranks), "threads_per_rank": 1, "fit_max_iterations": int(iterations),
       "transparent_hugepage_enabled": thp, "host": socket.gethostname(),
       "machine": platform.machine(), "summary": summary, "runs": runs,
       "same_results": "fitted_data.h5 (h5diff) and parameters.json of the two variants' first "
                       "runs: no difference"}
json.dump(doc, open(dest + ".json", "w"), indent=1)
with open(dest + ".md", "w") as md:
    md.write(f"# Huge pages, 23 x {frames}, {ranks} ranks (THP: {thp})\n\n")
    md.write("Medians of alternating runs of one binary; ratio = small pages / huge pages, "
             "pair by pair (median, min-max).\n\n")
    md.write("| what | variant | wall | user | sys | load | initial_scaling | fit | "
             "write_fitted_data | write_fitted_data_npz | peak RSS rank 0 |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|\n")
    for kind, s in summary.items():
        for label in ("small_pages", "huge_pages"):
            v = s[label]
            ph = v.get("phases_s", {})
            cells = [f"{ph[p]:.2f} s" if p in ph else "" for p in
                     ("load", "initial_scaling", "fit", "write_fitted_data", "write_fitted_data_npz")]
            rss = f"{v['peak_rss_mib_rank0']:.0f} MiB" if "peak_rss_mib_rank0" in v else ""
            md.write(f"| {kind} | {label} | {v['wall_s']:.2f} s | {v['user_s']:.2f} s | "
                     f"{v['sys_s']:.2f} s | " + " | ".join(cells) + f" | {rss} |\n")
        q = s["wall_ratio_small_over_huge"]
        md.write(f"| {kind} | ratio (wall) | {q['median']:.2f}x ({q['min']:.2f}-{q['max']:.2f}) "
                 "| | | | | | | | |\n")
print(json.dumps(summary, indent=1))
PY
