#!/usr/bin/env bash
# fitted_data.h5's write at APS-U size: a laminar_flow set of 23 angles × FRAMES frames made by
# homodyne-synth (the whole-job benchmark's truth, contrast, offset, noise and seed), fitted at
# RANKS ranks by two homodyne binaries in alternation — OLD (e.g. main's) and this build's —
# REPEATS times each. Per run: rank 0's time from the file's creation to its rename (its
# progress line, or the sum of its split where the write was too short for one; the job is
# stopped there, before fitted_data.npz), and each rank's own split
# of the write (the debug line of
# outputs/fitted_data.cpp: read, model, slabs, and — new binaries — close, fsync and rename).
# The disk's own rate is measured beside them: the same number of bytes written with dd and
# fsync'ed (the floor of any write that is synced before it is renamed into place), and
# written without the fsync (the page cache). Every file made is removed at the end.
# Writes docs/bench/fitted_data_write_<date>.json and .md.
#   OLD=/path/to/old/homodyne bash bench/run_fitted_data_write_bench.sh [build dir] [output dir]
# Environment: OLD (required), RANKS (2), FRAMES (2500), REPEATS (3), ITERATIONS (5: the fit
# is cut short, its answer does not change the file's size or the write's work), WORK (a
# directory on the disk under test, default $TMPDIR or /tmp), DATA (an existing data file of
# that set, made by an earlier run's homodyne-synth call: linked instead of generated).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
old=${OLD:?set OLD to the homodyne binary to compare against}
ranks=${RANKS:-2}
frames=${FRAMES:-2500}
repeats=${REPEATS:-3}
iterations=${ITERATIONS:-5}
work=$(mktemp -d "${WORK:-${TMPDIR:-/tmp}}/homodyne_fitted_write.XXXXXX")
trap 'rm -rf "$work"' EXIT
new="$build/apps/homodyne"
angles=$(even_angles 23)

write_truth_fit_config "$work/data.h5" "$iterations" > "$work/config.yaml"
if [ -n "${DATA:-}" ]; then
  ln -s "$(realpath "$DATA")" "$work/data.h5"
else
  echo "== generating 23 x $frames"
  "$build/apps/homodyne-synth" --config "$work/config.yaml" -o "$work/data.h5" \
    --frames "$frames" --angles "$angles" --contrast 0.3 --offset 1.0 --noise 0.01 --seed 5 \
    --force -q
fi

disk_rate() {  # $1 = bytes, $2 = label; appends "disk LABEL seconds_synced seconds_cached"
  local mib=$(($1 / 1048576)) t0 t1 t2
  t0=$(date +%s.%N)
  dd if=/dev/zero of="$work/dd.bin" bs=1M count="$mib" conv=fsync status=none
  t1=$(date +%s.%N)
  rm -f "$work/dd.bin"
  dd if=/dev/zero of="$work/dd.bin" bs=1M count="$mib" status=none
  t2=$(date +%s.%N)
  rm -f "$work/dd.bin"
  sync
  echo "disk $2 $(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc)" >> "$work/runs.txt"
}

# A job is stopped once its fitted_data.h5 is in place (rank 0's line "writing
# fitted_data.h5: ... in S s", printed after the rename, and its debug line; the other ranks
# log nothing):
# fitted_data.npz, written next, is not measured here. The write's time is that line's S
# (rank 0, from the file's creation to its rename); a write too short for that line (the job
# then runs to its end) is timed by the sum of rank 0's split.
run_until_written() {  # $1 = binary, $2 = output directory, $3 = log
  mpiexec -n "$ranks" "$1" --config "$work/config.yaml" --output-dir "$2" --threads 1 -vv \
    > "$3" 2>&1 &
  local job=$! seen
  while kill -0 "$job" 2> /dev/null; do
    seen=$(grep -c 'fitted_data.h5: rank [0-9]*: reading' "$3" 2> /dev/null || true)
    if [ "${seen:-0}" -ge 1 ] && grep -q 'writing fitted_data.h5: .* in [0-9.]* s' "$3"; then
      kill "$job"
      break
    fi
    sleep 0.5
  done
  wait "$job" 2> /dev/null || true
}

file_bytes=0
for r in $(seq 1 "$repeats"); do
  for label in old new; do
    bin=$old; [ $label = new ] && bin=$new
    dir="$work/out_${label}_$r"
    log="$work/log_${label}_$r.txt"
    echo "== $label, repeat $r, $ranks ranks"
    run_until_written "$bin" "$dir" "$log"
    file=$(find "$dir" -name fitted_data.h5 | head -1)
    [ -n "$file" ] || { tail -20 "$log"; echo "FAIL: no fitted_data.h5 in $dir"; exit 1; }
    file_bytes=$(stat -c %s "$file")
    write_s=$(sed -n 's/.*writing fitted_data.h5: .* in \([0-9.]*\) s.*/\1/p' "$log" | tail -1)
    # A short write prints no progress line: then rank 0's split (its debug line) summed.
    [ -n "$write_s" ] || write_s=$(sed -n 's/.*fitted_data.h5: rank 0: reading the data \([0-9.]*\) s, the model and the per-angle pairs \([0-9.]*\) s, .* \([0-9.]*\) s, closing, syncing and renaming the file \([0-9.]*\) s.*/\1 \2 \3 \4/p' "$log" |
      awk '{print $1 + $2 + $3 + $4}' | tail -1)
    echo "run $label $r $write_s $log $file_bytes" >> "$work/runs.txt"
    # The first run's file against this one's: the same values and attributes.
    if [ "$r$label" = 1old ]; then
      cp "$file" "$work/reference.h5"
    else
      h5diff "$work/reference.h5" "$file" > /dev/null ||
        { echo "FAIL: $file differs from the old binary's"; exit 1; }
    fi
    rm -rf "$dir"
    sync
  done
  [ "$r" = 1 ] && disk_rate "$file_bytes" "after_repeat_1"
