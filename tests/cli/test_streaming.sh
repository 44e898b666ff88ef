#!/usr/bin/env bash
# Memory budget and streaming at the command line (2 ranks): --dry-run prints the plan per
# rank and writes nothing; a forced streaming fit gives the in-core parameters; a streamed
# laminar fit from the default start writes the same numbers with checkpoints every 1 and 3
# iterations; bad --memory-limit / --strategy values exit 2 naming the option; a dry run
# still rejects bad input.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1000, 0.0, 0.0]
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 80 --angles "0,60,120" \
  --param D0=3000 --param alpha=-0.6 --param D_offset=20 --noise 0.001 -q || fail "synth"

# Dry run, automatic strategy: the plan of both ranks, exit 0, no output directory.
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/dry" \
      --threads 1 --dry-run 2>&1); code=$?
echo "$out"
[ $code -eq 0 ] || fail "dry run exit code $code"
[ -e "$tmp/dry" ] && fail "dry run created the output directory"
grep -q '^strategy: in-core' <<<"$out" || fail "dry run: no in-core strategy line"
for r in 0 1; do
  line=$(grep "rank $r: points" <<<"$out") || fail "dry run: no line for rank $r"
  for field in 'points [0-9]' 'blocks [0-9]' 'rows [0-9]*\.\.[0-9]' 'estimate [0-9.]* [KMG]iB' \
               'budget [0-9.]* [KMG]iB' 'strategy in-core' 'memory_fraction'; do
    grep -q "$field" <<<"$line" || fail "dry run rank $r lacks '$field': $line"
  done
done
grep -q 'points in .* block(s) over 2 rank(s)' <<<"$out" || fail "dry run: no partition table"
grep -q 'NLSQ OPTIMIZATION COMPLETE' <<<"$out" && fail "dry run ran a fit"

# Dry run with a per-rank limit below the in-core estimate: streaming, with a window.
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/dry" \
      --threads 1 --dry-run --memory-limit 1M 2>&1); code=$?
[ $code -eq 0 ] || fail "dry run (1M) exit code $code"
grep -q '^strategy: streaming' <<<"$out" || fail "1M budget did not choose streaming: $out"
[ "$(grep -c 'strategy streaming .*budget 1.0 MiB (--memory-limit 1.0 MiB per rank) | window [0-9]* points' <<<"$out")" -eq 2 ] \
  || fail "streaming lines per rank: $out"

# In-core and forced streaming fits give the same parameters.
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/ic" --threads 1 -q \
  || fail "in-core fit"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/st" --threads 1 \
      --strategy streaming --memory-limit 2M 2>&1) || fail "streaming fit: $out"
grep -q 'memory: budget 2.0 MiB per rank (--memory-limit 2.0 MiB per rank).*-> streaming' <<<"$out" \
  || fail "strategy not logged: $out"
grep -q '^  strategy: streaming' "$tmp/st/run_report.yaml" || fail "run_report lacks the strategy"
grep -q '^  estimate_bytes_rank0: [0-9]' "$tmp/st/run_report.yaml" || fail "run_report lacks the estimate"
grep -q '^  peak_rss_bytes: \[[0-9]*, [0-9]*\]' "$tmp/st/run_report.yaml" || fail "run_report lacks peak RSS"
grep -q '^  strategy: in-core' "$tmp/ic/run_report.yaml" || fail "in-core run_report strategy"
strip() { grep -v -E '"(timestamp|execution_time|optimization_time)"' "$1"; }
diff <(strip "$tmp/ic/nlsq/parameters.json") <(strip "$tmp/st/nlsq/parameters.json") \
  || fail "streaming and in-core parameters differ"

# A laminar fit from the default start, streamed under --memory-limit: checkpoints every 1 and
# 3 iterations leave every written number as it is (the pipeline's restarts included).
cat > "$tmp/lam.yaml" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: lam.h5
initial_parameters:
  values: null
