#!/usr/bin/env bash
# A lost node by a cut link under a real Slurm: jobscripts/nlsq_checkpoint_chain.sbatch
# submitted unchanged on two of the cluster's three nodes (one rank each), a checkpoint after
# every iteration. The ranks hold after iteration 2 (HOMODYNE_PAUSE_AT), a checkpoint on
# disk; then node n2's link to the bridge is set down (scripts/cluster.sh cut-link): its
# processes live on but nothing reaches it, and no socket anywhere sees an error. Neither
# Open MPI nor TCP ends the job (the rank on n1 waits in its collective); slurmctld does,
# once n2 has not answered for SlurmdTimeout: it sets n2 down, kills the job's processes on
# n1 and requeues the job (the script's --requeue). Asserted: the job ended and its rerun on
# n1 and n3 resumed from the checkpoint and gave the uninterrupted run's answer bit for bit,
# within a bound computed from the cluster's own settings; the job ran on until n2 was
# declared down, SlurmdTimeout after its last answer (so Slurm ended it, not MPI); after the
# link is restored, Slurm takes n2 back by itself and no process of the old job is left on
# it. The link is restored whatever happened.
source "$(dirname "$0")/lib.sh"
make_data "optimization:
  streaming:
    checkpoint_frequency: 1"
plain_run 2 "$work/plain"

node2() { HOMODYNE_CLUSTER_NODE=2 "$cluster" "$@"; }
n2_state() { timeout 5 sinfo -h -n n2 -o %T 2> /dev/null; }
n2_usable() { n2_state | grep -qE '^(idle|mixed|allocated)$'; }
n2_homodyne() { node2 node-pids | awk -v exe="$(readlink -f "$bindir/homodyne")" '$2 == exe {print $1}'; }
# Whatever happened: the link up again; a node that did not come back by itself is healed
# (its processes killed, slurmd started again) so the next test finds three nodes.
restore() {
  node2 restore-link > /dev/null 2>&1
  kill "${poller:-}" 2> /dev/null
  if ! n2_usable || [ -n "$(n2_homodyne)" ]; then
    node2 kill-node > /dev/null 2>&1
    node2 revive-node > /dev/null 2>&1
  fi
}
trap 'code=$?; restore; (exit $code); cleanup' EXIT

# The bound, from the cluster's settings: slurmctld pings the nodes every SlurmdTimeout/3 s
# and sets a node down once it has not answered for SlurmdTimeout; a ping to a silent node
# probably waits MessageTimeout before it fails, and the next round waits for the last one
# (twice MessageTimeout allowed; docs/hpc-guide.md has the measured times); the job's processes on the other node get KillWait s between SIGTERM and SIGKILL;
# the requeued job is held cred_expire + 1 s; the ranks may still be paused
# (HOMODYNE_PAUSE_AT, 10 s) when the link is cut; 30 s for the rerun's start and fit on this
# loaded 2-core machine.
config=$(timeout 10 scontrol show config)
setting() { echo "$config" | sed -n "s/^$1 *= *\([0-9]*\).*/\1/p" | head -1; }
slurmd_timeout=$(setting SlurmdTimeout)
message_timeout=$(setting MessageTimeout)
kill_wait=$(setting KillWait)
cred_expire=$(echo "$config" | sed -n 's/^AuthInfo .*cred_expire=\([0-9]*\).*/\1/p')
[ -n "$slurmd_timeout" ] && [ -n "$message_timeout" ] && [ -n "$kill_wait" ] && [ -n "$cred_expire" ] ||
  fail "cannot read SlurmdTimeout, MessageTimeout, KillWait or cred_expire from scontrol show config"
bound=$((slurmd_timeout + slurmd_timeout / 3 + 2 * message_timeout + kill_wait + cred_expire + 1 + 10 + 30))

HOMODYNE_PAUSE_AT=nlsq_iter:2 CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm \
  submit_wait $((bound + 60)) --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=5 \
  "$jobscripts/nlsq_checkpoint_chain.sbatch" > "$work/sbatch.out" 2>&1 &
sbatch_pid=$!

wait_chain_paused "paused at nlsq_iter 2"
nodes=$(timeout 5 squeue -h -j "$job" -o %N)
[ "$nodes" = "n[1-2]" ] || fail "job $job runs on '$nodes', expected both nodes n[1-2]"
[ -n "$(find "$work/slurm/checkpoint" -name "nlsq_*.h5" 2> /dev/null)" ] || fail "no checkpoint in $work/slurm/checkpoint before the link was cut"

# slurmctld's log from here on (it is kept across cluster restarts, and job ids restart).
ctld_log=$(dirname "$SLURM_CONF")/ctld/slurmctld.log
log_from=$(($(wc -l < "$ctld_log") + 1))
ctld_log_now() { tail -n +"$log_from" "$ctld_log"; }
node2 cut-link || fail "could not cut node n2's link"
cut=$SECONDS
cut_epoch=$(date +%s)
# The timeline, for the message and the check of what ended the job: n2's state and the
# job's state, each change with the seconds since the cut.
(
  last=""
  while :; do
    now="n2 $(n2_state) job $(timeout 5 squeue -h -j "$job" -o %T 2> /dev/null)"
    [ "$now" != "$last" ] && echo "$((SECONDS - cut)) $now"
    last=$now
    sleep 1
  done
) > "$work/timeline" 2>&1 &
poller=$!

