#!/usr/bin/env bash
# jobscripts/nlsq_single_node.sbatch submitted unchanged with `sbatch --wait` to one
# emulated node (2 tasks, 1 core each): the job exits 0, ran on a node of the cluster
# (not on this host's name), and its answer is bit for bit that of a plain mpiexec run.
source "$(dirname "$0")/lib.sh"
make_data
plain_run 2 "$work/plain"

job=$(CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm submit_wait 120 \
  --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=5 "$jobscripts/nlsq_single_node.sbatch")
code=$?
[ $code -eq 0 ] || { show_job_output; fail "sbatch --wait exit $code (job ${job:-?})"; }
[ -f "$work/homodyne-nlsq-$job.out" ] || fail "no job output homodyne-nlsq-$job.out (--output=%x-%j.out)"
grep -q "^results in $work/slurm" "$work/homodyne-nlsq-$job.out" || { show_job_output; fail "no 'results in' line"; }
"$py" - "$work/slurm/run_report.yaml" "$(hostname)" <<'PY' || fail "run report"
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
m = r["machine"]
assert r["status"]["exit_code"] == 0, r["status"]
assert m["ranks"] == 2, m
assert len(m["hostnames"]) == 1 and m["hostnames"][0] in ("n1", "n2"), \
    f"ran on {m['hostnames']}, not on one emulated node (this host is {sys.argv[2]})"
print("job ran on", m["hostnames"][0])
PY
same_answer "$work/plain" "$work/slurm" || fail "the Slurm job's answer differs from the plain run"
echo "PASS: job $job"
