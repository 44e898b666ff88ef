#!/usr/bin/env bash
# Every job script parses (bash -n), documents its parameters at the top, has an
# equivalent mpirun line in its comments, and calls homodyne with options that the
# current homodyne accepts (launcher options of sbatch/srun/mpirun/scontrol are listed).
set -uo pipefail
bindir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
help=$("$bindir/homodyne" --help 2>&1)
status=0
for f in "$root"/jobscripts/*.sbatch; do
  bash -n "$f" || { echo "FAIL: $f does not parse"; status=1; }
  head -20 "$f" | grep -q '^# Parameters\|^# .*Parameters' || { echo "FAIL: $f documents no parameters at the top"; status=1; }
  grep -q '^#.*mpirun ' "$f" || { echo "FAIL: $f has no equivalent mpirun line"; status=1; }
  # Every ${VAR:-default} parameter the script reads is documented in its comments.
  for var in $(grep -o '^[A-Z_]*=\${[A-Z_]*:-' "$f" | cut -d= -f1 | sort -u); do
    grep -q "^#.*\b$var\b" "$f" || { echo "FAIL: $f does not document $var"; status=1; }
  done
  for opt in $(grep -v '^[[:space:]]*#' "$f" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    case "$opt" in
      --job-name|--nodes|--ntasks-per-node|--cpus-per-task|--time|--output|--mpi|--cpu-bind|\
      --mem-bind|--map-by|--bind-to|--report-bindings|--hostfile|--signal|--requeue|\
      --ntasks|--exclusive|--open-mode|--dependency|--array) continue ;;
      --run-dir|--kind|--study|--ranks|--out) continue ;;  # bench/scaling_collect.py
    esac
    grep -q -- "$opt" <<<"$help" || { echo "FAIL: $f uses $opt, which homodyne does not accept"; status=1; }
  done
done

# The checkpoint-restart chain's control flow, with stand-ins for srun (a step that
# checkpoints on SIGUSR1 and exits 75, or finishes, or fails) and scontrol.
fake=$(mktemp -d); trap 'rm -rf "$fake"' EXIT
cat > "$fake/srun" <<'SH'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [ "$1" != fake-homodyne ]; do shift; done
echo "$*" >> "$FAKE/args"
ckpt=""; prev=""
for a in "$@"; do [ "$prev" = --checkpoint-dir ] && ckpt=$a; prev=$a; done
case $FAKE_MODE in
  finish) exit 0 ;;
  fail) exit 2 ;;
esac
trap 'mkdir -p "$ckpt"; echo state > "$ckpt/state"; exit 75' USR1
sleep 20 & wait $!
exit 0
SH
printf '#!/usr/bin/env bash\necho "$*" >> "$FAKE/scontrol.log"\n' > "$fake/scontrol"
chmod +x "$fake/srun" "$fake/scontrol"
chain="$root/jobscripts/nlsq_checkpoint_chain.sbatch"
export FAKE=$fake
env PATH="$fake:$PATH" FAKE_MODE=wait SLURM_JOB_ID=42 HOMODYNE=fake-homodyne \
  OUTPUT_DIR="$fake/out" bash "$chain" > "$fake/log1" 2>&1 &
pid=$!
for _ in $(seq 50); do [ -s "$fake/args" ] && break; sleep 0.1; done
sleep 0.5
kill -USR1 "$pid"
wait "$pid"; code=$?
[ $code -eq 0 ] && grep -q 'requeue 42' "$fake/scontrol.log" 2>/dev/null \
  || { echo "FAIL: chain did not requeue after exit 75 (exit $code)"; cat "$fake/log1"; status=1; }
[ -s "$fake/out/checkpoint/state" ] || { echo "FAIL: no checkpoint from the step"; status=1; }
grep -q -- '--resume' "$fake/args" && { echo "FAIL: first link resumed"; status=1; }
env PATH="$fake:$PATH" FAKE_MODE=finish SLURM_JOB_ID=42 SLURM_RESTART_COUNT=1 \
  HOMODYNE=fake-homodyne OUTPUT_DIR="$fake/out" bash "$chain" > "$fake/log2" 2>&1; code=$?
[ $code -eq 0 ] && tail -1 "$fake/args" | grep -q -- "--checkpoint-dir $fake/out/checkpoint --resume" \
  || { echo "FAIL: restart did not resume (exit $code): $(tail -1 "$fake/args")"; status=1; }
[ "$(wc -l < "$fake/scontrol.log")" -eq 1 ] || { echo "FAIL: finished chain requeued"; cat "$fake/scontrol.log" "$fake/log2"; status=1; }
env PATH="$fake:$PATH" FAKE_MODE=fail SLURM_JOB_ID=42 HOMODYNE=fake-homodyne \
  OUTPUT_DIR="$fake/out" bash "$chain" > "$fake/log3" 2>&1; code=$?
[ $code -eq 2 ] && [ "$(wc -l < "$fake/scontrol.log")" -eq 1 ] \
  || { echo "FAIL: a failing step must stop the chain with its code (got $code)"; status=1; }

[ $status -eq 0 ] && echo PASS
exit $status
