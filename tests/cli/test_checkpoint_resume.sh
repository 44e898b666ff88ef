#!/usr/bin/env bash
# NLSQ checkpoints (docs/checkpoints.md): kill -9 of every rank at 12 points of a fit
# (HOMODYNE_KILL_AT), resume on the other rank count (1 ↔ 2), compare with the
# uninterrupted run (≤ 1e-9 relative); a corrupted newest checkpoint is skipped with a
# warning; SIGUSR1 (hook, and real SIGUSR1 to mpiexec / SIGTERM to one rank) → exit 75 →
# --resume gives the same result; at most keep_last_checkpoints files remain, in the run's own
# folder of the checkpoint directory; another config's run starts afresh in a folder of its
# own (test_checkpoint_runs.sh covers the template workflow).
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  # Far enough from the truth that the fit needs well over the 10 iterations the kill
  # points below use (about 50 here); a start near the truth converged in 9-12
  # iterations depending on the last bits of the kernel's rounding.
  values: [10000, -0.1, 0, 0.001, 0.2, 0.0, 1]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
  streaming:
    enable_checkpoints: true
    checkpoint_dir: $tmp/ckpt
    checkpoint_frequency: 2
    keep_last_checkpoints: 3
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 40 --angles "0,45,90,135" \
  --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 --param phi0=4 --noise 0.001 -q \
  || { echo "FAIL: synth"; exit 1; }

run() {  # run <ranks> <outdir> [args...]
  local n=$1 out=$2; shift 2
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$out" "$@"
}
# compare <a> <b>: every fitted value and chi2 within 1e-9 relative
compare() {
  "$py" - "$1/nlsq/parameters.json" "$2/nlsq/parameters.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def values(d):
    out = {k: v["value"] for k, v in d["parameters"].items()}
    out["chi_squared"] = d["chi_squared"]
    return out
va, vb = values(a), values(b)
assert va.keys() == vb.keys(), (va.keys(), vb.keys())
worst = max(abs(va[k] - vb[k]) / max(abs(va[k]), 1e-300) for k in va)
print(f"max relative difference {worst:.3e}")
sys.exit(0 if worst <= 1e-9 else 1)
PY
}

