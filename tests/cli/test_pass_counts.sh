#!/usr/bin/env bash
# The run report's data passes by pipeline stage and kind (throughput.passes), 2 ranks: a
# laminar fit from the default start (local fit, phi0 check, report), streamed with
# checkpoints (their digest reads the data once more). The stages' passes add up to the
# total, their kinds to each stage's, their accepted steps to the total's; the stream's own
# count of whole reads equals the total, so a pass no stage counted fails the test; the
# closing log line gives the same total. In core (static), the same sums hold and no stream
# read is reported.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$tmp/lam.yaml" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: lam.h5
initial_parameters:
  values: null
optimization:
  streaming: {enable_checkpoints: true, checkpoint_frequency: 2, checkpoint_dir: $tmp/ck}
YAML
"$bindir/homodyne-synth" --config "$tmp/lam.yaml" -o "$tmp/lam.h5" --frames 60 --angles "10,55,100,145" \
  --param D0=2000 --param alpha=-0.5 --param gamma_dot_t0=0.004 --param phi0=3 --noise 0.001 -q \
  || fail "synth laminar"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/lam.yaml" --output-dir "$tmp/lp" --threads 1 \
      --strategy streaming --memory-limit 1M 2>&1) || fail "laminar streaming fit: $out"
line=$(grep 'NLSQ data passes: ' <<<"$out" | head -1) || fail "no closing passes line: $out"
echo "$line"

cat > "$tmp/sta.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: sta.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1000, 0.0, 0.0]
YAML
"$bindir/homodyne-synth" --config "$tmp/sta.yaml" -o "$tmp/sta.h5" --frames 80 --angles "0,60,120" \
  --param D0=3000 --param alpha=-0.6 --param D_offset=20 --noise 0.001 -q || fail "synth static"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/sta.yaml" --output-dir "$tmp/ic" --threads 1 -q \
  || fail "static in-core fit"

/usr/bin/python3 - "$tmp/lp/run_report.yaml" "$tmp/ic/run_report.yaml" "$line" <<'PY' || fail "pass counts"
import re, sys, yaml
kinds = ["chi2", "normal", "chi2_batch", "model", "fused", "data", "row_subset"]

def check(path, streamed, must_have):
    r = yaml.safe_load(open(path))
    p = r["throughput"]["passes"]
    stages = p["by_stage"]
    names = [s["stage"] for s in stages]
    assert len(set(names)) == len(names), f"{path}: a stage listed twice: {names}"
    for need in must_have:
        assert need in names, f"{path}: no stage {need}: {names}"
    for s in stages:
        for k in kinds + ["total", "accepted_steps", "per_accepted_step"]:
            assert k in s, f"{path}: stage {s['stage']} lacks {k}"
        assert sum(s[k] for k in kinds) == s["total"], f"{path}: kinds of {s}"
        if s["accepted_steps"] > 0:
            assert abs(s["per_accepted_step"] - s["total"] / s["accepted_steps"]) < 1e-9, s
        else:
            assert s["per_accepted_step"] is None, s
    assert sum(s["total"] for s in stages) == p["total"], f"{path}: stages do not add up: {p}"
    assert sum(s["accepted_steps"] for s in stages) == p["accepted_steps"], p
    for k in kinds:
        assert sum(s[k] for s in stages) == p["by_kind"][k], f"{path}: kind {k}: {p}"
    assert abs(p["per_accepted_step"] - p["total"] / p["accepted_steps"]) < 1e-9, p
    # The answer's own solve is one of the counted ones; every solve step is some stage's.
    assert p["accepted_steps"] >= r["throughput"]["iterations"] > 0, p
    # The problem's passes up to the answer are all in the ledger (the report adds its own).
    data_reads = p["by_kind"]["data"]
    assert p["total"] - data_reads >= r["throughput"]["data_passes"], p
    if streamed:
        assert p["stream_reads"] == p["total"] - p["by_kind"]["row_subset"], \
            f"{path}: the stream was read {p['stream_reads']} times, the stages count {p['total']}"
        # Every read of the stream is timed once, its reads inside it. The synthetic file
        # holds half matrices stored upper: the first pass reads both blocks and finds the
        # lower triangle zero, every later one its tiles' runs of the stored rows alone (at
        # most half the bytes: the blocks' rectangles hold more than the tiles).
        t = p["stream_timings"]
        assert t["passes"] == p["stream_reads"] == len(t["seconds"]) == len(t["read_seconds"]), t
        assert t["bytes"][0] >= 2 * t["bytes_per_pass"] > 0, t["bytes"]
        assert all(b == t["bytes_per_pass"] for b in t["bytes"][1:]), t["bytes"]
        assert all(0 <= rd <= s for rd, s in zip(t["read_seconds"], t["seconds"])), t
        # The file is read with pread: from the second pass on, each window was read ahead
        # while the one before it was worked on (the first pass finds the half matrices).
        assert len(t["windows"]) == len(t["read_ahead_windows"]) == t["passes"], t
        assert t["windows"][0] > 1 and t["read_ahead_windows"][0] == 0, t
        assert t["read_ahead_windows"][1:] == t["windows"][1:], t
    else:
        assert p["stream_reads"] is None and p["stream_timings"] is None, p
    return p

lam = check(sys.argv[1], True, ["initial_scaling", "local", "phi0", "noise_level", "report",
                                "checkpoint_digest"])
stage = {s["stage"]: s for s in lam["by_stage"]}
# The phi0 check's four restarts each solve; their steps and passes are the phi0 stage's.
assert stage["phi0"]["accepted_steps"] > 0 and stage["phi0"]["normal"] >= 4, stage["phi0"]
assert stage["local"]["accepted_steps"] > 0 and stage["local"]["normal"] > 0, stage["local"]
assert stage["initial_scaling"]["data"] > 0 and stage["initial_scaling"]["total"] == \
    stage["initial_scaling"]["data"], stage["initial_scaling"]
# Streamed, the report's plain chi2 (soft_l1, the default loss) and chi2 per angle: one read.
assert stage["report"]["fused"] == 1 and stage["report"]["model"] == 0, stage["report"]
m = re.search(r"NLSQ data passes: (\d+) for (\d+) accepted steps", sys.argv[3])
assert m and int(m.group(1)) == lam["total"] and int(m.group(2)) == lam["accepted_steps"], \
    (sys.argv[3], lam["total"], lam["accepted_steps"])
check(sys.argv[2], False, ["initial_scaling", "local", "noise_level", "report"])
print("pass counts ok:", lam["total"], "passes,", lam["accepted_steps"], "accepted steps")
PY
echo "PASS"
