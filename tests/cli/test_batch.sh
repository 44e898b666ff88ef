#!/usr/bin/env bash
# `homodyne batch` at 2 ranks (two groups of one rank): 9 tiny tasks (8 NLSQ, one NLSQ +
# CMC) of which four are bad (missing data file, an unknown config key in the overrides, a
# base config with a YAML syntax error, a fit stopped before convergence). The good tasks complete with their outputs, the bad ones are in
# batch_summary.{json,csv} with their errors, the exit code is 3; a rerun skips the
# finished tasks without touching their outputs; a bad batch file (or an output_root that
# cannot be made) exits 2 naming the key before any task runs.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/base.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: a.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/base.yaml" -o "$tmp/a.h5" --frames 30 --angles "0,60,120" \
  --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || { echo "FAIL: synth a"; exit 1; }
"$bindir/homodyne-synth" --config "$tmp/base.yaml" -o "$tmp/b.h5" --frames 30 --angles "0,90" \
  --param D0=12000 --param alpha=-0.4 --noise 0.003 -q || { echo "FAIL: synth b"; exit 1; }
printf 'analysis_mode: static\nanalyzer_parameters: [dt: 0.1\n' > "$tmp/broken.yaml"
cat > "$tmp/batch.yaml" <<YAML
output_root: out
group_size: 1
defaults:
  config: base.yaml
  method: nlsq
tasks:
  - {name: a_default}
  - {name: b_file, data_file: b.h5}
  - {name: a_q, q: 0.0054}
  - name: b_start
    data_file: b.h5
    overrides: {initial_parameters: {values: [10000, -0.2, 0]}}
  - {name: missing_data, data_file: nowhere.h5}
  - name: bad_override
    overrides: {optimization: {nlsq: {max_iterationz: 5}}}
  - {name: broken_config, config: broken.yaml}
  - name: not_converged
    overrides: {optimization: {nlsq: {max_iterations: 1}}}
  - name: a_both
    method: both
    overrides:
      optimization:
        cmc:
          sharding: {num_shards: 2}
          per_shard_mcmc: {num_warmup: 60, num_samples: 60, num_chains: 2}
YAML

