#!/usr/bin/env bash
# The network terms of the scaling model and the CMA-ES traffic, measured on the emulated
# Slurm cluster (scripts/cluster.sh):
#  1. what each rank hands to MPI per CMA-ES generation (mpi_count.c through PMPI), static
#     and laminar_flow, at 2 and 4 ranks: runs stopped after 6 and after 2 generations,
#     difference / 4 (one run, no restarts, no warm start, no refinement);
#  2. what crosses the link between two emulated nodes (one rank each, srun -N2): the
#     bytes and packets counted by the bridge-side links of both nodes, per NLSQ iteration
#     (runs of 6 and 2 iterations), per CMA-ES generation (6 and 2) and per CMC run: TCP
#     headers and acknowledgements included, MPI's shared memory inside a node has no wire;
#  3. Reduce+Bcast, Allreduce, Bcast and Barrier latency against payload between 2 ranks:
#     shared memory inside one node, TCP between two nodes (Open MPI's default busy polling,
#     and with mpi_yield_when_idle=1);
# then network_model.py fits latency and bandwidth to 3 and evaluates the scaling model
# with them. Writes to docs/bench/cluster/<date>/ (or $1). Needs root; starts the cluster
# if it is not running and stops it then.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/docs/bench/cluster/$(date -u +%Y-%m-%d)}
build=${BUILD_DIR:-$root/build}
reps=${REPS:-300}
mkdir -p "$out"
work=$build/bench-cluster-net
rm -rf "$work"
mkdir -p "$work"
source "$root/scripts/mpi-env.sh"
mpicc -O2 -Wall -shared -fPIC -o "$work/libmpi_count.so" "$root/bench/cluster/mpi_count.c"
mpicc -O2 -Wall -o "$work/coll_latency" "$root/bench/cluster/coll_latency.c"

started=0
if ! "$root/scripts/cluster.sh" status > /dev/null 2>&1; then
  "$root/scripts/cluster.sh" start
  started=1
