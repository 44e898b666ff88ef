#!/usr/bin/env bash
# Every class of bad input stops `homodyne` with exit code 2, a message that names the
# file and the key or dataset and says what was expected, and no output written.
# Malformed HDF5 files come from tests/cli/make_bad_h5.py (h5py). One row per class of
# the table in docs/reliability.md.
set -uo pipefail
bindir=$1; mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0

# expect_bad NAME PATTERN ARGS...: homodyne ARGS exits 2, prints PATTERN (grep -E) once,
# and neither the output directory nor any new file appears.
# tool=NAME before the call runs another executable (homodyne-synth, homodyne-topology).
expect_bad() {
  local name=$1 pattern=$2; shift 2
  local before after out code n
  before=$(find "$tmp" | sort)
  out=$(timeout 60 "$bindir/${tool:-homodyne}" "$@" 2>&1); code=$?
  after=$(find "$tmp" | sort)
  n=$(grep -cE -- "$pattern" <<<"$out" || true)
  if [ $code -ne 2 ] || [ "$n" -ne 1 ] || [ "$before" != "$after" ]; then
    echo "FAIL: $name: exit $code (expected 2), pattern matched $n times (expected 1)"
    [ "$before" != "$after" ] && echo "  files written: $(comm -13 <(echo "$before") <(echo "$after"))"
    echo "$out" | sed 's/^/  | /'
    fails=$((fails + 1))
  else
    echo "ok: $name: $(grep -E -- "$pattern" <<<"$out" | head -1 | cut -c1-160)"
  fi
}

cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }
mkdir "$tmp/bad" && /usr/bin/python3 "$here/make_bad_h5.py" "$tmp/data.h5" "$tmp/bad" \
  || { echo "FAIL: make_bad_h5.py"; exit 1; }
out=(-o "$tmp/out" -q)

# --- config files ---
printf 'analysis_mode: static\nanalyzer_parameters:\n  dt: [0.1, 0.2\n  start_frame: 1\n' > "$tmp/syntax.yaml"
expect_bad yaml_syntax 'syntax.yaml.*line [0-9]+, column [0-9]+' --config "$tmp/syntax.yaml" "${out[@]}"
sed 's/dt: 0.1/dt: "fast"/' "$tmp/cfg.yaml" > "$tmp/type.yaml"
expect_bad wrong_type 'type.yaml: analyzer_parameters.dt: expected a number, found the string "fast"' \
  --config "$tmp/type.yaml" "${out[@]}"
sed 's/dt: 0.1/dt: -1/' "$tmp/cfg.yaml" > "$tmp/range.yaml"
expect_bad out_of_range "range.yaml: analyzer_parameters.dt: must be > 0, found '-1'" \
  --config "$tmp/range.yaml" "${out[@]}"
sed 's/dt: 0.1/dtt: 0.1/' "$tmp/cfg.yaml" > "$tmp/typo.yaml"
expect_bad unknown_key "typo.yaml: analyzer_parameters.dtt.*dt" --config "$tmp/typo.yaml" --strict "${out[@]}"
printf '  start_frame: 20\n  end_frame: 5\n' > "$tmp/frames.part"
sed "/dt: 0.1/r $tmp/frames.part" "$tmp/cfg.yaml" > "$tmp/frames.yaml"
expect_bad conflicting_frames 'frames.yaml: analyzer_parameters.end_frame: must be -1 .* >= start_frame' \
  --config "$tmp/frames.yaml" "${out[@]}"
expect_bad missing_config 'nope.yaml' --config "$tmp/nope.yaml" "${out[@]}"
mkdir "$tmp/confdir"
expect_bad config_is_a_directory 'confdir: expected a configuration file \(YAML or JSON\), found a directory' \
  --config "$tmp/confdir" "${out[@]}"

# --- command line ---
expect_bad conflicting_flags '--static-mode excludes --laminar-flow' \
  --config "$tmp/cfg.yaml" --static-mode --laminar-flow "${out[@]}"
expect_bad flag_vs_config 'cfg.yaml: analysis_mode: --laminar-flow needs a laminar_flow config' \
  --config "$tmp/cfg.yaml" --laminar-flow "${out[@]}"
# homodyne's require_nlsq_warmstart: laminar_flow CMC refused without an NLSQ warm start.
sed -e 's/analysis_mode: static/analysis_mode: laminar_flow/' "$tmp/cfg.yaml" > "$tmp/warm.yaml"
echo "optimization: {cmc: {validation: {require_nlsq_warmstart: true}}}" >> "$tmp/warm.yaml"
expect_bad require_nlsq_warmstart \
  'warm.yaml: optimization.cmc.validation.require_nlsq_warmstart: laminar_flow CMC needs an NLSQ warm start' \
  --config "$tmp/warm.yaml" --method cmc --no-nlsq-warmstart "${out[@]}"