out=$("$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/batch.yaml" 2>&1); code=$?
echo "$out" | tail -15
[ $code -eq 3 ] || { echo "FAIL: exit code $code (expected 3: some tasks failed)"; exit 1; }
sum="$tmp/out/batch_summary.json"; csv="$tmp/out/batch_summary.csv"
[ -s "$sum" ] && [ -s "$csv" ] || { echo "FAIL: summary missing"; exit 1; }
/usr/bin/python3 - "$sum" <<'PY' || { echo "FAIL: batch_summary.json content"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
t = {r["task"]: r for r in s["tasks"]}
assert len(t) == 9, t.keys()
for name in ["a_default", "b_file", "a_q", "b_start", "a_both"]:
    r = t[name]
    assert r["status"] == "ok" and r["exit_code"] == 0, r
    assert r["ranks"] == 1 and r["group"] in (0, 1), r
    assert r["chi2"] > 0 and r["reduced_chi2"] > 0 and r["convergence"] == "converged", r
    assert {"D0", "alpha", "D_offset"} <= set(r["parameters"]), r
    assert r["wall_seconds"] > 0, r
# Each task fitted its own data: D0 near 30000 for a.h5, near 12000 for b.h5.
for name, d0 in [("a_default", 30000), ("a_q", 30000), ("b_file", 12000), ("b_start", 12000)]:
    assert abs(t[name]["parameters"]["D0"] / d0 - 1) < 0.1, (name, t[name]["parameters"])
assert t["a_q"]["q"] == 0.0054
m = t["missing_data"]
assert m["status"] == "failed" and m["exit_code"] == 2 and "nowhere.h5" in m["error"], m
b = t["bad_override"]
assert b["status"] == "failed" and b["exit_code"] == 2 and "max_iterationz" in b["error"], b
c = t["broken_config"]
assert c["status"] == "failed" and c["exit_code"] == 2 and "broken.yaml" in c["error"], c
assert c["ranks"] == 0
n = t["not_converged"]
assert n["status"] == "failed" and n["exit_code"] == 4 and "did not converge" in n["error"], n
assert n["convergence"] == "max_iter" and n["chi2"] > 0, n
ab = t["a_both"]
assert ab["cmc_max_rhat"] > 0 and abs(ab["parameters"]["cmc_D0"] / 30000 - 1) < 0.15, ab
assert s["counts"] == {"ok": 5, "failed": 4, "skipped": 0}, s["counts"]
assert s["exit_code"] == 3 and s["world_ranks"] == 2
assert s["group_classes"] == [{"group_size": 1, "groups": 2, "tasks": 8}], s["group_classes"]
# Both groups got work (dynamic assignment over 2 groups of 1 rank).
assert {t[n]["group"] for n in ["a_default", "b_file", "a_q", "b_start", "missing_data", "bad_override"]} == {0, 1}
PY
head -1 "$csv" | grep -q '^task,status,exit_code,method,ranks,group,wall_seconds,chi2' \
  || { echo "FAIL: csv header"; exit 1; }
[ "$(wc -l < "$csv")" -eq 10 ] || { echo "FAIL: csv rows"; exit 1; }
grep -q '^missing_data,failed,2,' "$csv" || { echo "FAIL: csv failed row"; exit 1; }
for t in a_default b_file a_q b_start a_both; do
  for f in nlsq/parameters.json nlsq/fitted_data.h5 run_report.yaml batch_task_done.json; do
    [ -s "$tmp/out/$t/$f" ] || { echo "FAIL: $t/$f missing"; exit 1; }
  done
done
for f in cmc/parameters.json cmc/fitted_data.h5; do
  [ -s "$tmp/out/a_both/$f" ] || { echo "FAIL: CMC output a_both/$f missing"; exit 1; }
done
[ -s "$tmp/out/not_converged/nlsq/parameters.json" ] || { echo "FAIL: outputs of a non-converged fit"; exit 1; }
for t in missing_data bad_override broken_config not_converged; do
  [ -e "$tmp/out/$t/batch_task_done.json" ] && { echo "FAIL: $t has a completion marker"; exit 1; }
done
grep -q 'broken_config FAILED' <<<"$out" || { echo "FAIL: failure not logged"; exit 1; }

# Rerun: finished tasks are skipped and their outputs untouched; the bad ones run again.
stamp_before=$(stat -c %Y.%s "$tmp"/out/{a_default,b_file,a_q,b_start}/nlsq/parameters.json | md5sum)
sleep 1
out=$("$mpiexec" -n 2 "$bindir/homodyne" --batch "$tmp/batch.yaml" 2>&1); code=$?
[ $code -eq 3 ] || { echo "FAIL: rerun exit code $code"; exit 1; }
[ "$(grep -c 'skipped: finished earlier' <<<"$out")" -eq 5 ] || { echo "FAIL: rerun did not skip 5: $out"; exit 1; }
grep -q 'task a_default started' <<<"$out" && { echo "FAIL: finished task ran again"; exit 1; }
stamp_after=$(stat -c %Y.%s "$tmp"/out/{a_default,b_file,a_q,b_start}/nlsq/parameters.json | md5sum)
[ "$stamp_before" = "$stamp_after" ] || { echo "FAIL: outputs of skipped tasks changed"; exit 1; }
/usr/bin/python3 - "$sum" <<'PY' || { echo "FAIL: rerun summary"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["counts"] == {"ok": 0, "failed": 4, "skipped": 5}, s["counts"]
t = {r["task"]: r for r in s["tasks"]}
assert t["a_default"]["status"] == "skipped" and t["a_default"]["chi2"] > 0
PY
# A changed task definition runs again.
sed -i 's/{name: a_q, q: 0.0054}/{name: a_q, q: 0.0054, overrides: {initial_parameters: {values: [25000, -0.5, 0]}}}/' "$tmp/batch.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/batch.yaml" 2>&1)
grep -q 'task a_q started' <<<"$out" || { echo "FAIL: a changed task was skipped"; exit 1; }

# Bad batch files: exit 2, the key named, nothing run.
printf 'tasks:\n  - {name: x, config: base.yaml, dataa_file: a.h5}\n' > "$tmp/bad_batch.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/bad_batch.yaml" 2>&1); code=$?
[ $code -eq 2 ] && grep -q 'tasks\[0\].dataa_file' <<<"$out" || { echo "FAIL: unknown key: $code $out"; exit 1; }
printf 'output_rot: x\ntasks: []\n' > "$tmp/bad_batch2.yaml"
out=$("$mpiexec" -n 1 "$bindir/homodyne" batch "$tmp/bad_batch2.yaml" 2>&1); code=$?
[ $code -eq 2 ] && grep -q 'output_rot' <<<"$out" || { echo "FAIL: unknown top key: $code $out"; exit 1; }
# A results folder under a file: exit 2 naming output_root before any task runs.
touch "$tmp/blocker"
printf 'output_root: blocker/out\ntasks:\n  - {name: x, config: base.yaml}\n' > "$tmp/bad_batch3.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/bad_batch3.yaml" 2>&1); code=$?
{ [ $code -eq 2 ] && grep -q 'bad_batch3.yaml: output_root: cannot create the results folder .*blocker/out' <<<"$out" \
  && ! grep -q 'task x' <<<"$out"; } || { echo "FAIL: output_root under a file: $code $out"; exit 1; }

