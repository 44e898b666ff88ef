# Set-up shared by the bench/run_*.sh scripts; source it with the script's own arguments:
#   source "$(dirname "$0")/lib.sh" "$@"
# Sets root (the repository), build (argument 1, default build/), out (argument 2, default
# docs/bench/, created), stamp (today's UTC date, or $BENCH_STAMP: a second run of the day) and
# the MPI environment (scripts/mpi-env.sh).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/bench}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
stamp=${BENCH_STAMP:-$(date -u +%Y-%m-%d)}

# run_at_1_and_2_ranks NAME BINARY [ARGS...]: runs build/bench/BINARY under mpiexec at 1 and
# at 2 ranks, each writing its Google Benchmark JSON to $out/NAME_np<ranks>.json, and appends
# those paths to the array `runs`.
runs=()
run_at_1_and_2_ranks() {
  local name=$1 binary=$2 ranks f
  shift 2
  for ranks in 1 2; do
    f="$out/${name}_np${ranks}.json"
    mpiexec -n "$ranks" "$build/bench/$binary" "$@" --benchmark_out="$f" \
      --benchmark_out_format=json
    runs+=("$f")
  done
}

# even_angles N: N angles spread evenly over [-90, 90) degrees, comma-separated (for
# homodyne-synth --angles).
even_angles() {
  /usr/bin/python3 -c "print(','.join('%.10g' % (-90 + 180 / $1 * k) for k in range($1)))"
}

# write_synthetic_preamble MODE DATA: the first lines of a config for a synthetic set made by
# homodyne-synth (the benchmarks' dt, q and gap, every frame and angle kept), on stdout.
write_synthetic_preamble() {
  cat <<YAML
analysis_mode: $1
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: -1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $(dirname "$2")
  data_file_name: $(basename "$2")
phi_filtering: {enabled: false}
YAML
}

# write_two_component_head DATA VALUES: the first lines of a two-component config for a set
# made by homodyne-synth in DATA's folder (dt 0.1, q 0.0054, xpcsjax's 14 parameters with
# VALUES), on stdout, ending inside initial_parameters; the caller adds what follows.
write_two_component_head() {
  cat <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $(dirname "$1")
  data_file_name: $(basename "$1")
initial_parameters:
  parameter_names: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]
  values: $2
YAML
}

# write_truth_fit_config DATA ITERATIONS: the config of the large-file benchmarks — a
# laminar_flow set made by homodyne-synth (the whole-job benchmark's truth), fitted from the
# truth for ITERATIONS iterations, one local fit, per_angle_mode individual — on stdout.
write_truth_fit_config() {
  write_synthetic_preamble laminar_flow "$1"
  cat <<YAML
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [12000.0, -0.4, 5.0, 0.003, 0.15, 0.0002, 3.0]
optimization:
  method: nlsq
  nlsq:
    max_iterations: $2
    recovery: {on_stall: none, phi0_restarts: 0}
    anti_degeneracy: {per_angle_mode: individual, hierarchical: {enable: false}}
YAML
}

# write_default_start_config MODE DATA: the config of a synthetic set's fit from homodyne's
# default start (values: null) with every angle kept and no fitted-data files, on stdout.
write_default_start_config() {
  local names="[D0, alpha, D_offset]"
  [ "$1" = laminar_flow ] && names="[D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]"
  write_synthetic_preamble "$1" "$2"
  cat <<YAML
initial_parameters:
  parameter_names: $names
  values: null
output: {fitted_data: none}
YAML
}