wait $sbatch_pid
code=$?
took=$((SECONDS - cut))
kill $poller 2> /dev/null
wait $poller 2> /dev/null
echo "timeline after the cut (s, states):"
sed 's/^/  /' "$work/timeline"
[ $code -eq 0 ] || { cat "$work/sbatch.out"; show_job_output; tail -n 20 "$(dirname "$SLURM_CONF")/ctld/slurmctld.log"; fail "sbatch --wait exit $code (job $job)"; }
echo "the job ended and its rerun finished $took s after n2's link was cut (bound $bound s:" \
  "SlurmdTimeout $slurmd_timeout, MessageTimeout $message_timeout, KillWait $kill_wait," \
  "cred_expire $cred_expire)"
[ $took -le $bound ] || fail "the cut link cost $took s, more than the bound of $bound s"
# What ended the job: slurmctld's requeue for the failure of n2 (its log says so), which
# came no sooner than Slurm's criterion allows (n2's last answer, at most one ping
# interval before the cut, SlurmdTimeout old); until then the job ran on (the first poll
# that saw it leave RUNNING is not earlier, within the poll's second).
stamp=$(ctld_log_now | sed -n "s/^\[\([^].]*\).*requeue job JobId=$job due to failure of node n2.*/\1/p" | head -1)
[ -n "$stamp" ] || { ctld_log_now | tail -n 20; fail "slurmctld's log has no requeue of job $job for the failure of n2"; }
requeued_at=$(($(date -d "$stamp" +%s) - cut_epoch))
ended_at=$(awk '$5 != "RUNNING" {print $1; exit}' "$work/timeline")
echo "slurmctld requeued job $job for the failure of n2 $requeued_at s after the cut"
[ "$requeued_at" -ge $((slurmd_timeout - slurmd_timeout / 3 - 1)) ] ||
  fail "requeued $requeued_at s after the cut, sooner than SlurmdTimeout ($slurmd_timeout s) less one ping interval"
[ -n "$ended_at" ] && [ "$ended_at" -ge $((requeued_at - 1)) ] ||
  fail "the job left RUNNING ${ended_at:-never} s after the cut, before slurmctld requeued it: not ended by Slurm"
for line in "restart 1: resuming from $work/slurm/checkpoint" \
  "resuming NLSQ from" \
  "fit finished after 1 restart(s)"; do
  grep -qF "$line" "$out" || { show_job_output; fail "job output lacks: $line"; }
done
expect_resumed_report "$work/slurm" n1 n3
same_answer "$work/plain" "$work/slurm" || fail "the answer resumed on the remaining nodes differs from the uninterrupted run"

# The link back. On its own, slurmctld neither pings a node it has set down for not
# responding nor learns what still runs there until the node registers again, which it asks
# for only every ~20 ping rounds (measured: n2 back and its old rank, spinning in its
# collective since the cut, killed ~155 s after the link came back). What a site does once
# the link is repaired: `scontrol reconfigure` makes every slurmd register. That returns n2
# to service (ReturnToService=2); the old step it reports is killed as an orphan by a
# registration that comes after the job's record is gone (MinJobAge after its end), not by
# one while the job's record is still there (measured: a second reconfigure 2 s after the
# first, the job just ended, left the rank running).
node2 restore-link || fail "could not restore n2's link"
back=$SECONDS
timeout 20 scontrol reconfigure || fail "scontrol reconfigure"
for _ in $(seq $((slurmd_timeout * 2))); do
  n2_usable && break
  sleep 1
done
n2_usable || fail "n2 did not return to service within $((SECONDS - back)) s of its link coming back (state $(n2_state))"
echo "n2 back in service $((SECONDS - back)) s after its link came back; old rank still there: $(n2_homodyne | wc -l)"
for _ in $(seq 60); do
  timeout 5 scontrol show job "$job" > /dev/null 2>&1 || break
  sleep 1
done
timeout 5 scontrol show job "$job" > /dev/null 2>&1 && fail "job $job's record still there 60 s after its end (MinJobAge?)"
timeout 20 scontrol reconfigure || fail "scontrol reconfigure"
for _ in $(seq 30); do
  [ -z "$(n2_homodyne)" ] && break
  sleep 1
done
left=$(n2_homodyne)
[ -z "$left" ] || fail "the old job's rank is still running on n2 (pid $left) $((SECONDS - back)) s after the link came back"
ctld_log_now | grep -q "Orphan StepId=$job\.0 reported on node n2" ||
  fail "slurmctld's log does not name the old step $job.0 on n2 an orphan (who ended it?)"
echo "the old job's rank on n2 ended by slurmctld as an orphan $((SECONDS - back)) s after the link came back"
echo "PASS: job $job"
