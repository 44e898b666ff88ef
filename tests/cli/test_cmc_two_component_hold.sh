#!/usr/bin/env bash
# Two-component CMC with a constant sample fraction (truth f1 = 0; docs/cmc.md, "Held
# parameters"): the fraction f0·exp(f1·(t − f2)) + f3 is then seen only as f0 + f3 and f2 not
# at all, so `--method both` holds f2 (f0·exp(−f1·f2) is one parameter) and f0 (the NLSQ
# answer's JᵀJ has a zero eigenvalue along f0 − f3), says so in the log and in the CMC
# results (warnings), and the chains no longer sit in the sample fraction's funnel
# (depth-cap share at most 20 % per shard and 10 % on average; sampled blind, 50 % on shard 0;
# with the holds but the mode search's σ from the data's spread, 15 % on shard 1). What is
# left is the populations' own curved ridges, whose share moves with the data's noise draw
# and with the last bits of the NLSQ start: with the holds, seeds 11–14 of this set gave
# 0–19 % per shard and 1–14 % on average (2026-12-02, two builds whose NLSQ answers differ
# in the last bits); an earlier bound of 10 % and 5 % held for seed 11 alone.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
write_cfg() {  # write_cfg <file> <values>
  cat > "$1" <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: het.h5
initial_parameters:
  parameter_names: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]
  values: $2
parameter_space:
  bounds:
    - {name: v_beta, min: -1.0, max: 2.0}
YAML
}
write_cfg "$tmp/truth.yaml" "[3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.0, 0.0, 0.05, 2.0]"
write_cfg "$tmp/fit.yaml" "[3300, 0.27, 18, 18000, -0.33, 55, 320, 0.55, 2.2, 0.33, 0.0, 0.0, 0.055, 1.5]"
"$bindir/homodyne-synth" --config "$tmp/truth.yaml" -o "$tmp/het.h5" --frames 40 \
  --angles "0,60,120" --noise 0.002 --seed 11 -q || fail "synth"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/fit.yaml" -o "$tmp/out" --method both \
  --n-chains 2 --n-warmup 150 --n-samples 150 --cmc-num-shards 2 > "$tmp/log" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 4 ] || { cat "$tmp/log"; fail "run exited $rc"; }
grep "CMC: f[0-3] held" "$tmp/log"
grep -q "CMC: f2 held at its start" "$tmp/log" || { cat "$tmp/log"; fail "no f2 hold announced"; }
grep -q "CMC: f0 held at its start" "$tmp/log" || { cat "$tmp/log"; fail "no f0 hold announced"; }
"$py" - "$tmp/out/cmc" <<'PY' || fail "CMC results"
import json, sys
d = sys.argv[1]
diag = json.load(open(d + "/diagnostics.json"))
warnings = diag["cmc_specific"]["warnings"]
for name in ("f0", "f2"):
    assert any(w.startswith(f"CMC: {name} held at its start") for w in warnings), warnings
shards = json.load(open(d + "/shard_diagnostics.json"))
share = [s["treedepth_saturation_rate"] for s in shards]
for s in shards:
    print("shard", s["shard"], "depth-cap share", s["treedepth_saturation_rate"],
          "min ESS", round(s["min_ess"], 1), "step", round(s["step_size_mean"], 4))
# No wall within the map's reach: every shard keeps its Laplace map, also where the check
# finds it off in scale (shard 1, unwhitened, hit the cap on 77 % of its draws).
for s in shards:
    print("shard", s["shard"], s["coordinates"], "-", s["coordinates_reason"][:90])
assert all(s["coordinates"] == "whitened" for s in shards), [s["coordinates"] for s in shards]
# Sampled blind, shard 0 hit the cap on 50 % of its draws (step size 0.006); with the holds
# 2 % and 15 % (steps 0.09, 0.05) while the mode search started σ from the data's spread
# and stopped short of the mode; with σ from its conditional maximum 0 % and 2.3 % (steps
# 0.086 and 0.075), and 6 % and 5.7 % (steps 0.044, 0.038) after the robust loss's long
# series moved the NLSQ start's last bits (the held f0 and f2 the same to 6 digits).
assert len(share) == 2 and max(share) <= 0.20 and sum(share) / len(share) <= 0.10, share
# The held parameters are not among the sampled ones; f1 and f3 still are.
names = json.load(open(d + "/parameters.json"))["parameters"]
print({k: v for k, v in names.items() if k in ("f0", "f1", "f2", "f3")})
PY
echo "PASS"