run 2 "$tmp/ref" > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; echo "FAIL: reference run"; exit 1; }
n_ckpt=$(ls "$tmp"/ckpt/*/ | grep -c '^nlsq_.*\.h5$')
[ "$n_ckpt" -eq 3 ] || { ls -la "$tmp/ckpt"; echo "FAIL: keep_last_checkpoints=3 left $n_ckpt files"; exit 1; }
iters=$("$py" -c "import json;print(json.load(open('$tmp/ref/nlsq/analysis_results_nlsq.json'))['iterations'])" 2>/dev/null \
        || grep -o '"iterations": [0-9]*' "$tmp/ref/nlsq/analysis_results_nlsq.json" | head -1 | grep -o '[0-9]*$')
echo "reference: $iters iterations"
[ "$iters" -ge 11 ] || { echo "FAIL: the reference fit is too short ($iters iterations) for the kill points"; exit 1; }

# 12 kill points: iterations 1..10 and two inside checkpoint writes (after the temporary
# file is complete, before the rename). Killed on 2 ranks → resumed on 1, and vice versa.
k=0
for point in nlsq_iter:1 nlsq_iter:2 nlsq_iter:3 nlsq_iter:4 nlsq_iter:5 nlsq_iter:6 nlsq_iter:7 \
             nlsq_iter:8 nlsq_iter:9 nlsq_iter:10 checkpoint_write:2 checkpoint_write:4; do
  k=$((k + 1)); rm -rf "$tmp/ckpt" "$tmp/k"
  if [ $((k % 2)) -eq 0 ]; then kill_n=2; resume_n=1; else kill_n=1; resume_n=2; fi
  HOMODYNE_KILL_AT=$point run $kill_n "$tmp/k" > "$tmp/kill.log" 2>&1; code=$?
  [ $code -ne 0 ] || { echo "FAIL: $point: the run was not killed"; exit 1; }
  [ -e "$tmp/k/nlsq/parameters.json" ] && { echo "FAIL: $point: killed run wrote results"; exit 1; }
  has_ckpt=0; ls "$tmp"/ckpt/*/nlsq_*.h5 > /dev/null 2>&1 && has_ckpt=1
  run $resume_n "$tmp/k" --resume > "$tmp/resume.log" 2>&1 \
    || { cat "$tmp/resume.log"; echo "FAIL: $point: resume failed"; exit 1; }
  # A checkpoint was left: the resumed run must have used it (not started over).
  if [ $has_ckpt -eq 1 ]; then
    grep -q "resuming NLSQ from" "$tmp/resume.log" || { cat "$tmp/resume.log"; echo "FAIL: $point: not resumed"; exit 1; }
  fi
  echo -n "$point (killed on $kill_n, resumed on $resume_n): "
  compare "$tmp/ref" "$tmp/k" || { echo "FAIL: $point: resumed result differs"; exit 1; }
done

# Corrupt the newest checkpoint (one byte inside a dataset's data): skipped with a warning.
rm -rf "$tmp/ckpt" "$tmp/c"
HOMODYNE_KILL_AT=nlsq_iter:9 run 2 "$tmp/c" > /dev/null 2>&1
newest=$(ls "$tmp"/ckpt/*/nlsq_*.h5 | sort | tail -1)
"$py" - "$newest" <<'PY' || { echo "FAIL: could not corrupt the checkpoint"; exit 1; }
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    info = f["nlsq.x"].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as f:
    f.seek(info.byte_offset + 3)
    b = f.read(1)
    f.seek(info.byte_offset + 3)
    f.write(bytes([b[0] ^ 0x40]))
PY
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/c" --resume 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; echo "FAIL: resume after corruption exit $code"; exit 1; }
grep -q "checkpoint $newest is unusable and skipped" <<<"$out" \
  || { echo "$out"; echo "FAIL: no warning naming the corrupt checkpoint"; exit 1; }
grep -qi "checksum" <<<"$out" || { echo "$out"; echo "FAIL: the warning does not say checksum"; exit 1; }
echo -n "corrupt newest checkpoint: "; compare "$tmp/ref" "$tmp/c" || { echo "FAIL: after corruption"; exit 1; }

# SIGUSR1 (raised on rank 0 only; all ranks agree) → exit 75 with a resume hint.
rm -rf "$tmp/ckpt" "$tmp/s"
out=$(HOMODYNE_SIGNAL_AT=nlsq_iter:5 "$mpiexec" -n 2 "$bindir/homodyne" \
      --config "$tmp/cfg.yaml" --output-dir "$tmp/s" 2>&1); code=$?
[ $code -eq 75 ] || { echo "$out"; echo "FAIL: SIGUSR1 exit code $code (expected 75)"; exit 1; }
[ "$(grep -c 'with --resume' <<<"$out")" -eq 1 ] || { echo "$out"; echo "FAIL: resume hint not printed once"; exit 1; }
run 2 "$tmp/s" --resume > /dev/null 2>&1 || { echo "FAIL: resume after SIGUSR1"; exit 1; }
echo -n "SIGUSR1 + resume: "; compare "$tmp/ref" "$tmp/s" || { echo "FAIL: after SIGUSR1"; exit 1; }

# Real signals mid-fit: SIGUSR1 to mpiexec (Open MPI forwards it to the ranks) and SIGTERM
# to one rank process (as slurmstepd delivers it). HOMODYNE_PAUSE_AT holds the ranks after
# iteration 1 until the signal arrives, so the signal lands mid-fit however fast it is.
rm -rf "$tmp/ckpt"
for how in usr1-mpiexec term-rank; do
  rm -rf "$tmp/ckpt" "$tmp/sig"
  # Emptied before the run starts: the wait below must not read the last run's log, which a
  # background redirection truncates only once its shell gets there.
  : > "$tmp/sig.log"
  HOMODYNE_PAUSE_AT=nlsq_iter:1 "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" \
    --output-dir "$tmp/sig" > "$tmp/sig.log" 2>&1 &
  pid=$!
  paused=0
  for _ in $(seq 600); do
    [ "$(grep -c "paused at nlsq_iter 1" "$tmp/sig.log")" -eq 2 ] && { paused=1; break; }
    sleep 0.05
  done
  [ $paused -eq 1 ] || { kill $pid; cat "$tmp/sig.log"; echo "FAIL: $how: the ranks never paused"; exit 1; }
  if [ "$how" = usr1-mpiexec ]; then
    kill -USR1 $pid
  else
    # One rank process: a process of this run's command line other than mpiexec itself.
    rank=$(pgrep -f -- "--output-dir $tmp/sig" | grep -vx "$pid" | tail -1 || true)
    [ -n "$rank" ] || { kill $pid; echo "FAIL: $how: no rank process found"; exit 1; }
    kill -TERM "$rank"
  fi
  wait $pid; code=$?
  [ $code -eq 75 ] || { cat "$tmp/sig.log"; echo "FAIL: $how: exit $code (expected 75)"; exit 1; }
  [ -e "$tmp/sig/nlsq/parameters.json" ] && { echo "FAIL: $how: interrupted run wrote results"; exit 1; }
  "$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/sig" --resume \
    > "$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log"; echo "FAIL: $how: resume"; exit 1; }
  grep -q "resuming NLSQ from" "$tmp/resume.log" || { echo "FAIL: $how: not resumed"; exit 1; }
  echo -n "$how + resume on 1 rank: "; compare "$tmp/ref" "$tmp/sig" || { echo "FAIL: $how"; exit 1; }
done

# Multistart: progress (solved starts and their results) is checkpointed after every round.
sed 's|    anti_degeneracy: {per_angle_mode: auto}|    anti_degeneracy: {per_angle_mode: auto}\n    multi_start: {enable: true, n_starts: 5, use_screening: false}|' \
  "$tmp/cfg.yaml" > "$tmp/ms.yaml"
ms() {  # ms <ranks> <outdir> [args...]
  local n=$1 out=$2; shift 2
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/ms.yaml" --output-dir "$out" "$@"
}
starts() {
  "$py" -c "import json,sys;d=json.load(open(sys.argv[1]));print([(s['index'],s.get('chi2'),s.get('x')) for s in d['starts']])" "$1/nlsq/multistart.json"
}
rm -rf "$tmp/ckpt"; ms 2 "$tmp/msref" -q > /dev/null 2>&1 || { echo "FAIL: multistart reference"; exit 1; }
for point in multistart_start:1 multistart_start:2 multistart_start:3; do
  for kill_n in 2 1; do
    resume_n=$((3 - kill_n)); rm -rf "$tmp/ckpt" "$tmp/msk"
    HOMODYNE_KILL_AT=$point ms $kill_n "$tmp/msk" -q > /dev/null 2>&1 && { echo "FAIL: $point not killed"; exit 1; }
    has_ckpt=0; ls "$tmp"/ckpt/*/multistart_*.h5 > /dev/null 2>&1 && has_ckpt=1
    ms $resume_n "$tmp/msk" --resume > "$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log"; echo "FAIL: multistart resume"; exit 1; }
    if [ $has_ckpt -eq 1 ]; then
      grep -q "resuming multistart from" "$tmp/resume.log" || { echo "FAIL: $point: not resumed"; exit 1; }
    fi
    [ "$(starts "$tmp/msref")" = "$(starts "$tmp/msk")" ] || { echo "FAIL: $point: start outcomes differ"; exit 1; }
    echo -n "multistart $point (killed on $kill_n, resumed on $resume_n, checkpoint: $has_ckpt): "
    compare "$tmp/msref" "$tmp/msk" || { echo "FAIL: multistart $point"; exit 1; }
  done
done

# --checkpoint-dir overrides the config.
rm -rf "$tmp/ckpt2"
run 1 "$tmp/d" --checkpoint-dir "$tmp/ckpt2" > /dev/null 2>&1 || { echo "FAIL: --checkpoint-dir run"; exit 1; }
ls "$tmp"/ckpt2/*/ | grep -q '^nlsq_' || { echo "FAIL: --checkpoint-dir not used"; exit 1; }

# Another config with --resume: its own run folder, so nothing to resume; a fresh fit, exit 0,
# the first run's checkpoints untouched.
rm -rf "$tmp/ckpt"; run 1 "$tmp/d2" > /dev/null 2>&1 || { echo "FAIL: run before the other-config test"; exit 1; }
before=$(ls "$tmp"/ckpt/*/nlsq_*.h5 | sort)
sed 's/values: \[10000,/values: [11000,/' "$tmp/cfg.yaml" > "$tmp/other.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/other.yaml" --output-dir "$tmp/o" --resume 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; echo "FAIL: another config with --resume exit $code (expected 0)"; exit 1; }
grep -q "resuming NLSQ from" <<<"$out" && { echo "$out"; echo "FAIL: another config's checkpoint was resumed"; exit 1; }
runs=$(find "$tmp/ckpt" -type d -regextype posix-extended -regex '.*/[0-9a-f]{8}-[0-9a-f]{8}' \
         -printf '%f\n' | sort -u | wc -l)
[ "$runs" -eq 2 ] || { ls -R "$tmp/ckpt"; echo "FAIL: $runs run folders, expected one per config"; exit 1; }
for f in $before; do [ -e "$f" ] || { echo "FAIL: $f of the first run was removed"; exit 1; }; done
echo "PASS"
