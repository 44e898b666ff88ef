#!/usr/bin/env bash
# Runs one MPI rank's command under /usr/bin/time and writes the rank's peak resident set
# size (KiB) to DIR/rss/rank_<rank>.kib. The rank comes from Open MPI, MPICH/PMI or SLURM.
#   mpirun -np 2 bench/rss_wrap.sh DIR homodyne ...
set -uo pipefail
dir=$1; shift
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}
mkdir -p "$dir/rss"
exec /usr/bin/time -f '%M' -o "$dir/rss/rank_${rank}.kib" "$@"
