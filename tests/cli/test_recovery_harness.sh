#!/usr/bin/env bash
# The recovery study's harness (bench/recovery, docs/robustness.md) on 3 datasets: it runs,
# writes its JSON, table and figure, reports a configuration whose key this build rejects as
# unavailable instead of failing, and its JSON has the structure the document relies on.
# A check of the harness, not of the solver: the numbers are not judged.
set -uo pipefail
bindir=$1; mpiexec=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if ! "$py" -c 'import matplotlib, numpy, yaml' 2>/dev/null; then
  echo "SKIP: Debian's python3-matplotlib/numpy/yaml are not installed (exit 77: ctest reports the test as skipped)"; exit 77
fi
build=$(cd "$bindir/.." && pwd)
out=$(PATH="$(dirname "$mpiexec"):$PATH" bash "$root/bench/recovery/run_recovery_study.sh" \
      --build "$build" --out "$tmp/out" --datasets 3 --seed 7 \
      --variant 'bogus:optimization.nlsq.no_such_key=true' 2>&1); code=$?
echo "$out" | tail -12
[ $code -eq 0 ] || fail "harness exit code $code"
for f in recovery.json recovery.md recovery.png; do
  [ -s "$tmp/out/$f" ] || fail "$f missing"
done
grep -q '^| configuration |' "$tmp/out/recovery.md" || fail "no table in recovery.md"
grep -q '\[3/3\] ds002' <<<"$out" || fail "no progress line per dataset"
"$py" - "$tmp/out/recovery.json" <<'PY' || fail "recovery.json structure"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n_datasets"] == 3 and len(d["datasets"]) == 3, "datasets"
modes = {ds["mode"] for ds in d["datasets"]}
assert modes == {"static", "laminar_flow"}, modes
for name in ("truth", "default", "default+checkpoints", "cmaes", "bogus"):
    assert name in d["summary"], name
assert d["summary"]["bogus"]["available"] is False, "a rejected key must be unavailable"
assert "no_such_key" in d["summary"]["bogus"]["reason"], d["summary"]["bogus"]
for name in ("truth", "default", "default+checkpoints"):
    s = d["summary"][name]
    assert s["available"] and s["runs"] == 3, (name, s)
    for key in ("fraction_reached", "converged_away", "converged_away_datasets",
                "status_counts", "median_wall_seconds", "total_wall_seconds"):
        assert key in s, (name, key)
available = [c for c, s in d["summary"].items() if s["available"]]
assert len(d["runs"]) == 3 * len(available), len(d["runs"])
for r in d["runs"]:
    for key in ("dataset", "config", "exit_code", "chi2", "status", "iterations",
                "wall_seconds", "chi2_ratio", "x"):
        assert key in r, (r.get("dataset"), r.get("config"), key)
    assert r["chi2_ratio"] >= 1.0, r
for ds in d["datasets"]:
    ratios = [r["chi2_ratio"] for r in d["runs"] if r["dataset"] == ds["id"]]
    assert min(ratios) == 1.0, "the reference is the best fit of the dataset"
assert "default vs default+checkpoints" in d["bitwise"], d["bitwise"]
PY
echo PASS
