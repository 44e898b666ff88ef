#!/usr/bin/env bash
# A second, equally good phi0, named (docs/global.md, the phi0 check). With two angles
# (homodyne's laminar template keeps the ranges around 0° and 90°) the data fix two shear
# scales γ̇·|cos(φ − φ0)|, which two values of phi0 reproduce: phi0 and −phi0 for 0° and 90°.
# The default pipeline's phi0 check reaches both; the run must say so, not report one with a
# σ of 0.01° as if it were the answer:
#   1. angles 0 and 90: a warning, the summary line, degeneracy.equivalent_minima in
#      analysis_results_nlsq.json and run_report.yaml (the other phi0 ≈ −answer, a barrier
#      between them), exit 0; the same record at 1 and 2 ranks, bit for bit;
#      CMC from that answer (--nlsq-result, and --method both) says its posterior is of the
#      answer's mode only (a warning and diagnostics.json's warnings);
#   2. the same with the screen on rows forced (screen_max_points below the points): found
#      among the row fits, on_rows true;
#   3. angles 0, 45, 90 and 135: no equivalent minimum, no warning;
#   4. angles 1 and 89: the second phi0 is not −phi0, and is named all the same.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

write_cfg() {  # write_cfg <file> <data file> [extra yaml under optimization.nlsq]
  cat > "$1" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: $2
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [18000, -0.35, 20, 0.0025, 0.15, 0.0001, 3]
optimization:
  nlsq:
    recovery: {${3:-}}
YAML
}
synth() {  # synth <data file> <angles>
  write_cfg "$tmp/truth.yaml" "$1"
  "$bindir/homodyne-synth" --config "$tmp/truth.yaml" -o "$tmp/$1" --frames 50 --angles "$2" \
    --param D0=20000 --param alpha=-0.4 --param D_offset=10 --param gamma_dot_t0=0.003 \
    --param beta=0.2 --param gamma_dot_t_offset=0.0001 --param phi0=-5 --noise 0.002 -q \
    || fail "synth $1"
}
synth pair.h5 "0,90"
synth four.h5 "0,45,90,135"
synth near.h5 "1,89"
write_cfg "$tmp/pair.yaml" pair.h5
write_cfg "$tmp/pair_rows.yaml" pair.h5 "screen_max_points: 200"
write_cfg "$tmp/four.yaml" four.h5
write_cfg "$tmp/near.yaml" near.h5

run() {  # run <ranks> <config> <out>: the log in <out>.log; exit 0 expected
  "$mpiexec" -n "$1" "$bindir/homodyne" --config "$2" -o "$3" --threads 1 > "$3.log" 2>&1 \
    || { tail -n 30 "$3.log"; fail "$3: exit $?"; }
}
# The record of the equivalent minima in both files, and its checks; prints it (one line).
record() {  # record <out> <expected count> [on_rows|not_mirror]
  "$py" - "$@" <<'PY'
import json, sys, yaml
out, count = sys.argv[1], int(sys.argv[2])
on_rows = sys.argv[3:] == ["on_rows"]
mirror = sys.argv[3:] != ["not_mirror"]
a = json.load(open(out + "/nlsq/analysis_results_nlsq.json"))["degeneracy"]["equivalent_minima"]
r = yaml.safe_load(open(out + "/run_report.yaml"))["degeneracy"]["equivalent_minima"]
assert len(a) == count, f"{out}: {len(a)} equivalent minima, expected {count}: {a}"
assert len(r) == len(a), f"{out}: run_report.yaml has {len(r)}, analysis_results {len(a)}"
for m, n in zip(a, r):
    assert m["parameter"] == n["parameter"] == "phi0", m
    assert m["value"] == n["value"] and m["objective"] == n["objective"], (m, n)
    if mirror:
        assert abs(m["value"] + m["answer_value"]) < 0.05, f"not the mirror: {m}"
    else:
        assert abs(m["value"] + m["answer_value"]) > 0.5, f"the mirror: {m}"
        assert abs(m["value"] - m["answer_value"]) > 1, m
    assert abs(m["answer_value"]) > 1, m
    assert abs(m["objective"] - m["answer_objective"]) <= 1e-6 * m["answer_objective"], m
    assert m["barrier_objective"] > 1.0001 * m["answer_objective"], m
    assert m["on_rows"] is on_rows, m
print(json.dumps(a, sort_keys=True))
PY
}

# 1. Angles 0 and 90, at 2 and 1 ranks.
run 2 "$tmp/pair.yaml" "$tmp/p2"
grep -q "fits as well as the answer's" "$tmp/p2.log" || { cat "$tmp/p2.log"; fail "no warning"; }
grep -q "^  equally good      phi0" "$tmp/p2.log" || { cat "$tmp/p2.log"; fail "no summary line"; }
rec2=$(record "$tmp/p2" 1) || fail "the record at 2 ranks"
run 1 "$tmp/pair.yaml" "$tmp/p1"
rec1=$(record "$tmp/p1" 1) || fail "the record at 1 rank"
[ "$rec1" = "$rec2" ] || fail "the record differs between 1 and 2 ranks: $rec1 / $rec2"
echo "angles 0, 90: $rec2"
cmc_says() {  # cmc_says <out>: the CMC warning in the log and in diagnostics.json
  grep -q "CMC: the NLSQ answer has a second, equally good phi0" "$1.log" \
    || { tail -n 20 "$1.log"; fail "$1: no CMC warning"; }
  "$py" - "$1/cmc/diagnostics.json" <<'PY' || fail "$1: diagnostics.json"
import json, sys
w = json.load(open(sys.argv[1]))["cmc_specific"]["warnings"]
assert any("second, equally good phi0" in x and "only" in x for x in w), w
PY
}
short=(--n-warmup 20 --n-samples 20 --cmc-num-shards 1)
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/pair.yaml" --method cmc --nlsq-result "$tmp/p2" \
  -o "$tmp/c2" --threads 1 "${short[@]}" > "$tmp/c2.log" 2>&1 || fail "CMC from the answer: exit $?"
cmc_says "$tmp/c2"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/pair.yaml" --method both -o "$tmp/b2" \
  --threads 1 "${short[@]}" > "$tmp/b2.log" 2>&1 || fail "--method both: exit $?"
cmc_says "$tmp/b2"

# 2. The same through the screen on rows.
run 2 "$tmp/pair_rows.yaml" "$tmp/rows"
grep -q "screened on every" "$tmp/rows.log" || { cat "$tmp/rows.log"; fail "the screen did not run"; }
rows=$(record "$tmp/rows" 1 on_rows) || fail "the record through the screen"
echo "screened: $rows"

# 3. Four angles: phi0's sign is determined.
run 2 "$tmp/four.yaml" "$tmp/f2"
grep -q "fits as well as the answer's" "$tmp/f2.log" && fail "a warning with four angles"
record "$tmp/f2" 0 > /dev/null || fail "four angles: equivalent minima recorded"

# 4. Angles 1 and 89.
run 2 "$tmp/near.yaml" "$tmp/n2"
near=$(record "$tmp/n2" 1 not_mirror) || { grep "phi0 check" "$tmp/n2.log"; fail "angles 1, 89"; }
echo "angles 1, 89: $near"
echo "PASS"
