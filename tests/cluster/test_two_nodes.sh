#!/usr/bin/env bash
# jobscripts/nlsq_multi_node.sbatch submitted unchanged to two emulated nodes, 2 tasks per
# node (4 ranks; Open MPI talks TCP between the nodes): run_report.yaml names both nodes,
# every rank is pinned (--cpu-bind=cores) to cores of its own allocation with the ranks of
# one node on disjoint cores, and the answer is bit for bit that of a plain 2-rank run on
# one host.
source "$(dirname "$0")/lib.sh"
make_data
plain_run 2 "$work/plain"

job=$(CONFIG=$work/cfg.yaml OUTPUT_DIR=$work/slurm submit_wait 150 \
  --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 --time=5 "$jobscripts/nlsq_multi_node.sbatch")
code=$?
[ $code -eq 0 ] || { show_job_output; fail "sbatch --wait exit $code (job ${job:-?})"; }
"$py" - "$work/slurm/run_report.yaml" <<'PY' || { show_job_output; fail "run report"; }
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
m = r["machine"]
assert r["status"]["exit_code"] == 0, r["status"]
assert m["ranks"] == 4, m
assert sorted(m["hostnames"]) == ["n1", "n2"], f"hostnames {m['hostnames']}: not the two nodes"
assert m["pinned"] is True, m
def cpus(s):
    out = set()
    for part in str(s).split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
by_host = {}
for p in m["placement"]:
    cs, pus = cpus(p["cpuset"]), cpus(p["pus"])
    assert len(cs) == 1, f"rank {p['rank']}: cpuset {p['cpuset']} is not one core (--cpu-bind=cores, 1 cpu per task)"
    assert pus <= cs, f"rank {p['rank']}: threads on PUs {p['pus']} outside its cpuset {p['cpuset']}"
    by_host.setdefault(p["host"], []).append(cs)
for host, sets in by_host.items():
    assert len(sets) == 2, f"{host}: {len(sets)} ranks (expected 2 per node)"
    assert not (sets[0] & sets[1]), f"{host}: two ranks share a core {sets}"
print("placement:", "; ".join(f"rank {p['rank']} @ {p['host']} core {p['cpuset']}" for p in m["placement"]))
PY
same_answer "$work/plain" "$work/slurm" || fail "the two-node answer differs from the one-host run"
echo "PASS: job $job"