expect_bad flag_out_of_range '--n-samples: expected an integer >= 1, found -5' \
  --config "$tmp/cfg.yaml" --method cmc --n-samples -5 "${out[@]}"
expect_bad flag_not_an_integer "--threads: expected an integer, found 'abc'" \
  --config "$tmp/cfg.yaml" --threads abc "${out[@]}"
expect_bad flag_not_finite '--initial-D0: initial value of D0 must be a finite number, found nan' \
  --config "$tmp/cfg.yaml" --initial-d0 nan "${out[@]}"
expect_bad warm_start_without_cmc '--nlsq-result is a warm start for --method cmc' \
  --config "$tmp/cfg.yaml" --nlsq-result "$tmp" "${out[@]}"

# --- data files ---
data() { expect_bad "$1" "$2" --config "$tmp/cfg.yaml" --data-file "$tmp/bad/$1.h5" "${out[@]}"; }
expect_bad missing_data_file 'missing.h5' --config "$tmp/cfg.yaml" --data-file "$tmp/missing.h5" "${out[@]}"
data not_hdf5 'not_hdf5.h5: not an HDF5 file'
data truncated 'truncated.h5: could not open the HDF5 file: .*truncated file'
data missing_dataset 'missing_dataset.h5: unknown XPCS layout: expected either aps_u .* or aps_old .*/xpcs/dphilist'
data wrong_rank 'wrong_rank.h5: /exchange/C2T_all/c2_00001: expected a 2-D square two-time matrix, found a 3-D'
data non_square 'non_square.h5: /exchange/C2T_all/c2_00001: expected a square two-time matrix, found shape \(30, 29\)'
data string_dtype 'string_dtype.h5: /exchange/C2T_all/c2_00001: expected a numeric \(float or integer\) matrix'
data string_qlist 'string_qlist.h5: /xpcs/dqlist: expected a numeric \(float or integer\) list, found strings'
data nan_matrix 'nan_matrix.h5: /exchange/C2T_all/c2_00001: NaN/Inf in bin 0 .*1 non-finite value'
data all_nan_matrix 'all_nan_matrix.h5: /exchange/C2T_all/c2_00001: NaN/Inf in bin 0 .*29 of the 29 values on the first off-diagonal of frames 1..30 are not finite'
data inf_qlist 'inf_qlist.h5: /xpcs/dqlist: expected finite values, entry 1 is inf'
data mismatched_lists 'mismatched_lists.h5: /xpcs/dphilist: mismatched list lengths: /xpcs/dqlist has 2 entries but /xpcs/dphilist has 3'
data empty_group 'empty_group.h5: /xpcs/dqlist: no \(q, phi\) bins in the file \(empty list\)'
data absurd_size 'absurd_size.h5: /exchange/C2T_all/c2_00001: matrix declares 1000000000 x 1000000000 frames.*refusing to allocate'
data unwritten_matrix 'unwritten_matrix.h5: /exchange/C2T_all/c2_00001: the matrix stores no values'
data absurd_list 'absurd_list.h5: /xpcs/dqlist: dataset declares more than [0-9]+ elements; refusing to read it'