YAML
"$bindir/homodyne-synth" --config "$tmp/lam.yaml" -o "$tmp/lam.h5" --frames 60 --angles "10,55,100,145" \
  --param D0=2000 --param alpha=-0.5 --param gamma_dot_t0=0.004 --param phi0=3 --noise 0.001 -q \
  || fail "synth laminar"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/lam.yaml" --output-dir "$tmp/lp" --threads 1 -q \
  --strategy streaming --memory-limit 1M || fail "laminar streaming fit"
for f in 1 3; do
  sed "s|^initial_parameters:|optimization:\n  streaming: {enable_checkpoints: true, checkpoint_frequency: $f, checkpoint_dir: $tmp/ck$f}\ninitial_parameters:|" \
    "$tmp/lam.yaml" > "$tmp/lam$f.yaml"
  "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/lam$f.yaml" --output-dir "$tmp/lc$f" --threads 1 -q \
    --strategy streaming --memory-limit 1M || fail "checkpointed laminar streaming fit ($f)"
  ls "$tmp/ck$f" | grep -q . || fail "no checkpoint written at frequency $f"
  for j in homodyne_results.json nlsq/parameters.json; do
    diff <(strip "$tmp/lp/$j") <(strip "$tmp/lc$f/$j") \
      || fail "checkpoints every $f iteration(s) changed $j"
  done
done

# Bad values exit 2 and name the option; nothing is written.
for bad in 12X abc 0 -5G; do
  out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/bad" \
        --memory-limit="$bad" --dry-run 2>&1); code=$?
  [ $code -eq 2 ] || fail "--memory-limit $bad exit code $code"
  grep -q -- "--memory-limit" <<<"$out" || fail "--memory-limit $bad: message does not name the option: $out"
done
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/bad" \
      --strategy chunked 2>&1); code=$?
[ $code -eq 2 ] || fail "--strategy chunked exit code $code"
grep -q -- "--strategy" <<<"$out" || fail "--strategy message: $out"
# A dry run rejects a missing data file like a real run.
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/bad" \
      --data-file "$tmp/missing.h5" --dry-run 2>&1); code=$?
[ $code -eq 2 ] || fail "dry run with a missing file: exit code $code"
grep -q 'missing.h5' <<<"$out" || fail "missing file not named: $out"
[ -e "$tmp/bad" ] && fail "a failed run created the output directory"
# A non-finite value among the fitted points: the streaming fit finds it on its first pass
# and exits 2 with the in-core loader's message.
cp "$tmp/data.h5" "$tmp/nan.h5"
/usr/bin/python3 - "$tmp/nan.h5" <<'PY' || fail "could not write the NaN"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    d = f["/exchange/C2T_all/c2_00002"]
    d[40, 60] = np.nan
PY
for strategy in in-core streaming; do
  out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/bad" \
        --data-file "$tmp/nan.h5" --strategy $strategy --memory-limit 1M 2>&1); code=$?
  [ $code -eq 2 ] || fail "NaN data, $strategy: exit code $code"
  grep -q 'NaN/Inf in bin .*1 non-finite values' <<<"$out" || fail "NaN data, $strategy: $out"
done
[ -e "$tmp/bad" ] && fail "a failed run created the output directory"

# A window read failing on rank 1 in the middle of a pass: both ranks stop promptly with
# the agreed error (exit 1), printed once; nothing hangs in the pass's collective sum.
out=$(HOMODYNE_FAIL_AT=stream@1 timeout 60 "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" \
      --output-dir "$tmp/bad" --strategy streaming --memory-limit 1M 2>&1); code=$?
[ $code -ne 124 ] || fail "streaming failure on one rank hung"
[ $code -eq 1 ] || fail "injected stream failure: exit code $code: $out"
[ "$(grep -c "injected failure at stage 'stream'" <<<"$out")" -eq 1 ] || fail "message not once: $out"
grep -q "(rank 1)" <<<"$out" || fail "failing rank not named: $out"
echo "PASS"
