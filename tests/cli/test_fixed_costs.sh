#!/usr/bin/env bash
# Fixed costs of a whole job (issue 43): run_report.yaml itemises them (start-up, the phases
# that are not fitting) with their total, rank 0 closes the run with a line that adds the
# report and the shutdown; a one-node job starts Open MPI with shared-memory transports
# only, and a choice made in the environment is kept. The answer is the same bits at 1 and
# 2 ranks with homodyne's transports and over TCP. PETSc is loaded only when asked for.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [15000, -0.3, 0]
output: {fitted_data: none}
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 40 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }

check_report() {  # run_report.yaml's fixed_costs section: every item, in order, and the total
  /usr/bin/python3 - "$1" <<'PY'
import math, sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
f = r["fixed_costs"]
items = f["seconds_max_over_ranks"]
names = list(items)
start = ["exec_and_loading", "before_environment", "mpi_init", "petsc_init", "topology"]
assert names[:5] == start, names
for phase in ("config", "load", "initial_scaling", "write_outputs"):
    assert phase in names, (phase, names)
for not_fixed in ("fit", "launch", "init", "cmaes"):
    assert not_fixed not in names, (not_fixed, names)
for name, v in items.items():
    assert v is not None and v >= 0.0, (name, v)
# The items are the slowest rank's each; the total is the slowest rank's sum, so it lies
# between the largest item and the sum of the items.
assert max(items.values()) <= f["total_seconds"] <= sum(items.values()) + 1e-9, f
# The launch's parts and the start-up items add up to the phases launch + init (one rank).
t = r["timing_seconds"]
if r["machine"]["ranks"] == 1:
    parts = sum(items[n] for n in start)
    whole = t["launch"]["max"] + t["init"]["max"]
    assert abs(parts - whole) < 0.03, (parts, whole)  # /proc/self/stat's 10 ms ticks
assert "finalisation" in f["after_this_report"], f
PY
}

check_line() {  # the closing line: every item of the report, the report and the shutdown
  grep -E '^fixed costs \(rank 0, s\): exec_and_loading [0-9.]+, .*mpi_init [0-9.]+, .*run_report [0-9.]+, topology_free [0-9.]+, petsc_finalize [0-9.]+, mpi_finalize [0-9.]+; total [0-9.]+ s$' <<<"$1" >/dev/null
}

