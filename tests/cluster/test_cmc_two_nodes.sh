#!/usr/bin/env bash
# Consensus Monte Carlo across nodes: jobscripts/cmc_large.sbatch submitted unchanged to
# two emulated nodes × 2 tasks (4 ranks, one shard each; NLSQ warm start first), small
# chains. The job exits 0, its report names both nodes, and every dataset of
# cmc/samples.h5 is bit for bit that of a plain 2-rank mpiexec run on one host.
source "$(dirname "$0")/lib.sh"
make_data
cmc_args=(--method cmc --cmc-num-shards 4 --n-chains 2 --n-warmup 40 --n-samples 40)
plain_run 2 "$work/plain" "${cmc_args[@]}"

job=$(CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm SHARDS=4 CHAINS=2 WARMUP=40 SAMPLES=40 \
  submit_wait 150 --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 --time=5 \
  "$jobscripts/cmc_large.sbatch")
code=$?
[ $code -eq 0 ] || { show_job_output; fail "sbatch --wait exit $code (job ${job:-?})"; }
"$py" - "$work/slurm/run_report.yaml" <<'PY' || { show_job_output; fail "run report"; }
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
assert r["status"]["exit_code"] == 0, r["status"]
assert r["machine"]["ranks"] == 4, r["machine"]
assert sorted(r["machine"]["hostnames"]) == ["n1", "n2"], r["machine"]["hostnames"]
PY
"$py" - "$work/plain/cmc/samples.h5" "$work/slurm/cmc/samples.h5" <<'PY' || fail "CMC draws differ"
import sys, h5py, numpy as np
def read(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
assert len(a) > 0 and a.keys() == b.keys(), (sorted(a), sorted(b))
bad = [k for k in a if a[k].dtype != b[k].dtype or not np.array_equal(a[k], b[k])]
assert not bad, f"datasets differ: {bad}"
print(f"cmc/samples.h5: {len(a)} datasets bitwise equal ({', '.join(sorted(a)[:4])}, ...)")
PY
echo "PASS: job $job"
