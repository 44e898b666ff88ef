#!/usr/bin/env bash
# The start screen's sloped sample fractions and its short fits per fraction (docs/global.md):
# tb040 of the broad recovery study (bench/recovery/two_component_study.py --draws broad; the
# sample fraction rises from 0.29 to 0.85 over the window, the two populations' mean rates
# are within 30 % of each other, 5 angles, 151 frames). With constant fractions alone the
# screen's lowest pairs were all in a wrong basin; the fit ended `converged` with the MISFIT
# verdict at 119x the truth start's chi2 (exit 5). With a rising and a falling fraction on the
# grid, and a short fit from the lowest point of each fraction while none is acceptable, the
# template start converges at the truth start's chi2, exit 0, through the screen's answer.
# The same template at 2 ranks with checkpoints written every 2 iterations gives the same bits.
set -uo pipefail
bindir=$1; mpiexec=$2
label="start screen, sloped fractions"
truth="[2395.884912252697, 0.26862176004164784, 12.402617804235614, 8509.972178446727, -0.3723331329971381, 114.95033216545686, 772.2395173819232, 0.24159131701228267, 2.5541197202493438, 0.28432151930725, 0.07252520804237741, 0.0, 0.008863764959578148, -2.5958509038152053]"
frames=151 angles="8.5,12.3,96.8,99.7,140.7" contrast=0.1830630174279489 offset=0.9879326121041694
noise=0.0005358703453987488 seed=115583509
source "$(dirname "$0")/two_component_screen_case.bash"
grep -q "points on every 9th row at 5 sample fractions" <<<"$actions" ||
  fail "the screen's grid is not on every 9th row at 5 sample fractions: $actions"
cp "$tmp/template.yaml" "$tmp/template_ckpt.yaml"
cat >> "$tmp/template_ckpt.yaml" <<YAML
optimization:
  streaming:
    enable_checkpoints: true
    checkpoint_dir: $tmp/ckpt
    checkpoint_frequency: 2
YAML
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/template_ckpt.yaml" -o "$tmp/template2" \
  > "$tmp/template2.log" 2>&1
rc2=$?
read -r chi_2 st_2 _ < <(result "$tmp/template2")
echo "2 ranks, checkpoints on: $chi_2 ($st_2, exit $rc2)"
[ -n "$(ls -A "$tmp/ckpt" 2>/dev/null)" ] || fail "no checkpoint was written at 2 ranks"
[ "$rc2" -eq 0 ] && [ "$chi_2" = "$chi_m" ] ||
  fail "2 ranks with checkpoints gave $chi_2 ($st_2, exit $rc2), 1 rank without $chi_m"
echo PASS
