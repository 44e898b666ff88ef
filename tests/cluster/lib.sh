# Sourced by the cluster tests (tests/cluster/test_*.sh): arguments <bindir> <mpiexec>
# <cluster.sh>. The cluster itself is started and stopped by the cluster_start/cluster_stop
# fixtures (scripts/cluster.sh, its directory in HOMODYNE_CLUSTER_DIR). Every job script is
# submitted unchanged from jobscripts/; only the allocation is sized for this machine on
# sbatch's command line (which overrides the script's #SBATCH lines).
set -uo pipefail
bindir=$1; mpiexec=$2; cluster=$3
jobscripts=$(cd "$(dirname "$cluster")/../jobscripts" && pwd)
name=$(basename "$0" .sh)
py=/usr/bin/python3
fail() {
  echo "FAIL: $*"
  exit 1
}

# No namespaces here (not root, no CAP_NET_ADMIN, Slurm not installed): skipped, exit 77.
"$cluster" check || exit 77
eval "$("$cluster" env)"
"$cluster" status > /dev/null 2>&1 || fail "the cluster is not running (did cluster_start fail? scripts/cluster.sh start)"

# The shared filesystem of the nodes is the build tree: the work directory is there.
work=$(dirname "$SLURM_CONF")/work/$name
rm -rf "$work"
mkdir -p "$work"
# Whatever happens, no job of this test outlives it; the work directory is kept only when
# the test failed (the job output files say why).
cleanup() {
  local code=$?
  timeout 10 scancel --user="$(id -un)" > /dev/null 2>&1
  if [ $code -eq 0 ] && [ -z "${HOMODYNE_CLUSTER_KEEP:-}" ]; then rm -rf "$work"; else echo "job files kept in $work"; fi
}
trap cleanup EXIT
export HOMODYNE=$bindir/homodyne

# Synthetic static data (3 angles, 30 frames) and its config in $work (a fit of ~1 s).
make_data() { # make_data [extra yaml lines for the config]
  cat > "$work/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $work
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
${1:-}
YAML
  "$bindir/homodyne-synth" --config "$work/cfg.yaml" -o "$work/data.h5" --frames 30 \
    --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || fail "synth"
}

# The plain run on this host, without Slurm: mpiexec -n <ranks> homodyne [args...].
plain_run() { # plain_run <ranks> <outdir> [args...]
  local n=$1 out=$2
  shift 2
  timeout 120 "$mpiexec" -n "$n" "$bindir/homodyne" --config "$work/cfg.yaml" --output-dir "$out" \
    "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "plain mpiexec run ($out)"; }
}

# sbatch --wait, bounded; prints the job id. On a timeout the job is cancelled (trap).
submit_wait() { # submit_wait <seconds> <sbatch args...>
  local t=$1
  shift
  timeout "$t" sbatch --parsable --wait --chdir="$work" "$@"
}

# Two results directories hold the same NLSQ answer, bit for bit: parameters.json equal
# in every value but its timestamp (floats compared exactly).
same_answer() { # same_answer <dir a> <dir b>
  "$py" - "$1/nlsq/parameters.json" "$2/nlsq/parameters.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("timestamp", None)
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print(f"  {k}: {a.get(k)!r} != {b.get(k)!r}")
    sys.exit(f"FAIL: {sys.argv[1]} and {sys.argv[2]} differ")
print(f"bitwise equal: chi2 {a['chi_squared']!r}, " +
      ", ".join(f"{k} {v['value']!r}" for k, v in sorted(a["parameters"].items())))
PY
}

# The chain job submitted in the background: waits until it is in the queue and both of its
# ranks hold at HOMODYNE_PAUSE_AT's point; sets job and out (its output file).
wait_chain_paused() { # wait_chain_paused <pause message, e.g. "paused at nlsq_iter 1">
  job=""
  for _ in $(seq 150); do
    job=$(timeout 5 squeue -h -o %i -n homodyne-nlsq-chain 2> /dev/null | head -1)
    [ -n "$job" ] && break
    sleep 0.2
  done
  [ -n "$job" ] || fail "the chain job never appeared in squeue"
  out=$work/homodyne-nlsq-chain-$job.out
  for _ in $(seq 600); do
    local n
    n=$(cat "$out" 2> /dev/null | grep -c "$1")
    [ "${n:-0}" -ge 2 ] && return 0
    sleep 0.1
  done
  show_job_output
  fail "the ranks of job $job never reported '$1' (two ranks)"
}

# A resumed chain's run_report.yaml: exit 0, --resume on its command line, run on exactly
# the given hosts.
expect_resumed_report() { # expect_resumed_report <results dir> <host>...
  local dir=$1
  shift
  "$py" - "$dir/run_report.yaml" "$@" <<'PY' || { show_job_output; fail "run report"; }
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
assert r["status"]["exit_code"] == 0, r["status"]
assert "--resume" in r["homodyne_hpc"]["command_line"], r["homodyne_hpc"]["command_line"]
assert sorted(r["machine"]["hostnames"]) == sorted(sys.argv[2:]), r["machine"]["hostnames"]
PY
}

# The job's output file(s), for a failure message.
show_job_output() { tail -n 40 "$work"/*.out 2> /dev/null; }
