#!/usr/bin/env bash
# The template workflow with checkpoints on, as every homodyne and xpcsjax template sets
# them (enable_checkpoints: true, resume_from_checkpoint: true, checkpoint_dir:
# ./checkpoints): one config, run from a job folder without --output-dir, on dataset A,
# then on dataset B by --data-file (same shape, same size, same modification time: a copy
# with its times kept), then with a changed start value, then again unchanged. Four
# successes, each with the answer of a run without checkpoints (bit for bit), B's its own,
# the rerun from the finished checkpoint, and no checkpoint in the job folder. At 1 and 2
# ranks, in core and streamed (docs/checkpoints.md, "Which checkpoints a run resumes").
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

body() {  # body <D0 start>
  cat <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: a.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [$1, -0.1, 0, 0.001, 0.2, 0.0, 1]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
YAML
}
streaming_block='  streaming:
    enable_checkpoints: true
    checkpoint_dir: "./checkpoints"
    checkpoint_frequency: 2
    resume_from_checkpoint: true
    keep_last_checkpoints: 3'
{ body 10000; echo "$streaming_block"; } > "$tmp/template.yaml"
{ body 12000; echo "$streaming_block"; } > "$tmp/changed.yaml"
body 10000 > "$tmp/plain.yaml"
body 12000 > "$tmp/plain_changed.yaml"

for name in a b; do
  seed=$([ $name = a ] && echo 3 || echo 4)
  "$bindir/homodyne-synth" --config "$tmp/plain.yaml" -o "$tmp/$name.h5" --frames 36 \
    --angles "0,45,90,135" --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 \
    --param phi0=4 --noise 0.001 --seed $seed -q || fail "synth $name"
done
touch -r "$tmp/a.h5" "$tmp/b.h5"
[ "$(stat -c %s "$tmp/a.h5")" = "$(stat -c %s "$tmp/b.h5")" ] || fail "the two datasets differ in size"
[ "$(stat -c %Y "$tmp/a.h5")" = "$(stat -c %Y "$tmp/b.h5")" ] || fail "the two datasets differ in time"
cmp -s "$tmp/a.h5" "$tmp/b.h5" && fail "the two datasets are identical"

# values <results dir>: every fitted value and chi2, exactly as written.
values() {
  "$py" -c 'import json,sys
d=json.load(open(sys.argv[1]+"/nlsq/parameters.json"))
print(sorted((k, repr(v["value"])) for k, v in d["parameters"].items()), repr(d["chi_squared"]))' "$1"
}

# The answers without checkpoints, once: answers do not depend on the rank count or on
# streaming, so every run below must give these bits.
for ref in a b changed; do
  cfg=$tmp/plain.yaml; args=()
  [ $ref = b ] && args=(--data-file "$tmp/b.h5")
  [ $ref = changed ] && cfg=$tmp/plain_changed.yaml
  "$mpiexec" -n 1 "$bindir/homodyne" --config "$cfg" "${args[@]}" -o "$tmp/ref_$ref" > "$tmp/ref.log" 2>&1 \
    || { cat "$tmp/ref.log"; fail "reference $ref"; }
done
[ "$(values "$tmp/ref_a")" != "$(values "$tmp/ref_b")" ] || fail "A and B give one answer"

for n in 1 2; do
  for how in in_core streamed; do
    extra=()
    [ $how = streamed ] && extra=(--strategy streaming --memory-limit 1M)
    job="$tmp/job_${n}_$how"; mkdir -p "$job"
    run() {  # run <log> <config> [args...]: from the job folder, default output directory
      local log=$1 cfg=$2; shift 2
      (cd "$job" && "$mpiexec" -n $n "$bindir/homodyne" --config "$cfg" "${extra[@]}" "$@") \
        > "$log" 2>&1
    }
    label="$n rank(s), $how"
    results=$job/homodyne_results
    run "$tmp/1.log" "$tmp/template.yaml" || { cat "$tmp/1.log"; fail "$label: run 1 (A)"; }
    [ "$(values "$results")" = "$(values "$tmp/ref_a")" ] || fail "$label: run 1 is not A's answer"
    ls "$results"/checkpoints/*/nlsq_*.h5 > /dev/null 2>&1 || fail "$label: no checkpoint under the output directory"

    run "$tmp/2.log" "$tmp/template.yaml" --data-file "$tmp/b.h5" || { cat "$tmp/2.log"; fail "$label: run 2 (B by --data-file)"; }
    grep -q "resuming NLSQ" "$tmp/2.log" && { cat "$tmp/2.log"; fail "$label: run 2 resumed A's checkpoint"; }
    [ "$(values "$results")" = "$(values "$tmp/ref_b")" ] || fail "$label: run 2 is not B's answer"

    run "$tmp/3.log" "$tmp/changed.yaml" || { cat "$tmp/3.log"; fail "$label: run 3 (changed start)"; }
    grep -q "resuming NLSQ" "$tmp/3.log" && { cat "$tmp/3.log"; fail "$label: run 3 resumed another start's checkpoint"; }
    [ "$(values "$results")" = "$(values "$tmp/ref_changed")" ] || fail "$label: run 3 is not the changed start's answer"

    run "$tmp/4.log" "$tmp/template.yaml" || { cat "$tmp/4.log"; fail "$label: run 4 (rerun)"; }
    grep -q "resuming NLSQ" "$tmp/4.log" || { cat "$tmp/4.log"; fail "$label: the rerun did not use its own finished checkpoint"; }
    [ "$(values "$results")" = "$(values "$tmp/ref_a")" ] || fail "$label: the rerun is not A's answer"

    # Every solve's folder (the fit, its restarts, …) holds one folder per data and config.
    runs=$(find "$results/checkpoints" -type d -regextype posix-extended \
             -regex '.*/[0-9a-f]{8}-[0-9a-f]{8}' -printf '%f\n' | sort -u | wc -l)
    [ "$runs" -eq 3 ] || { ls -R "$results/checkpoints"; fail "$label: $runs run folders, expected one per data and config (3)"; }
    [ -e "$job/checkpoints" ] && fail "$label: checkpoints written into the job folder"
    echo "$label: A, B (same size and time), changed start, rerun: each its own answer"
  done
done
echo "PASS"