done
rm -f "$work/reference.h5"
disk_rate "$file_bytes" "at_end"

/usr/bin/python3 - "$work/runs.txt" "$out/fitted_data_write_${stamp}" "$ranks" "$frames" \
  "$old" "$new" "$iterations" <<'PY'
import json, platform, re, socket, statistics, sys, yaml
runs_file, dest, ranks, frames, old, new, iterations = sys.argv[1:8]
line_re = re.compile(r"fitted_data\.h5: rank (\d+): reading the data ([\d.]+) s, the model and the "
                     r"per-angle pairs ([\d.]+) s, the arrays' slabs \([^)]*\) ([\d.]+) s"
                     r"(?:, closing, syncing and renaming the file ([\d.]+) s)?")
runs, disk = [], []
for line in open(runs_file):
    f = line.split()
    if f[0] == "disk":
        disk.append({"when": f[1], "bytes_synced_seconds": float(f[2]),
                     "bytes_cached_seconds": float(f[3])})
        continue
    _, label, rep, write_s, log, size = f
    ranks_split = {}
    for m in line_re.finditer(open(log, errors="replace").read()):
        ranks_split[int(m.group(1))] = {
            "read": float(m.group(2)), "model": float(m.group(3)), "slabs": float(m.group(4)),
            "close_fsync_rename": float(m.group(5)) if m.group(5) else None}
    runs.append({"binary": label, "repeat": int(rep),
                 "write_fitted_data_seconds_rank0": float(write_s),
                 "file_bytes": int(size),
                 "per_rank_split_seconds": [ranks_split[k] for k in sorted(ranks_split)]})
summary = {}
for label in ("old", "new"):
    w = [x["write_fitted_data_seconds_rank0"] for x in runs if x["binary"] == label]
    summary[label] = {"write_fitted_data_median_s": statistics.median(w),
                      "write_fitted_data_min_s": min(w), "write_fitted_data_max_s": max(w)}
    commits = [x["per_rank_split_seconds"][0]["close_fsync_rename"] for x in runs
               if x["binary"] == label and x["per_rank_split_seconds"]
               and x["per_rank_split_seconds"][0]["close_fsync_rename"] is not None]
    if commits:
        summary[label]["rank0_close_fsync_rename_median_s"] = statistics.median(commits)
        summary[label]["write_without_close_fsync_rename_median_s"] = statistics.median(
            [x["write_fitted_data_seconds_rank0"] - x["per_rank_split_seconds"][0]["close_fsync_rename"]
             for x in runs if x["binary"] == label and x["per_rank_split_seconds"]
             and x["per_rank_split_seconds"][0]["close_fsync_rename"] is not None])
doc = {"benchmark": "fitted_data.h5 write phase, old vs new binary, alternating runs",
       "dataset": f"laminar_flow, 23 angles x {frames} frames (homodyne-synth, seed 5)",
       "ranks": int(ranks), "threads_per_rank": 1, "fit_max_iterations": int(iterations),
       "old_binary": old, "new_binary": new, "host": socket.gethostname(),
       "machine": platform.machine(), "summary": summary, "disk": disk, "runs": runs,
       "files_identical": "h5diff of every run's file against the first old run's: no difference"}
json.dump(doc, open(dest + ".json", "w"), indent=1)
with open(dest + ".md", "w") as md:
    md.write(f"# fitted_data.h5 write, 23 x {frames}, {ranks} ranks\n\n")
    md.write("Rank 0's write of the file (creation to rename, its progress line), median (min-max) of "
             f"{len([x for x in runs if x['binary'] == 'old'])} alternating runs; rank 0's close + "
             "fsync + rename where the binary reports it.\n\n")
    md.write("| binary | write_fitted_data | of which close, fsync, rename (rank 0) | file |\n|---|---|---|---|\n")
    for label in ("old", "new"):
        s = summary[label]
        c = s.get("rank0_close_fsync_rename_median_s")
        md.write(f"| {label} | {s['write_fitted_data_median_s']:.2f} s ({s['write_fitted_data_min_s']:.2f}-"
                 f"{s['write_fitted_data_max_s']:.2f}) | {'%.2f s' % c if c is not None else 'not reported'} | "
                 f"{runs[0]['file_bytes'] / 1e6:.0f} MB |\n")
    md.write("\nThe disk, the same bytes with dd: ")
    md.write("; ".join(f"{d['when']}: {d['bytes_synced_seconds']:.2f} s fsync'ed, "
                       f"{d['bytes_cached_seconds']:.2f} s to the page cache" for d in disk) + ".\n")
print(json.dumps(summary, indent=1))
PY
