#!/usr/bin/env bash
# A failure injected on rank 1 only, at every stage of a run (startup, load, fit,
# sampling, checkpoint with fatal_checkpoint_errors, output), ends both ranks within 10 s of the
# failure, with the message printed
# once, the failing rank named and the documented exit code (1, internal error); no
# result file is written (only run_report.yaml, recording the failure). Bad command-line
# input exits 2.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# check_failure STAGE TIMEOUT_S ARGS...: runs homodyne at 2 ranks with STAGE@1 injected.
check_failure() {
  local stage=$1 limit=$2; shift 2
  local start code elapsed out n
  rm -rf "$tmp/out"
  start=$(date +%s)
  out=$(HOMODYNE_FAIL_AT=$stage@1 timeout 120 "$mpiexec" -n 2 --oversubscribe \
          "$bindir/homodyne" "$@" 2>&1)
  code=$?
  elapsed=$(( $(date +%s) - start ))
  echo "--- $stage: exit $code after ${elapsed}s"
  echo "$out" | tail -4
  [ $code -ne 124 ] || { echo "FAIL: $stage: job hung (killed by timeout)"; exit 1; }
  [ $code -eq 1 ] || { echo "FAIL: $stage: exit code $code, expected 1"; exit 1; }
  [ "$elapsed" -le "$limit" ] || { echo "FAIL: $stage: took ${elapsed}s (> $limit s)"; exit 1; }
  n=$(grep -c "injected failure at stage '$stage'" <<<"$out" || true)
  [ "$n" -eq 1 ] || { echo "FAIL: $stage: message printed $n times, expected once"; exit 1; }
  grep -q "(rank 1)" <<<"$out" || { echo "FAIL: $stage: failing rank not named"; exit 1; }
  grep -q "aborting all" <<<"$out" && { echo "FAIL: $stage: not agreed (MPI_Abort path)"; exit 1; }
  # No results after a failure; only the run report, which records the failure.
  if [ "$stage" != output ] && [ -e "$tmp/out" ]; then
    extra=$(find "$tmp/out" -mindepth 1 ! -name run_report.yaml)
    [ -z "$extra" ] || { echo "FAIL: $stage: results written after a failure: $extra"; exit 1; }
  fi
  if [ -e "$tmp/out/run_report.yaml" ]; then
    grep -q "injected failure at stage '$stage'" "$tmp/out/run_report.yaml" && \
      grep -q "exit_code: 1" "$tmp/out/run_report.yaml" || \
      { echo "FAIL: $stage: run_report.yaml does not record the failure"; exit 1; }
  fi
  return 0
}

check_failure startup 10 --version

# A small synthetic data set: the later stages fail in well under a second of work, so
# the whole run (MPI start-up included) must end within 10 s.
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [15000, -0.3, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }
run=(--config "$tmp/cfg.yaml" --output-dir "$tmp/out")
check_failure load 10 "${run[@]}"
check_failure fit 10 "${run[@]}"
# Sampling: two shards, so rank 1 owns one (rank 0 keeps sampling its own shard and
# learns of the failure at its next checkpoint safe point, after at most one batch).
check_failure sampling 20 "${run[@]}" --method cmc --no-nlsq-warmstart --cmc-num-shards 2 \
  --n-warmup 50 --n-samples 50 --n-chains 1
# Checkpoint writing (parallel HDF5, collective): fails on rank 1 only. With
# fatal_checkpoint_errors the run ends like any failure ...
{ cat "$tmp/cfg.yaml"
  printf 'optimization:\n  streaming: {checkpoint_frequency: 1, fatal_checkpoint_errors: true}\n'
} > "$tmp/ckpt.yaml"
check_failure checkpoint 10 --config "$tmp/ckpt.yaml" --output-dir "$tmp/out" \
  --checkpoint-dir "$tmp/ckpt"
