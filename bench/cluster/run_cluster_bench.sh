#!/usr/bin/env bash
# Communication of homodyne-hpc measured on the emulated Slurm cluster (scripts/cluster.sh):
#  1. collective latency (coll_latency.c) between 2 ranks: plain mpiexec on this host,
#     one emulated node (Open MPI's shared memory), two emulated nodes (TCP over the
#     bridge), and one node with shared memory switched off (TCP over loopback);
#  2. what each rank hands to MPI per NLSQ iteration and per CMC run (mpi_count.c through
#     PMPI), at 2 and 4 ranks: calls and payload bytes per operation. Per iteration =
#     (run stopped after 6 iterations − run stopped after 2) / 4, so loading, set-up and
#     output do not count.
# Writes latency.jsonl, traffic.json and summary.md to docs/bench/cluster/<date>/ (or $1).
# Needs root (the cluster); starts the cluster if it is not running and stops it then.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/docs/bench/cluster/$(date -u +%Y-%m-%d)}
build=${BUILD_DIR:-$root/build}
reps=${REPS:-400}
mkdir -p "$out"
work=$build/bench-cluster
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

# 1. Latency. --cpu-bind=none: the two nodes share this machine's cores, so bound ranks of
# two nodes would both sit on core 0; unbound, the kernel gives each rank a core.
lat=$out/latency.jsonl
: > "$lat"
tag() { "$root/bench/cluster/tag.py" "$1" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
mpiexec -n 2 "$work/coll_latency" "$reps" | tag "host, mpiexec (shared memory)" >> "$lat"
timeout 300 srun -N1 -n2 --mpi=pmix --cpu-bind=none "$work/coll_latency" "$reps" |
  tag "1 node, srun (shared memory)" >> "$lat"
timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=none "$work/coll_latency" "$reps" |
  tag "2 nodes, srun (TCP over the bridge)" >> "$lat"
# As the job scripts place them: --cpu-bind=cores puts each node's first rank on core 0,
# so the ranks of the two nodes share one core.
timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=cores "$work/coll_latency" "$reps" |
  tag "2 nodes, srun --cpu-bind=cores (TCP; both ranks on core 0)" >> "$lat"
OMPI_MCA_mpi_yield_when_idle=1 timeout 300 srun -N2 -n2 --mpi=pmix --cpu-bind=none \
  "$work/coll_latency" "$reps" | tag "2 nodes, srun, mpi_yield_when_idle=1 (TCP)" >> "$lat"
OMPI_MCA_btl=self,tcp timeout 300 srun -N1 -n2 --mpi=pmix --cpu-bind=none \
  "$work/coll_latency" "$reps" | tag "1 node, srun, btl self,tcp (TCP over loopback)" >> "$lat"
# The bridge's own round trip, with blocking receives (no polling), node 1 → node 2.
addr2=$(timeout 30 srun -N1 -w n2 hostname -I | awk '{print $1}')
timeout 60 srun -N1 -n1 -w n2 --cpu-bind=none "$root/bench/cluster/tcp_pingpong.py" server "$addr2" &
sleep 2
timeout 60 srun -N1 -n1 -w n1 --cpu-bind=none "$root/bench/cluster/tcp_pingpong.py" client "$addr2" |
  tag "2 nodes, TCP socket (no MPI)" >> "$lat"
wait

# 2. Traffic per rank.
d=$work/traffic
rm -rf "$d"
mkdir -p "$d"
cat > "$d/static.yaml" <<YAML
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
cat > "$d/laminar.yaml" <<YAML
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
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
YAML
"$build/apps/homodyne-synth" --config "$d/static.yaml" -o "$d/static.h5" --frames 60 \
  --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q
"$build/apps/homodyne-synth" --config "$d/laminar.yaml" -o "$d/laminar.h5" --frames 60 \
  --angles "0,45,90,135" --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 \
  --param phi0=4 --noise 0.001 -q
count() { # count <name> <ranks> <config> [homodyne args...]
  local name=$1 n=$2 cfg=$3
  shift 3
  mkdir -p "$d/$name"
  MPI_COUNT_DIR=$d/$name mpiexec -n "$n" -x MPI_COUNT_DIR -x LD_PRELOAD="$work/libmpi_count.so" \
    "$build/apps/homodyne" --config "$cfg" --output-dir "$d/$name.out" -q "$@" > "$d/$name.log" 2>&1 ||
    [ $? -eq 4 ] || { cat "$d/$name.log"; exit 1; }   # 4: stopped at --max-iterations
}
for n in 2 4; do
  for mode in static laminar; do
    count "nlsq_${mode}_np${n}_it2" "$n" "$d/$mode.yaml" --max-iterations 2
    count "nlsq_${mode}_np${n}_it6" "$n" "$d/$mode.yaml" --max-iterations 6
  done
  count "cmc_static_np${n}" "$n" "$d/static.yaml" --method cmc --no-nlsq-warmstart \
    --cmc-num-shards 4 --n-chains 2 --n-warmup 50 --n-samples 100
done
"$root/bench/cluster/traffic.py" "$d" "$lat" "$out"
echo "written: $out"
