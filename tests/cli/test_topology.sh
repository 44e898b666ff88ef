#!/usr/bin/env bash
# homodyne-topology agrees with hwloc's own tools and recommends one rank per NUMA
# domain with one thread per core; the mpirun line it prints actually launches.
set -euo pipefail
bindir=$1; mpiexec=$2
json=$("$bindir/homodyne-topology" --show --json)
text=$("$bindir/homodyne-topology" --show --nodes 3)
echo "$text"
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" <<<"$json"; }
cores=$(hwloc-calc -N core all); numa=$(hwloc-calc -N numa all)
[ "$(field "d['hardware']['cores']")" = "$cores" ] || { echo "FAIL: cores"; exit 1; }
[ "$(field "d['hardware']['numa_nodes']")" = "$numa" ] || { echo "FAIL: NUMA nodes"; exit 1; }
[ "$(field "d['recommendation']['ranks_per_node']")" = "$numa" ] || { echo "FAIL: ranks"; exit 1; }
tpr=$(field "d['recommendation']['threads_per_rank']")
[ $((tpr * numa)) -le "$cores" ] || { echo "FAIL: oversubscribed recommendation"; exit 1; }
grep -q -- "--map-by ppr:1:numa:PE=$tpr --bind-to core" <<<"$text" || { echo "FAIL: mpirun line"; exit 1; }
grep -q -- "srun --mpi=pmix --nodes=3 --ntasks-per-node=$numa --cpus-per-task=$tpr" <<<"$text" \
  || { echo "FAIL: srun line not scaled to 3 nodes"; exit 1; }
# The recommended Open MPI mapping is accepted by this machine's mpirun.
"$mpiexec" -np "$numa" --map-by "ppr:1:numa:PE=$tpr" --bind-to core "$bindir/homodyne" --version >/dev/null
"$bindir/homodyne-topology" --nodes 0 >/dev/null 2>&1 && { echo "FAIL: --nodes 0 accepted"; exit 1; }
echo PASS
