#!/usr/bin/env bash
# Strong and weak scaling of homodyne on this machine, end to end, one command:
#
#   bash bench/run_scaling.sh [build dir] [output dir]
#        (defaults: build, docs/bench/scaling/<UTC date>)
#
# Studies (each run is a real `homodyne` job under mpiexec; RANKS × THREADS below):
#   nlsq_passes  strong: fixed laminar_flow dataset, optimiser stopped after 2 iterations
#                (-tao_max_it 2); metric: fit time per data pass
#   nlsq_fit     strong: the same dataset, full fit;  weak: angles (points) ∝ ranks
#   cmc          strong: fixed static dataset, 2 shards, short chains, NLSQ warm start read
#                from a file;  weak: angles and shards ∝ ranks
# Each run → OUT/runs/<kind>_<study>_r<R>t<T>.json (bench/scaling_collect.py: phase times
# min/max/mean across ranks from run_report.yaml, peak RSS per rank from bench/rss_wrap.sh,
# fitted parameters). Then bench/scaling_summary.py → OUT/summary.json (speedup,
# efficiency, parameter deltas against the 1-rank run; exits 1 if a delta exceeds 1e-10
# relative), the allreduce latency (bench_reduction) → OUT/reduction.json, and
# bench/scaling_figures.py → OUT/figures/*.{png,pdf} and OUT/model.json.
#
# Parameters (environment): RANKS ("1 2"), THREADS ("1 2"), FRAMES (500, NLSQ dataset
# frames), ANGLES (16, NLSQ strong dataset), CMC_FRAMES (50), CMC_WARMUP (150),
# CMC_SAMPLES (150).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/docs/bench/scaling/$(date -u +%Y-%m-%d)}
RANKS=${RANKS:-"1 2"}
THREADS=${THREADS:-"1 2"}
FRAMES=${FRAMES:-500}
ANGLES=${ANGLES:-16}
CMC_FRAMES=${CMC_FRAMES:-50}
CMC_WARMUP=${CMC_WARMUP:-150}
CMC_SAMPLES=${CMC_SAMPLES:-150}
source "$root/scripts/mpi-env.sh"
mkdir -p "$out/runs"
rm -f "$out"/runs/*.json
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc obeys OMP_NUM_THREADS
homodyne=$build/apps/homodyne
synth=$build/apps/homodyne-synth

angles() {  # n evenly spaced angles in [0, 180)
  /usr/bin/python3 -c "import sys; n=int(sys.argv[1]); print(','.join(f'{180*i/n:g}' for i in range(n)))" "$1"
}
laminar_config() {  # file data
  cat > "$1" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data: {data_folder_path: $(dirname "$2"), data_file_name: $(basename "$2")}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [15000, -0.3, 0, 0.002, 0.1, 0.0001, 2]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: individual}
YAML
}
static_config() {  # file data
  cat > "$1" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data: {data_folder_path: $(dirname "$2"), data_file_name: $(basename "$2")}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
optimization:
  cmc: {per_angle_mode: auto, seed: 11}
YAML
}
make_laminar() {  # name n_angles
  laminar_config "$work/$1.yaml" "$work/$1.h5"
  "$synth" --config "$work/$1.yaml" -o "$work/$1.h5" --frames "$FRAMES" --angles "$(angles "$2")" \
    --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 --param phi0=4 --noise 0.002 -q
}
make_static() {  # name n_angles
  static_config "$work/$1.yaml" "$work/$1.h5"
  "$synth" --config "$work/$1.yaml" -o "$work/$1.h5" --frames "$CMC_FRAMES" --angles "$(angles "$2")" \
    --param D0=30000 --param alpha=-0.6 --noise 0.003 -q
}

# One homodyne run at R ranks × T threads; pinned when the cores suffice.
run() {  # kind study ranks threads config [homodyne options...]
  local kind=$1 study=$2 r=$3 t=$4 cfg=$5; shift 5
  local from=()  # CMC from an NLSQ result: the data size comes from that run's report
  [ "$kind" = cmc ] && from=(--points-from "$work/warm_$(basename "$cfg" .yaml)")
  local dir="$work/$kind/$study/r${r}t${t}" bind=(--bind-to none) code=0
  if [ $((r * t)) -le "$cores" ]; then bind=(--map-by "slot:PE=$t" --bind-to core); fi
  mkdir -p "$(dirname "$dir")"
  local t0; t0=$(date +%s.%N)
  mpiexec -n "$r" "${bind[@]}" "$root/bench/rss_wrap.sh" "$dir" \
    "$homodyne" --config "$cfg" --output-dir "$dir" --threads "$t" --no-autotune-cache -q "$@" \
    > "$dir.log" 2>&1 || code=$?
  local wall; wall=$(echo "$(date +%s.%N) - $t0" | bc)
  echo "  $kind $study ${r}x${t}: exit $code, ${wall} s"
  [ -s "$dir/run_report.yaml" ] || { tail -5 "$dir.log"; return 1; }
  /usr/bin/python3 "$root/bench/scaling_collect.py" --run-dir "$dir" --kind "$kind" \
    --study "$study" --ranks "$r" --threads "$t" --wall-seconds "$wall" --exit-code "$code" \
    "${from[@]}" --out "$out/runs/${kind}_${study}_r${r}t${t}.json"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "datasets in $work"
make_laminar strong "$ANGLES"
make_static cmc1 4
make_static cmc2 8
for r in $RANKS; do [ "$r" = 1 ] || make_laminar "weak$r" $((ANGLES / 2 * r)); done
make_laminar weak1 $((ANGLES / 2))
# CMC warm starts (NLSQ once per dataset, not timed).
for d in cmc1 cmc2; do
  "$homodyne" --config "$work/$d.yaml" --output-dir "$work/warm_$d" --threads 1 \
    --no-autotune-cache -q > /dev/null
done

echo "runs:"
for r in $RANKS; do
  for t in $THREADS; do
    run nlsq_passes strong "$r" "$t" "$work/strong.yaml" -tao_max_it 2
    run nlsq_fit strong "$r" "$t" "$work/strong.yaml"
    run cmc strong "$r" "$t" "$work/cmc1.yaml" --method cmc --nlsq-result "$work/warm_cmc1" \
      --cmc-num-shards 2 --n-chains 2 --n-warmup "$CMC_WARMUP" --n-samples "$CMC_SAMPLES"
  done
  run nlsq_fit weak "$r" 1 "$work/weak$r.yaml"
  if [ "$r" -le 2 ]; then  # CMC datasets exist for 1 and 2 ranks
    run cmc weak "$r" 1 "$work/cmc$r.yaml" --method cmc --nlsq-result "$work/warm_cmc$r" \
      --cmc-num-shards $((2 * r)) --n-chains 2 --n-warmup "$CMC_WARMUP" --n-samples "$CMC_SAMPLES"
  fi
done

# MPI reduction latency of the NLSQ pattern (Reduce + Bcast of JᵀJ, Jᵀr, χ²).
mpiexec -n 2 "$build/bench/bench_reduction" --benchmark_out="$out/reduction.json" \
  --benchmark_out_format=json > /dev/null

cat > "$out/NOTE.txt" <<EOF2
Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname) ($cores cores, $(lscpu | sed -n 's/^Model name: *//p')).
Load average at the start: $load0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (a load
near 0 means nothing else ran; 2 ranks × 2 threads oversubscribe a 2-core machine).
The datasets are small (seconds per run), so start-up and I/O weigh on the efficiencies.
Command: bash bench/run_scaling.sh
EOF2
status=0
/usr/bin/python3 "$root/bench/scaling_summary.py" "$out" || status=$?
fit_json=$(ls "$root"/docs/bench/nlsq_fit_*_summary.json 2>/dev/null | tail -1 || true)
/usr/bin/python3 "$root/bench/scaling_figures.py" "$out" $fit_json
echo "results in $out"
exit $status