# No launcher: a singleton, isolated (no helper daemon).
out=$(env -u OMPI_MCA_pml -u OMPI_MCA_btl -u OMPI_MCA_ess_singleton_isolated \
  "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/o1" -v 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out" | tail; echo "FAIL: 1-rank fit exit $code"; exit 1; }
check_report "$tmp/o1/run_report.yaml" || { echo "FAIL: 1-rank fixed_costs section"; exit 1; }
check_line "$out" || { echo "$out" | tail -3; echo "FAIL: 1-rank closing line"; exit 1; }
grep -q 'one-node job (no launcher): Open MPI pml ob1, btl self,vader, singleton isolated 1' <<<"$out" \
  || { echo "FAIL: singleton transports"; exit 1; }
grep -q 'PETSc not loaded' <<<"$out" || { echo "FAIL: PETSc's state not logged at -v"; exit 1; }
# -q: no closing line.
out=$("$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/oq" -q 2>&1)
grep -q 'fixed costs' <<<"$out" && { echo "FAIL: closing line under -q"; exit 1; }

# mpiexec, both ranks on this node.
out=$(env -u OMPI_MCA_pml -u OMPI_MCA_btl "$mpiexec" -n 2 "$bindir/homodyne" \
  --config "$tmp/cfg.yaml" --output-dir "$tmp/o2" -v 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out" | tail; echo "FAIL: 2-rank fit exit $code"; exit 1; }
check_report "$tmp/o2/run_report.yaml" || { echo "FAIL: 2-rank fixed_costs section"; exit 1; }
check_line "$out" || { echo "FAIL: 2-rank closing line"; exit 1; }
[ "$(grep -c '^fixed costs' <<<"$out")" -eq 1 ] || { echo "FAIL: closing line not once"; exit 1; }
grep -q 'one-node job (every rank on this node): Open MPI pml ob1, btl self,vader' <<<"$out" \
  || { echo "FAIL: mpiexec transports"; exit 1; }

# A choice in the environment is kept, and other transports (TCP) give the same bits.
out=$(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp "$mpiexec" -n 2 "$bindir/homodyne" \
  --config "$tmp/cfg.yaml" --output-dir "$tmp/o3" -v 2>&1)
grep -q 'Open MPI pml ob1, btl self,vader,tcp' <<<"$out" || { echo "FAIL: user btl not kept"; exit 1; }
out=$(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp "$mpiexec" -n 2 "$bindir/homodyne" \
  --config "$tmp/cfg.yaml" --output-dir "$tmp/o4" -v 2>&1); code=$?
[ $code -eq 0 ] || { echo "FAIL: TCP transports exit $code"; exit 1; }
grep -q 'Open MPI pml ob1, btl self,tcp' <<<"$out" || { echo "FAIL: TCP not used"; exit 1; }
for o in o1 o3 o4; do
  cmp -s <(grep '"chi_squared"' "$tmp/o2/nlsq/parameters.json") \
         <(grep '"chi_squared"' "$tmp/$o/nlsq/parameters.json") \
    || { echo "FAIL: chi2 of $o differs from o2"; exit 1; }
done
# PETSc on demand: a default fit never maps PETSc (glibc's LD_DEBUG=files lists every object
# loaded, dlopen's too); PETSc options or a TAO method load it. Through TaoSolve (PETSc
# options given) the default solve gives the bits of the bare loop.
petsc_loaded() { grep -q 'file=.*libpetsc' "$1".*; }
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld0" "$bindir/homodyne" --config "$tmp/cfg.yaml" \
  --output-dir "$tmp/p0" -q || { echo "FAIL: default fit under LD_DEBUG"; exit 1; }
petsc_loaded "$tmp/ld0" && { echo "FAIL: a default fit loaded PETSc"; exit 1; }
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld1" "$bindir/homodyne" --config "$tmp/cfg.yaml" \
  --output-dir "$tmp/p1" -q -tao_converged_reason >/dev/null \
  || { echo "FAIL: fit with a PETSc option"; exit 1; }
petsc_loaded "$tmp/ld1" || { echo "FAIL: PETSc options did not load PETSc"; exit 1; }
cmp -s <(grep '"chi_squared"' "$tmp/p0/nlsq/parameters.json") \
       <(grep '"chi_squared"' "$tmp/p1/nlsq/parameters.json") \
  || { echo "FAIL: chi2 through TaoSolve differs from the bare loop's"; exit 1; }
sed 's/^output: {fitted_data: none}$/output: {fitted_data: none}\noptimization: {nlsq: {local_solver: bnls}}/' \
  "$tmp/cfg.yaml" > "$tmp/cfg_bnls.yaml"
grep -q 'local_solver: bnls' "$tmp/cfg_bnls.yaml" || { echo "FAIL: bnls config"; exit 1; }
for n in 1 2; do
  LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ldb$n" "$mpiexec" -n $n "$bindir/homodyne" \
    --config "$tmp/cfg_bnls.yaml" --output-dir "$tmp/b$n" -q \
    || { echo "FAIL: bnls fit at $n rank(s)"; exit 1; }
  petsc_loaded "$tmp/ldb$n" || { echo "FAIL: bnls did not load PETSc"; exit 1; }
done
cmp -s <(grep '"chi_squared"' "$tmp/b1/nlsq/parameters.json") \
       <(grep '"chi_squared"' "$tmp/b2/nlsq/parameters.json") \
  || { echo "FAIL: bnls chi2 differs between 1 and 2 ranks"; exit 1; }
echo "PASS"