# A failure on one rank inside a task is agreed within its group only: with two groups
# of one rank, the tasks of rank 1's group fail and rank 0's complete; with one group of
# two ranks, every task fails on both ranks together; nothing hangs.
printf 'output_root: inj\ndefaults: {config: base.yaml}\ntasks:\n  - {name: t1}\n  - {name: t2, data_file: b.h5}\n  - {name: t3}\n  - {name: t4, data_file: b.h5}\n' > "$tmp/inj.yaml"
out=$(HOMODYNE_FAIL_AT=batch_task@1 timeout 120 "$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/inj.yaml" --group-size 1 2>&1); code=$?
[ $code -eq 3 ] || { echo "FAIL: injected failure, groups of 1: exit $code"; echo "$out" | tail; exit 1; }
/usr/bin/python3 - "$tmp/inj/batch_summary.json" <<'PY' || { echo "FAIL: groups of 1 with a failing rank"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
for r in s["tasks"]:
    assert (r["status"] == "ok") == (r["group"] == 0), r
    if r["group"] == 1:
        assert "injected" in r["error"].lower() or "batch_task" in r["error"], r
assert s["counts"]["ok"] >= 1 and s["counts"]["failed"] >= 1, s["counts"]
PY
rm -rf "$tmp/inj"
out=$(HOMODYNE_FAIL_AT=batch_task@1 timeout 120 "$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/inj.yaml" --group-size 2 2>&1); code=$?
[ $code -eq 3 ] || { echo "FAIL: injected failure, one group of 2: exit $code"; echo "$out" | tail; exit 1; }
/usr/bin/python3 - "$tmp/inj/batch_summary.json" <<'PY' || { echo "FAIL: one group of 2 with a failing rank"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["group_classes"] == [{"group_size": 2, "groups": 1, "tasks": 4}], s
assert s["counts"] == {"ok": 0, "failed": 4, "skipped": 0}, s
assert all(r["ranks"] == 2 and "(rank 1)" in r["error"] for r in s["tasks"]), s["tasks"]
PY

# Group sizes per task: from the data size (a.h5 is larger than b.h5, and
# group_bytes_per_rank is b.h5's size, so a-tasks need 2 ranks, b-tasks 1) or the
# task's own group_size; the class of 2-rank tasks runs first.
bsize=$(stat -c %s "$tmp/b.h5"); asize=$(stat -c %s "$tmp/a.h5")
[ "$asize" -gt "$bsize" ] || { echo "FAIL: test assumption a.h5 > b.h5"; exit 1; }
printf 'output_root: sized\ngroup_bytes_per_rank: %s\ndefaults: {config: base.yaml}\ntasks:\n  - {name: a1}\n  - {name: b1, data_file: b.h5}\n  - {name: b2, data_file: b.h5}\n  - {name: b3, data_file: b.h5, group_size: 2}\n' "$bsize" > "$tmp/sized.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/sized.yaml" 2>&1); code=$?
[ $code -eq 0 ] || { echo "FAIL: sized batch exit $code"; echo "$out" | tail; exit 1; }
/usr/bin/python3 - "$tmp/sized/batch_summary.json" <<'PY' || { echo "FAIL: per-task group sizes"; exit 1; }
import json, sys
s = json.load(open(sys.argv[1]))
t = {r["task"]: r for r in s["tasks"]}
assert [t[n]["ranks"] for n in ["a1", "b1", "b2", "b3"]] == [2, 1, 1, 2], t
assert s["group_classes"] == [{"group_size": 2, "groups": 1, "tasks": 2},
                              {"group_size": 1, "groups": 2, "tasks": 2}], s["group_classes"]
# The same fit on 2 ranks and on 1 rank gives the same bits.
assert t["b3"]["parameters"] == t["b1"]["parameters"], (t["b1"], t["b3"])
PY
# --group-size forces one size for every task.
rm -rf "$tmp/sized"
"$mpiexec" -n 2 "$bindir/homodyne" batch "$tmp/sized.yaml" --group-size 1 > /dev/null 2>&1
/usr/bin/python3 -c "
import json, sys; s = json.load(open(sys.argv[1]))
assert all(r['ranks'] == 1 for r in s['tasks']) and len(s['group_classes']) == 1, s" \
  "$tmp/sized/batch_summary.json" || { echo "FAIL: --group-size 1"; exit 1; }

# One rank: one group does everything.
out=$("$mpiexec" -n 1 "$bindir/homodyne" batch "$tmp/batch.yaml" --output-dir "$tmp/one" 2>&1); code=$?
[ $code -eq 3 ] || { echo "FAIL: 1-rank exit $code"; exit 1; }
grep -q '"skipped": 5' "$tmp/one/batch_summary.json" || { echo "FAIL: 1-rank summary"; cat "$tmp/one/batch_summary.json"; exit 1; }
echo PASS