# Files on which libhdf5 1.10.8 itself crashes (fuzz/known_hdf5_crashes/): exit 2 with the
# file named (ReadCrashGuard), not signal 11 / status 139, at 1 and 2 ranks (a crash on rank
# 0 ends the job at once: no hang). A libhdf5 that no longer crashes rejects them with its own
# error, which names the file as well. Sanitizer builds turn the guard off so that ASan
# reports the crash: skipped there.
libhdf5_crashes() {
  local known="$here/../../fuzz/known_hdf5_crashes" f b o2 code
  for f in "$known"/*.h5; do
    b=$(basename "$f")
    expect_bad "libhdf5_crash_${b%.h5}" "${b//./\\.}: " \
      --config "$tmp/cfg.yaml" --data-file "$f" "${out[@]}"
  done
  f="$known/hdf5_1.10.8_local_heap_segv.h5"
  o2=$(timeout 60 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --config "$tmp/cfg.yaml" \
         --data-file "$f" -o "$tmp/out" 2>&1); code=$?
  if [ $code -ne 2 ] || ! grep -q "$(basename "$f"): " <<<"$o2" || [ -e "$tmp/out" ]; then
    echo "FAIL: 2 ranks, libhdf5 crash: exit $code"; echo "$o2"; fails=$((fails + 1))
  else
    echo "ok: two ranks, libhdf5 crash: exit 2, file named"
  fi
}
if [ -n "${HOMODYNE_SANITIZED:-}" ]; then
  echo "skip: libhdf5 crash files (sanitizer build: the guard is off)"
else
  libhdf5_crashes
fi

# --- output paths: never write outside the output directory or over an input ---
expect_bad output_dir_is_input 'data.h5: --output-dir: the output directory .* is this input file' \
  --config "$tmp/cfg.yaml" -o "$tmp/data.h5" -q
mkdir -p "$tmp/prev/nlsq" && cp "$tmp/data.h5" "$tmp/prev/nlsq/fitted_data.h5"
expect_bad input_in_results 'fitted_data.h5: --output-dir: refusing to overwrite an input: results are written to .*prev/nlsq' \
  --config "$tmp/cfg.yaml" --data-file "$tmp/prev/nlsq/fitted_data.h5" -o "$tmp/prev" -q
cp "$tmp/cfg.yaml" "$tmp/prev/run_report.yaml"
expect_bad config_is_result_file 'run_report.yaml: --output-dir: refusing to overwrite an input: the result file' \
  --config "$tmp/prev/run_report.yaml" -o "$tmp/prev" -q
expect_bad output_not_writable 'cannot create results under .*data.h5' \
  --config "$tmp/cfg.yaml" -o "$tmp/data.h5/sub" -q

# --- non-finite numbers in the config (YAML .nan / .inf) ---
{ cat "$tmp/cfg.yaml"; printf 'initial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n  values: [.nan, -0.4, 0]\n'; } > "$tmp/nan.yaml"
expect_bad nan_initial_value "nan.yaml: initial_parameters.values\[0\]: expected a number, found '.nan' \(line 10\)" \
  --config "$tmp/nan.yaml" "${out[@]}"

{ cat "$tmp/cfg.yaml"; printf 'initial_parameters:\n  per_angle_scaling:\n    contrast: [0.3, 0.3, 0.3]\n'; } > "$tmp/scaling.yaml"
expect_bad per_angle_list_length 'scaling.yaml: initial_parameters.per_angle_scaling.contrast: 3 value\(s\) for 2 selected angle\(s\); expected one per angle' \
  --config "$tmp/scaling.yaml" "${out[@]}"

# --- CMC requests the consensus cannot use (checked before any sampling) ---
expect_bad cmc_too_few_draws 'num_samples: 1 chain\(s\) × 2 draws = 2 draws per shard; the consensus covariance of [0-9]+ sampled parameters needs at least' \
  --config "$tmp/cfg.yaml" --method cmc --n-chains 1 --n-samples 2 --n-warmup 10 "${out[@]}"
expect_bad cmc_too_many_shards 'num_shards: 5000 shards of ~[0-9]+ points each: a shard needs at least [0-9]+ points' \
  --config "$tmp/cfg.yaml" --method cmc --cmc-num-shards 5000 "${out[@]}"

# --- the other tools ---
tool=homodyne-synth expect_bad synth_frames_beyond_memory \
  'analyzer_parameters.end_frame: expected 2 ≤ frames ≤ 100000, got 5000000' \
  --config <(sed 's/dt: 0.1/dt: 0.1\n  end_frame: 5000000/' "$tmp/cfg.yaml") -o "$tmp/big.h5" --angles 0
tool=homodyne-synth expect_bad synth_memory \
  '--frames: 20 angles × 100000 frames need [0-9.]+ GiB in memory' \
  --config "$tmp/cfg.yaml" -o "$tmp/big.h5" --frames 100000 \
  --angles 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19
touch "$tmp/not_a_dir"
XDG_CACHE_HOME="$tmp/not_a_dir" tool=homodyne-topology expect_bad autotune_cache_blocked \
  'could not create the autotune cache folder .*not_a_dir/homodyne' --autotune --autotune-frames 20

# At 2 ranks the message is printed once (by rank 0) and both ranks exit 2.
o2=$(timeout 60 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --config "$tmp/cfg.yaml" \
       --data-file "$tmp/bad/nan_matrix.h5" -o "$tmp/out" 2>&1); code=$?
n=$(grep -c 'NaN/Inf in bin' <<<"$o2" || true)
if [ $code -ne 2 ] || [ "$n" -ne 1 ] || [ -e "$tmp/out" ]; then
  echo "FAIL: 2 ranks: exit $code, message $n times"; echo "$o2"; fails=$((fails + 1))
else
  echo "ok: two ranks agree, message once"
fi

[ $fails -eq 0 ] || { echo "FAIL: $fails case(s)"; exit 1; }
echo PASS
