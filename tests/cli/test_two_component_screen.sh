#!/usr/bin/env bash
# The start screen of two-component fits from the template's start (docs/global.md): tb049 of
# the broad recovery study (bench/recovery/two_component_study.py --draws broad; a rising
# sample fraction, 4 angles with close pairs near 0 and 90 degrees, 125 frames). Without the
# screen every path from the transport scan's shared rate and from the registry's start
# crawled to max_iter or stalled, and the answer was `stalled` at 1.6x the truth start's chi2
# (exit 4). From the screen's point (a pair of decay rates, a sample fraction and a velocity
# fringe screened together, then short fits) the fit converges at the truth start's chi2, exit
# 0, and the other paths do not run. The screen is on by default; its chi2 grid sees every 7th
# row of each angle's triangle (125 frames / 16 rows), the same rows on any number of ranks, so
# the answer at 2 ranks has the bits of the answer at 1.
set -uo pipefail
bindir=$1; mpiexec=$2
label="start screen"
truth="[889.3663792957777, -0.43466951483377525, 12.954138492611962, 2684.837187659498, 0.11447875366263782, 31.03516783610404, 746.9187591968879, 0.19876178361856978, -2.9629157694823736, 0.2973451498533318, 0.08402742117623628, 0.0, 0.04055209528821692, 0.14565831159984377]"
frames=125 angles="8.8,14.4,98.4,101.4" contrast=0.17140975994923469 offset=0.9887741278001272
noise=0.0007597827304178852 seed=907060011
source "$(dirname "$0")/two_component_screen_case.bash"
grep -Eq "start screen: (chi2|objective \([a-z_0-9]+\)) of [0-9]* \(D0_ref, D0_sample, v0, v_beta\) points on every 7th row" \
  <<<"$actions" || fail "the screen's grid is not on every 7th row: $actions"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/template.yaml" -o "$tmp/template2" > "$tmp/template2.log" 2>&1
rc2=$?
read -r chi_2 st_2 _ < <(result "$tmp/template2")
echo "2 ranks: $chi_2 ($st_2, exit $rc2)"
[ "$rc2" -eq 0 ] && [ "$chi_2" = "$chi_m" ] || fail "2 ranks gave $chi_2 ($st_2, exit $rc2), 1 rank $chi_m"
echo PASS
