#!/usr/bin/env bash
# CMC warmup reruns (docs/cmc.md, step 6b): with a warmup too short for the shards, a shard
# whose chains diverge above max_divergence_rate is sampled again with twice the warmup and
# kept, where without reruns (warmup_retries: 0) the same shard is dropped; the reruns give
# the same draws at 1 and 2 ranks, 1 and 2 threads, and after a kill in the rerun and a
# resume on the other rank count.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
config() {  # config <warmup_retries>
  cat <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: static.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
optimization:
  streaming:
    enable_checkpoints: true
    checkpoint_dir: $tmp/ckpt
  cmc:
    backend_config: {checkpoint_frequency: 10}
    validation: {warmup_retries: $1, heterogeneity_abort: false, min_success_rate: 0.0}
    # Unwhitened coordinates: 40 warmup iterations leave one shard at about 20 % divergent
    # draws (and 80 adapt it), a cheap stand-in for a hard laminar shard.
    reparameterization: {laplace_whitening: false}
YAML
}
config 1 > "$tmp/retry.yaml"
config 0 > "$tmp/none.yaml"
"$bindir/homodyne-synth" --config "$tmp/retry.yaml" -o "$tmp/static.h5" --frames 24 \
  --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q \
  || { echo "FAIL: synth"; exit 1; }
args=(--method cmc --no-nlsq-warmstart --n-warmup 40 --n-samples 40 --n-chains 2
      --cmc-num-shards 2)
run() {  # run <config> <ranks> <outdir> [args...]
  local cfg=$1 n=$2 out=$3; shift 3
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/$cfg.yaml" --output-dir "$out" \
    "${args[@]}" "$@"
}
same() {  # same <dir a> <dir b>: every dataset of cmc/samples.h5 bitwise equal
  "$py" - "$1/cmc/samples.h5" "$2/cmc/samples.h5" <<'PY'
import sys, h5py, numpy as np
def read(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
ok = a.keys() == b.keys() and len(a) > 0 and all(
    np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)
print(f"{len(a)} datasets {'bit-identical' if ok else 'DIFFER'}")
sys.exit(0 if ok else 1)
PY
}
shards() {  # shards <dir>: one line per shard: shard divergence_rate num_warmup attempts used
  "$py" - "$1/cmc/shard_diagnostics.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])):
    print(s["shard"], s["divergence_rate"], s.get("num_warmup"), s.get("warmup_attempts"),
          int(s["used_in_combination"]))
PY
}

run none 2 "$tmp/none" -q > "$tmp/none.log" 2>&1 || { cat "$tmp/none.log"; echo "FAIL: run without reruns"; exit 1; }
run retry 2 "$tmp/ref" -q > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; echo "FAIL: run with reruns"; exit 1; }
echo "without reruns (shard, divergence rate, warmup, runs, used):"; shards "$tmp/none"
echo "with one rerun:"; shards "$tmp/ref"
# The case needs a shard that diverges too often with the short warmup; without reruns it
# is dropped, with them it is sampled again with twice the warmup, kept, and below the rate.
"$py" - "$tmp/none" "$tmp/ref" 40 <<'PY' || { echo "FAIL: reruns"; exit 1; }
import json, sys
none = json.load(open(sys.argv[1] + "/cmc/shard_diagnostics.json"))
ref = json.load(open(sys.argv[2] + "/cmc/shard_diagnostics.json"))
w = int(sys.argv[3])
dropped = [s["shard"] for s in none if s["divergence_rate"] > 0.1]
assert dropped, "no shard diverges with the short warmup: the case does not test reruns"
assert all(not s["used_in_combination"] for s in none if s["shard"] in dropped)
assert all(s["warmup_attempts"] == 1 and s["num_warmup"] == w for s in none)
for s in ref:
    rerun = s["shard"] in dropped
    assert s["warmup_attempts"] == (2 if rerun else 1), s
    assert s["num_warmup"] == (2 * w if rerun else w), s
    if rerun:
        assert s["divergence_rate"] <= 0.1 and s["used_in_combination"], s
    else:  # a shard that needed no rerun has the draws of the run without reruns
        assert s["divergence_rate"] == [n for n in none if n["shard"] == s["shard"]][0]["divergence_rate"]
d = json.load(open(sys.argv[2] + "/cmc/diagnostics.json"))["cmc_specific"]
assert d["num_shards_used"] == len(ref), d["num_shards_used"]
print("rerun shard(s)", dropped, "kept")
PY

run retry 1 "$tmp/t" -q --threads 2 > "$tmp/t.log" 2>&1 || { cat "$tmp/t.log"; echo "FAIL: 1 rank"; exit 1; }
echo -n "1 rank, 2 threads: "; same "$tmp/ref" "$tmp/t" || { echo "FAIL: 1 rank differs"; exit 1; }

# Killed in shard 0's rerun (at 2 ranks rank 0 runs 2 chains × 80 iterations = 160, then
# the rerun's 2 × 120; at 1 rank shard 0's 400 come first), resumed on the other rank
# count: the same draws.
for point in 2:200 1:250; do
  n=${point#*:}; k=${point%%:*}
  rm -rf "$tmp/ckpt" "$tmp/k"
  if [ "$k" = 2 ]; then resume_n=1; else resume_n=2; fi
  HOMODYNE_KILL_AT=cmc_draw:$n run retry "$k" "$tmp/k" -q > /dev/null 2>&1
  [ $? -ne 0 ] || { echo "FAIL: cmc_draw:$n: the run was not killed"; exit 1; }
  run retry $resume_n "$tmp/k" --resume > "$tmp/resume.log" 2>&1 \
    || { cat "$tmp/resume.log"; echo "FAIL: cmc_draw:$n: resume failed"; exit 1; }
  grep -q "resuming CMC from" "$tmp/resume.log" || { cat "$tmp/resume.log"; echo "FAIL: cmc_draw:$n: not resumed"; exit 1; }
  echo -n "killed at cmc_draw:$n on $k rank(s), resumed on $resume_n: "
  same "$tmp/ref" "$tmp/k" || { echo "FAIL: cmc_draw:$n: resumed draws differ"; exit 1; }
done
echo "PASS"
