#!/usr/bin/env bash
# `homodyne batch` as a Slurm job array: jobscripts/batch.sbatch submitted unchanged with
# `sbatch --array=0-1 --wait`, BATCH='batch_%a.yaml', one node and 2 ranks (groups of 1)
# per element. Both elements end 0, each wrote the summary of its own two tasks (all ok),
# each ran on an emulated node, and every task's answer is bit for bit that of the same
# batch file run with a plain mpiexec. An array whose BATCH has no %a is refused (exit 2)
# before any fit.
source "$(dirname "$0")/lib.sh"
make_data
for a in 0 1; do
  cat > "$work/batch_$a.yaml" <<YAML
output_root: results_$a
group_size: 1
defaults:
  config: cfg.yaml
  method: nlsq
tasks:
  - {name: e${a}_default}
  - name: e${a}_start
    overrides: {initial_parameters: {values: [$((10000 + 5000 * a)), -0.2, 0]}}
YAML
  # The reference: the same tasks under output_root plain_<a> (--output-dir would move only
  # the summary, not the tasks' directories).
  sed "s/^output_root: .*/output_root: plain_$a/" "$work/batch_$a.yaml" > "$work/plain_$a.yaml"
  timeout 120 "$mpiexec" -n 2 "$bindir/homodyne" batch "$work/plain_$a.yaml" \
    > "$work/plain_$a.log" 2>&1 || { cat "$work/plain_$a.log"; fail "plain batch $a"; }
done

job=$(BATCH="$work/batch_%a.yaml" GROUP_SIZE=1 submit_wait 150 --array=0-1 \
  --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=5 "$jobscripts/batch.sbatch")
code=$?
[ $code -eq 0 ] || { show_job_output; fail "sbatch --array --wait exit $code (job ${job:-?})"; }
for a in 0 1; do
  grep -q "batch complete" "$work/homodyne-batch-"*.out || { show_job_output; fail "no 'batch complete'"; }
  "$py" - "$work/results_$a/batch_summary.json" "$a" <<'PY' || fail "element $a summary"
import json, sys
s = json.load(open(sys.argv[1]))
a = sys.argv[2]
assert s["exit_code"] == 0 and s["world_ranks"] == 2, (s["exit_code"], s["world_ranks"])
names = sorted(t["task"] for t in s["tasks"])
assert names == [f"e{a}_default", f"e{a}_start"], names
assert all(t["status"] == "ok" and t["ranks"] == 1 for t in s["tasks"]), s["tasks"]
PY
  for t in default start; do
    host=$("$py" -c "import yaml,sys; print(*yaml.safe_load(open(sys.argv[1]))['machine']['hostnames'])" \
      "$work/results_$a/e${a}_$t/run_report.yaml") || fail "report of e${a}_$t"
    case $host in n1 | n2) ;; *) fail "task e${a}_$t ran on '$host', not on an emulated node" ;; esac
    same_answer "$work/plain_$a/e${a}_$t" "$work/results_$a/e${a}_$t" || fail "task e${a}_$t differs"
  done
done
n_out=$(ls "$work"/homodyne-batch-*.out | wc -l)
[ "$n_out" -eq 2 ] || fail "$n_out job output files (expected one per array element)"

# The script refuses an array over one batch file (exit 2, nothing run).
rm -f "$work"/homodyne-batch-*.out
BATCH="$work/batch_0.yaml" submit_wait 60 --array=0-1 --nodes=1 --ntasks-per-node=1 --cpus-per-task=1 \
  --time=5 "$jobscripts/batch.sbatch" > /dev/null
code=$?
[ $code -eq 2 ] || { show_job_output; fail "array over one batch file: exit $code (expected 2)"; }
grep -q "has no %a" "$work"/homodyne-batch-*.out || { show_job_output; fail "no message about %a"; }
echo "PASS: array job $job"
