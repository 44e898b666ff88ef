#!/usr/bin/env bash
# `homodyne --version` under mpiexec -n 2 prints the versions exactly once.
set -euo pipefail
bindir=$1; mpiexec=$2
out=$(timeout 60 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --version)
echo "$out"
count=$(grep -c '^homodyne-hpc ' <<<"$out" || true)
[ "$count" -eq 1 ] || { echo "FAIL: version block printed $count times"; exit 1; }
for lib in MPI PETSc HDF5 yaml-cpp hwloc; do
  grep -q "^  $lib " <<<"$out" || { echo "FAIL: no $lib line"; exit 1; }
done
grep -q 'HDF5 .*(parallel)' <<<"$out" || { echo "FAIL: HDF5 not reported as parallel"; exit 1; }
echo "PASS"