# A checkpoint dataset whose write fails on its owner only (rank 1's CMC chain states,
# after the collective write returned on every rank): agreed before the next collective
# HDF5 call, so both ranks end together instead of one waiting in a flush.
check_failure checkpoint_dataset 20 --config "$tmp/ckpt.yaml" --output-dir "$tmp/out" \
  --checkpoint-dir "$tmp/ckpt" --method cmc --no-nlsq-warmstart --cmc-num-shards 2 \
  --n-warmup 50 --n-samples 50 --n-chains 1
# ... by default a failed checkpoint is a warning and the fit goes on to the answer it gives
# without checkpoints.
{ cat "$tmp/cfg.yaml"; printf 'optimization:\n  streaming: {checkpoint_frequency: 1}\n'; } > "$tmp/ckw.yaml"
"$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" "${run[@]/$tmp\/out/$tmp/plain}" -q \
  || { echo "FAIL: plain fit"; exit 1; }
out=$(HOMODYNE_FAIL_AT=checkpoint@1 timeout 120 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" \
        --config "$tmp/ckw.yaml" --output-dir "$tmp/ckw" --checkpoint-dir "$tmp/ckw_dir" 2>&1)
code=$?
[ $code -eq 0 ] || { echo "$out" | tail -5; echo "FAIL: a failed checkpoint ended the fit ($code)"; exit 1; }
grep -q 'checkpoint not written (.*injected failure at stage .checkpoint.' <<<"$out" \
  || { echo "FAIL: no warning for the failed checkpoint"; exit 1; }
ls "$tmp/ckw_dir" 2>/dev/null | grep -q '\.h5$' && { echo "FAIL: a checkpoint file appeared"; exit 1; }
strip() { grep -v -E '"(timestamp|execution_time|optimization_time)"' "$1"; }
diff <(strip "$tmp/plain/homodyne_results.json") <(strip "$tmp/ckw/homodyne_results.json") \
  || { echo "FAIL: failed checkpoints changed the answer"; exit 1; }
# The same one-rank dataset failure without fatal_checkpoint_errors: a warning, and CMC goes
# on to the draws it gives without checkpoints.
cmc=(--method cmc --no-nlsq-warmstart --cmc-num-shards 2 --n-warmup 50 --n-samples 50 --n-chains 1)
"$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --config "$tmp/ckw.yaml" \
  --output-dir "$tmp/cplain" "${cmc[@]}" -q || { echo "FAIL: plain CMC run"; exit 1; }
out=$(HOMODYNE_FAIL_AT=checkpoint_dataset@1 timeout 120 "$mpiexec" -n 2 --oversubscribe \
        "$bindir/homodyne" --config "$tmp/ckw.yaml" --output-dir "$tmp/cdw" \
        --checkpoint-dir "$tmp/cdw_dir" "${cmc[@]}" 2>&1)
code=$?
[ $code -eq 0 ] || { echo "$out" | tail -5; echo "FAIL: a one-rank dataset failure ended CMC ($code)"; exit 1; }
grep -q "checkpoint not written (.*injected failure at stage .checkpoint_dataset." <<<"$out" \
  || { echo "$out" | tail -5; echo "FAIL: no warning for the one-rank dataset failure"; exit 1; }
cmp "$tmp/cplain/cmc/samples.h5" "$tmp/cdw/cmc/samples.h5" > /dev/null 2>&1 || \
  /usr/bin/python3 - "$tmp/cplain/cmc/samples.h5" "$tmp/cdw/cmc/samples.h5" <<'PY' \
  || { echo "FAIL: failed checkpoints changed the CMC draws"; exit 1; }
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:])
assert np.array_equal(a["/samples"][()], b["/samples"][()])
PY
check_failure output 10 "${run[@]}"

out=$(timeout 30 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --no-such-flag 2>&1)
code=$?
echo "$out"
[ $code -eq 2 ] || { echo "FAIL: unknown flag gave exit code $code, expected 2"; exit 1; }
n=$(grep -c "no-such-flag" <<<"$out" || true)
[ "$n" -eq 1 ] || { echo "FAIL: parse error printed $n times"; exit 1; }
echo "PASS"
