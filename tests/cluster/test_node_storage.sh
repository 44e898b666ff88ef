#!/usr/bin/env bash
# Storage faults seen by one node only, under a real Slurm (jobscripts/nlsq_checkpoint_chain.sbatch
# unchanged, two nodes, one rank each). A mount made inside one emulated node's mount
# namespace is seen by that node's ranks and by no other node, as a node-local fault is.
#  1. A checkpoint read that fails on one node during --resume: on n2 the newest checkpoint
#     is a corrupt copy (bytes overwritten in the middle, bind-mounted over the file). As
#     docs/checkpoints.md promises, the ranks agree to skip it with a warning naming it and
#     resume from the one before; the answer is the uninterrupted run's, bit for bit.
#  2. A node whose checkpoint filesystem is really full: a 256 KiB tmpfs on n1 (where rank 0
#     writes the checkpoints), filled before the job. As docs/reliability.md promises, every
#     checkpoint write fails with a warning, the fit goes on, exit 0, the answer bit for bit.
source "$(dirname "$0")/lib.sh"
make_data "optimization:
  streaming:
    checkpoint_frequency: 1"
plain_run 2 "$work/plain"

on_node() { HOMODYNE_CLUSTER_NODE=$1 "$cluster" node-exec "${@:2}"; }
undo() {
  on_node 2 umount "$bad_target" > /dev/null 2>&1
  on_node 1 umount "$work/full" > /dev/null 2>&1
}
bad_target=/nonexistent
trap 'code=$?; undo; (exit $code); cleanup' EXIT

# --- 1. the newest checkpoint unreadable on n2 only ---------------------------------------
# Checkpoints of the first iterations: the same fit stopped by a signal after iteration 3
# (exit 75), on this host.
HOMODYNE_SIGNAL_AT=nlsq_iter:3 timeout 120 "$mpiexec" -n 2 "$bindir/homodyne" --config "$work/cfg.yaml" \
  --output-dir "$work/stopped" --checkpoint-dir "$work/ck" > "$work/stopped.log" 2>&1
code=$?
[ $code -eq 75 ] || { cat "$work/stopped.log"; fail "the stopped run exited $code, expected 75"; }
mapfile -t files < <(find "$work/ck" -name 'nlsq_*.h5' | sort)
[ ${#files[@]} -ge 2 ] || fail "expected at least two checkpoints, found: ${files[*]}"
bad_target=${files[-1]}
cp "$bad_target" "$work/corrupt.h5"
size=$(stat -c %s "$work/corrupt.h5")
# Garbage over the middle half of the file: the datasets' chunks (and their checksums).
dd if=/dev/urandom of="$work/corrupt.h5" bs=1 seek=$((size / 4)) count=$((size / 2)) conv=notrunc status=none
on_node 2 mount --bind "$work/corrupt.h5" "$bad_target" || fail "cannot bind-mount the corrupt copy on n2"
cmp -s "$bad_target" "$work/corrupt.h5" && fail "the corrupt copy is visible outside n2"

CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/resumed CHECKPOINT_DIR=$work/ck \
  submit_wait 150 --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=5 \
  "$jobscripts/nlsq_checkpoint_chain.sbatch" > "$work/sbatch1.out" 2>&1
code=$?
job=$(head -1 "$work/sbatch1.out")
out=$work/homodyne-nlsq-chain-$job.out
[ $code -eq 0 ] || { show_job_output; fail "the resumed job exited $code"; }
grep -qF "restart 0: resuming from $work/ck" "$out" || { show_job_output; fail "the job did not resume"; }
grep -q "$(basename "$bad_target")" "$out" || { show_job_output; fail "no warning names the checkpoint unreadable on n2"; }
grep -qF "resuming NLSQ from ${files[-2]}" "$out" || { show_job_output; fail "the job did not resume from the checkpoint before ${files[-1]}"; }
same_answer "$work/plain" "$work/resumed" || fail "resumed past a checkpoint unreadable on one node: the answer differs"
# (The resumed run replaced the checkpoints; unlinking the file detached the mount on n2.)
on_node 2 umount "$bad_target" > /dev/null 2>&1

# --- 2. the checkpoint filesystem full on n1 ----------------------------------------------
mkdir -p "$work/full"
on_node 1 mount -t tmpfs -o size=256k tmpfs "$work/full" || fail "cannot mount a tmpfs on n1"
on_node 1 mkdir "$work/full/ck"
on_node 1 dd if=/dev/zero of="$work/full/filler" bs=4k status=none 2> /dev/null
on_node 1 df -k "$work/full" | tail -1
on_node 1 sh -c "echo x > '$work/full/probe'" 2> /dev/null && fail "the tmpfs on n1 is not full"
CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/fullrun CHECKPOINT_DIR=$work/full/ck \
  submit_wait 150 --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=5 \
  "$jobscripts/nlsq_checkpoint_chain.sbatch" > "$work/sbatch2.out" 2>&1
code=$?
job=$(head -1 "$work/sbatch2.out")
out=$work/homodyne-nlsq-chain-$job.out
[ $code -eq 0 ] || { show_job_output; fail "with the checkpoint filesystem full on n1 the job exited $code"; }
grep -qi "no space left on device" "$out" || { show_job_output; fail "no warning says the checkpoint filesystem is full"; }
grep -qF "fit finished after 0 restart(s)" "$out" || { show_job_output; fail "the fit did not finish"; }
same_answer "$work/plain" "$work/fullrun" || fail "with the checkpoint filesystem full the answer differs"
echo "PASS"