fi
finish() { [ $started -eq 1 ] && "$root/scripts/cluster.sh" stop; }
trap finish EXIT
eval "$("$root/scripts/cluster.sh" env)"
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The data (in the cluster's shared tree, so the nodes see it).
d=$work
cmaes() { # cmaes <generations>: the CMA-ES block of a config
  cat <<YAML
optimization:
  nlsq:
    cmaes: {enable: true, auto_select: false, nlsq_warmstart: false, restart_strategy: none,
            refine_with_nlsq: false, max_generations: $1, tol_fun: 1.0e-30, tol_x: 1.0e-30}
YAML
}
static_base() {
  cat <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $d
  data_file_name: static.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
YAML
}
laminar_base() {
  cat <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $d
  data_file_name: laminar.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [10000, -0.1, 0, 0.001, 0.2, 0.0, 1]
YAML
}
static_base > "$d/static.yaml"
laminar_base > "$d/laminar.yaml"
for g in 2 6; do
  { static_base; cmaes $g; } > "$d/static_cmaes$g.yaml"
  { laminar_base; cmaes $g; } > "$d/laminar_cmaes$g.yaml"
done
"$build/apps/homodyne-synth" --config "$d/static.yaml" -o "$d/static.h5" --frames 60 \
  --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q
"$build/apps/homodyne-synth" --config "$d/laminar.yaml" -o "$d/laminar.h5" --frames 60 \
  --angles "0,45,90,135" --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 \
  --param phi0=4 --noise 0.001 -q

# 1. PMPI counts per CMA-ES generation, on this host (the counts do not depend on the
# transport).
count() { # count <name> <ranks> <config> [homodyne args...]
  local name=$1 n=$2 cfg=$3
  shift 3
  mkdir -p "$d/$name"
  MPI_COUNT_DIR=$d/$name mpiexec -n "$n" -x MPI_COUNT_DIR -x LD_PRELOAD="$work/libmpi_count.so" \
    "$build/apps/homodyne" --config "$cfg" --output-dir "$d/$name.out" -q "$@" > "$d/$name.log" 2>&1 ||
    [ $? -eq 4 ] || { cat "$d/$name.log"; exit 1; }   # 4: stopped at the generation limit
}
for n in 2 4; do
  for mode in static laminar; do
    for g in 2 6; do count "cmaes_${mode}_np${n}_g$g" "$n" "$d/${mode}_cmaes$g.yaml"; done
  done
done

# 2. Bytes and packets on the wire between two nodes: the counters of both nodes' links
# before and after a run (what each node received from the bridge + what it sent).
links=()
for n in 1 2; do links+=("$(HOMODYNE_CLUSTER_NODE=$n "$root/scripts/cluster.sh" node-link)"); done
counters() {
  local l b=0 p=0
  for l in "${links[@]}"; do
    b=$((b + $(cat /sys/class/net/$l/statistics/rx_bytes) + $(cat /sys/class/net/$l/statistics/tx_bytes)))
    p=$((p + $(cat /sys/class/net/$l/statistics/rx_packets) + $(cat /sys/class/net/$l/statistics/tx_packets)))
  done
  echo "$b $p"
}
wire=$out/wire.jsonl
: > "$wire"
on_wire() { # on_wire <name> <config> [homodyne args...]
  local name=$1 cfg=$2 before after t0 code=0
  shift 2
  before=$(counters)
  t0=$(date +%s.%N)
  timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=none "$build/apps/homodyne" --config "$cfg" \
    --output-dir "$d/wire_$name.out" -q "$@" > "$d/wire_$name.log" 2>&1 || code=$?
  [ $code -eq 0 ] || [ $code -eq 4 ] || { cat "$d/wire_$name.log"; exit 1; }
  after=$(counters)
  python3 -c "import json,sys; b0,p0,b1,p1,t0,t1=map(float,sys.argv[2:8]); print(json.dumps(
    {'run': sys.argv[1], 'wire_bytes': b1-b0, 'wire_packets': p1-p0,
     'seconds': t1-t0, 'loadavg_1_5_15': sys.argv[8]}))" \
    "$name" $before $after "$t0" "$(date +%s.%N)" "$(load)" >> "$wire"
}
for mode in static laminar; do
  on_wire "nlsq_${mode}_it2" "$d/$mode.yaml" --max-iterations 2
  on_wire "nlsq_${mode}_it6" "$d/$mode.yaml" --max-iterations 6
  on_wire "cmaes_${mode}_g2" "$d/${mode}_cmaes2.yaml"
  on_wire "cmaes_${mode}_g6" "$d/${mode}_cmaes6.yaml"
done
on_wire cmc_static "$d/static.yaml" --method cmc --no-nlsq-warmstart --cmc-num-shards 4 \
  --n-chains 2 --n-warmup 50 --n-samples 100
# Slurm's own traffic while nothing runs (pings, 10 s), to subtract from nothing but to know.
before=$(counters)
sleep 10
after=$(counters)
python3 -c "import json,sys; b0,p0,b1,p1=map(float,sys.argv[1:5]); print(json.dumps(
  {'run': 'idle_10s', 'wire_bytes': b1-b0, 'wire_packets': p1-p0, 'seconds': 10}))" \
  $before $after >> "$wire"

# 3. Latency against payload.
lat=$out/latency_net.jsonl
: > "$lat"
tag() { "$root/bench/cluster/tag.py" "$1" "$(load)"; }
timeout 300 srun -N1 -n2 --mpi=pmix --cpu-bind=none "$work/coll_latency" "$reps" |
  tag "1 node, srun (shared memory)" >> "$lat"
timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=none "$work/coll_latency" "$reps" |
  tag "2 nodes, srun (TCP over the bridge)" >> "$lat"
OMPI_MCA_mpi_yield_when_idle=1 timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=none \
  "$work/coll_latency" "$reps" | tag "2 nodes, srun, mpi_yield_when_idle=1 (TCP)" >> "$lat"

/usr/bin/python3 "$root/bench/cluster/network_model.py" "$d" "$out" \
  "$root/docs/bench/scaling/2026-11-25" "$root/docs/bench/cluster/2026-11-29/traffic.json"
echo "written: $out"
