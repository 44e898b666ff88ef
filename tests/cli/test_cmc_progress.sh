#!/usr/bin/env bash
# CMC progress inside a shard: with HOMODYNE_PROGRESS=lines and a short
# HOMODYNE_PROGRESS_INTERVAL, a CMC run whose one shard samples for a few seconds writes
# several progress lines for that shard before it is done, each with the draws done of the
# shard's total, draws per second and an ETA (docs/cmc.md, "Progress"); a bad interval is
# an error naming the variable (exit code 2); a shard too short to mix is warned about with
# the remedy to try first.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
cat > "$tmp/c.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: static.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [30000, -0.6, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/c.yaml" -o "$tmp/static.h5" --frames 40 \
  --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || fail "synth"
base=(--config "$tmp/c.yaml" --method cmc --no-nlsq-warmstart --n-chains 2 --cmc-num-shards 1)
args=("${base[@]}" --n-warmup 300 --n-samples 1500)
HOMODYNE_PROGRESS=lines HOMODYNE_PROGRESS_INTERVAL=0.1 "$mpiexec" -n 1 "$bindir/homodyne" \
  "${args[@]}" -o "$tmp/out" > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "CMC run"; }
grep "CMC: shard" "$tmp/log"
"$py" - "$tmp/log" 3600 <<'PY' || fail "progress lines"
import re, sys
total = int(sys.argv[2])
line = re.compile(r"CMC: shard 0 (done )?\(1/1 on rank 0, 1 in all\): (\d+)/(\d+) draws, "
                  r"([0-9.]+) draws/s, ETA (\d+ s|unknown)$")
seen = [m for m in (line.search(l.rstrip()) for l in open(sys.argv[1])) if m]
running = [m for m in seen if not m.group(1)]
done = [m for m in seen if m.group(1)]
assert all(int(m.group(3)) == total for m in seen), [m.group(0) for m in seen]
# Several lines while the shard samples, counts rising, each below the total and with a rate.
counts = [int(m.group(2)) for m in running]
assert counts == sorted(counts) and all(c <= total for c in counts), counts
inside = [m for m in running if 0 < int(m.group(2)) < total]
assert len(inside) >= 3, f"{len(inside)} progress line(s) while the shard sampled: {counts}"
assert all(float(m.group(4)) > 0 and m.group(5) != "unknown" for m in inside), "no rate or ETA"
# The done line may fall inside the interval of the last running line (throttled).
assert len(done) <= 1 and all(int(m.group(2)) == total for m in done), [m.group(0) for m in done]
print(f"{len(inside)} lines while shard 0 sampled")
PY
# Chains far too short to mix (2 x 10 draws): each shard's warning says the posterior is
# labelled not_converged and what to try first.
"$mpiexec" -n 1 "$bindir/homodyne" "${base[@]}" --n-warmup 20 --n-samples 10 -o "$tmp/short" \
  > "$tmp/short.log" 2>&1 || { cat "$tmp/short.log"; fail "short CMC run"; }
grep "CMC shard 0 not converged: " "$tmp/short.log" | grep "labelled not_converged" |
  grep -q -- "--n-warmup, --n-samples" || { cat "$tmp/short.log"; fail "no remedy in the warning"; }
out=$(HOMODYNE_PROGRESS_INTERVAL=soon "$mpiexec" -n 1 "$bindir/homodyne" "${args[@]}" \
  -o "$tmp/bad" 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "$out"; fail "bad HOMODYNE_PROGRESS_INTERVAL: exit $rc, not 2"; }
grep -q "HOMODYNE_PROGRESS_INTERVAL" <<<"$out" || { echo "$out"; fail "message does not name the variable"; }
echo "PASS"
