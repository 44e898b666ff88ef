#!/usr/bin/env bash
# A lost node under a real Slurm: jobscripts/nlsq_checkpoint_chain.sbatch submitted unchanged
# on two of the cluster's three nodes (one rank each), checkpoints after every iteration. The
# ranks hold after iteration 2 (HOMODYNE_PAUSE_AT), a checkpoint on disk; then every process
# of node n2 is killed at once (slurmd, slurmstepd, the rank: a power loss). Asserted: the job
# does not hang — the controller declares n2 down, ends the job's step on n1 and requeues the
# job (the script's --requeue) —, the rerun gets the remaining nodes n1 and n3, resumes from
# the checkpoint and gives the answer of an uninterrupted run bit for bit, within the bound
# below. Node n2 is started again afterwards, whatever happened.
source "$(dirname "$0")/lib.sh"
make_data "optimization:
  streaming:
    checkpoint_frequency: 1"
plain_run 2 "$work/plain"

revive() { HOMODYNE_CLUSTER_NODE=2 "$cluster" revive-node > /dev/null 2>&1; }
trap 'code=$?; revive; (exit $code); cleanup' EXIT

# The bound: the controller notices a silent node within SlurmdTimeout (15 s here) and one
# ping interval, kills the job's remaining step and requeues it; the rerun is held
# cred_expire + 1 s (11 s) and then fits in a few seconds.
bound=120
HOMODYNE_PAUSE_AT=nlsq_iter:2 CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm \
  submit_wait 240 --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=5 \
  "$jobscripts/nlsq_checkpoint_chain.sbatch" > "$work/sbatch.out" 2>&1 &
sbatch_pid=$!

wait_chain_paused "paused at nlsq_iter 2"
nodes=$(timeout 5 squeue -h -j "$job" -o %N)
[ "$nodes" = "n[1-2]" ] || fail "job $job runs on '$nodes', expected both nodes n[1-2]"
[ -n "$(find "$work/slurm/checkpoint" -name "nlsq_*.h5" 2> /dev/null)" ] || fail "no checkpoint in $work/slurm/checkpoint before the node was lost"

HOMODYNE_CLUSTER_NODE=2 "$cluster" kill-node || fail "could not kill node n2"
lost=$SECONDS

wait $sbatch_pid
code=$?
took=$((SECONDS - lost))
[ $code -eq 0 ] || { cat "$work/sbatch.out"; show_job_output; tail -n 20 "$(dirname "$SLURM_CONF")/ctld/slurmctld.log"; fail "sbatch --wait exit $code (job $job)"; }
echo "the job ended and its rerun finished $took s after node n2 was lost (bound $bound s)"
[ $took -le $bound ] || fail "the lost node cost $took s, more than the bound of $bound s"
for line in "restart 1: resuming from $work/slurm/checkpoint" \
  "resuming NLSQ from" \
  "fit finished after 1 restart(s)"; do
  grep -qF "$line" "$out" || { show_job_output; fail "job output lacks: $line"; }
done
expect_resumed_report "$work/slurm" n1 n3
same_answer "$work/plain" "$work/slurm" || fail "the answer resumed on the remaining nodes differs from the uninterrupted run"
echo "PASS: job $job"
