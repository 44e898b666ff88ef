#!/usr/bin/env bash
# CMC checkpoints (docs/checkpoints.md): kill -9 of every rank at 12 points of a CMC run
# (HOMODYNE_KILL_AT=cmc_draw:n / checkpoint_write:n), resume on the other rank count
# (1 ↔ 2): cmc/samples.h5 bit-identical to the uninterrupted run; SIGUSR1 → exit 75 →
# --resume bit-identical; a corrupted newest checkpoint is skipped with a warning.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
cat > "$tmp/s.yaml" <<YAML
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
    backend_config: {checkpoint_frequency: 15}
YAML
"$bindir/homodyne-synth" --config "$tmp/s.yaml" -o "$tmp/static.h5" --frames 24 --angles "0,60,120" \
  --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || { echo "FAIL: synth"; exit 1; }
args=(--method cmc --no-nlsq-warmstart --n-warmup 40 --n-samples 40 --n-chains 2 --cmc-num-shards 2)
run() {  # run <ranks> <outdir> [args...]
  local n=$1 out=$2; shift 2
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/s.yaml" --output-dir "$out" "${args[@]}" "$@"
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

run 2 "$tmp/ref" -q > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; echo "FAIL: reference run"; exit 1; }
# Each rank runs 1 shard × 2 chains × 80 iterations = 160; the chains advance together in
# batches of 15 (6 rounds, a checkpoint after each, plus the final one).
k=0
for point in cmc_draw:1 cmc_draw:14 cmc_draw:15 cmc_draw:16 cmc_draw:44 cmc_draw:79 cmc_draw:80 \
             cmc_draw:81 cmc_draw:100 cmc_draw:159 checkpoint_write:3 checkpoint_write:6; do
  k=$((k + 1)); rm -rf "$tmp/ckpt" "$tmp/k"
  if [ $((k % 2)) -eq 0 ]; then kill_n=2; resume_n=1; else kill_n=1; resume_n=2; fi
  HOMODYNE_KILL_AT=$point run $kill_n "$tmp/k" -q > /dev/null 2>&1; code=$?
  [ $code -ne 0 ] || { echo "FAIL: $point: the run was not killed"; exit 1; }
  has_ckpt=0; ls "$tmp"/ckpt/*/cmc_*.h5 > /dev/null 2>&1 && has_ckpt=1
  run $resume_n "$tmp/k" --resume > "$tmp/resume.log" 2>&1 \
    || { cat "$tmp/resume.log"; echo "FAIL: $point: resume failed"; exit 1; }
  # A checkpoint was left: the resumed run must have used it (not started over).
  if [ $has_ckpt -eq 1 ]; then
    grep -q "resuming CMC from" "$tmp/resume.log" || { cat "$tmp/resume.log"; echo "FAIL: $point: not resumed"; exit 1; }
  fi
  echo -n "$point (killed on $kill_n, resumed on $resume_n): "
  same "$tmp/ref" "$tmp/k" || { echo "FAIL: $point: resumed draws differ"; exit 1; }
done

# Two compute threads on one rank: the shard's two chains run in parallel (one per thread),
# killed mid-batch and resumed with one thread: still the same draws.
rm -rf "$tmp/ckpt" "$tmp/t"
HOMODYNE_KILL_AT=cmc_draw:70 run 1 "$tmp/t" -q --threads 2 > /dev/null 2>&1
[ $? -ne 0 ] || { echo "FAIL: threads: the run was not killed"; exit 1; }
run 1 "$tmp/t" --resume --threads 1 > "$tmp/resume.log" 2>&1 \
  || { cat "$tmp/resume.log"; echo "FAIL: threads: resume failed"; exit 1; }
grep -q "resuming CMC from" "$tmp/resume.log" || { cat "$tmp/resume.log"; echo "FAIL: threads: not resumed"; exit 1; }
echo -n "2 threads, killed, resumed on 1 thread: "
same "$tmp/ref" "$tmp/t" || { echo "FAIL: threads: resumed draws differ"; exit 1; }

# SIGUSR1 on rank 0 only → all ranks stop at the next batch safe point, exit 75.
rm -rf "$tmp/ckpt" "$tmp/s"
out=$(HOMODYNE_SIGNAL_AT=cmc_draw:50 run 2 "$tmp/s" 2>&1); code=$?
[ $code -eq 75 ] || { echo "$out"; echo "FAIL: SIGUSR1 exit code $code (expected 75)"; exit 1; }
[ "$(grep -c 'with --resume' <<<"$out")" -eq 1 ] || { echo "$out"; echo "FAIL: resume hint not printed once"; exit 1; }
run 1 "$tmp/s" -q --resume > /dev/null 2>&1 || { echo "FAIL: resume after SIGUSR1"; exit 1; }
echo -n "SIGUSR1 + resume: "; same "$tmp/ref" "$tmp/s" || { echo "FAIL: after SIGUSR1"; exit 1; }

# Corrupt the newest checkpoint: skipped with a warning naming it, the previous one used.
rm -rf "$tmp/ckpt" "$tmp/c"
HOMODYNE_KILL_AT=cmc_draw:100 run 2 "$tmp/c" -q > /dev/null 2>&1
newest=$(ls "$tmp"/ckpt/*/cmc_*.h5 | sort | tail -1)
"$py" - "$newest" <<'PY' || { echo "FAIL: could not corrupt the checkpoint"; exit 1; }
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    name = sorted(n for n in f if n.endswith(".draws") and f[n].shape[0] > 0)[0]
    info = f[name].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as f:
    f.seek(info.byte_offset + 5)
    b = f.read(1)
    f.seek(info.byte_offset + 5)
    f.write(bytes([b[0] ^ 0x01]))
PY
out=$(run 2 "$tmp/c" --resume 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; echo "FAIL: resume after corruption exit $code"; exit 1; }
grep -q "checkpoint $newest is unusable and skipped" <<<"$out" \
  || { echo "$out"; echo "FAIL: no warning naming the corrupt checkpoint"; exit 1; }
echo -n "corrupt newest checkpoint: "; same "$tmp/ref" "$tmp/c" || { echo "FAIL: after corruption"; exit 1; }
echo "PASS"
