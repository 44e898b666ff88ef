#!/usr/bin/env bash
# The checkpoint-restart chain under a real Slurm: jobscripts/nlsq_checkpoint_chain.sbatch
# submitted unchanged (two nodes, one rank each) with `sbatch --wait`. The ranks hold
# after iteration 1 (HOMODYNE_PAUSE_AT) until the test sends the time-limit signal for
# real: `scancel --signal=USR1 --batch` to the batch shell, which forwards it to srun and
# the ranks; homodyne checkpoints and exits 75; the script runs `scontrol requeue`; Slurm
# reruns the same job id (SLURM_RESTART_COUNT=1) after its requeue hold; the rerun finds
# the checkpoint, adds --resume and finishes. Asserted: the job's exit 0, each step of the
# chain in its output, the checkpoint read on the rerun, and the answer bit for bit that of
# an uninterrupted plain run.
source "$(dirname "$0")/lib.sh"
make_data
plain_run 2 "$work/plain"

HOMODYNE_PAUSE_AT=nlsq_iter:1 CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm \
  submit_wait 150 --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=5 \
  "$jobscripts/nlsq_checkpoint_chain.sbatch" > "$work/sbatch.out" 2>&1 &
sbatch_pid=$!

wait_chain_paused "paused at nlsq_iter 1"
timeout 10 scancel --signal=USR1 --batch "$job" || fail "scancel --signal=USR1 --batch $job"
signalled=$SECONDS

wait $sbatch_pid
code=$?
[ $code -eq 0 ] || { cat "$work/sbatch.out"; show_job_output; fail "sbatch --wait exit $code (job $job)"; }
echo "chain ended $((SECONDS - signalled)) s after the signal (requeue hold: cred_expire 10 s + 1)"
for line in "time limit in 120 s: asking homodyne to checkpoint" \
  "checkpointed (exit 75): requeueing job $job" \
  "restart 1: resuming from $work/slurm/checkpoint" \
  "resuming NLSQ from" \
  "fit finished after 1 restart(s)"; do
  grep -qF "$line" "$out" || { show_job_output; fail "job output lacks: $line"; }
done
expect_resumed_report "$work/slurm" n1 n2
same_answer "$work/plain" "$work/slurm" || fail "the resumed chain's answer differs from the uninterrupted run"
echo "PASS: job $job"
