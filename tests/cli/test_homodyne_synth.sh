#!/usr/bin/env bash
# homodyne-synth writes loadable files in both layouts, stores the truth, refuses to
# overwrite, and rejects bad options with exit code 2 naming the option.
set -uo pipefail
bindir=$1; mpiexec=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cfg=$root/examples/homodyne_laminar_flow_config.yaml
"$bindir/homodyne-synth" --config "$cfg" -o "$tmp/a.h5" --frames 40 --angles "0,90" \
  --param D0=2500 --param gamma_dot_0=0.01 --contrast 0.2 --noise 0.001 --seed 5 \
  || { echo "FAIL: synth aps_old"; exit 1; }
"$bindir/homodyne-synth" --config "$cfg" -o "$tmp/b.h5" --format aps_u --lzf --frames 40 -q \
  || { echo "FAIL: synth aps_u lzf"; exit 1; }
h5dump -A -g /homodyne_synth "$tmp/a.h5" | grep -A4 'ATTRIBUTE "gamma_dot_t0"' | grep -q '0.01' \
  || { echo "FAIL: alias --param gamma_dot_0 not stored as gamma_dot_t0"; exit 1; }
h5dump -p -H "$tmp/b.h5" 2>/dev/null | grep -q 'FILTER_ID 32000' \
  || { echo "FAIL: aps_u matrix not LZF-compressed"; exit 1; }
out=$("$bindir/homodyne-synth" --config "$cfg" -o "$tmp/a.h5" 2>&1); code=$?
[ $code -eq 2 ] && grep -q -- "--force" <<<"$out" || { echo "FAIL: overwrite: $code $out"; exit 1; }
out=$("$bindir/homodyne-synth" --config "$cfg" -o "$tmp/c.h5" --angles "0,x" 2>&1); code=$?
[ $code -eq 2 ] && grep -q -- "--angles" <<<"$out" || { echo "FAIL: bad angles: $code $out"; exit 1; }
out=$("$bindir/homodyne-synth" --config "$tmp/missing.yaml" -o "$tmp/c.h5" 2>&1); code=$?
[ $code -eq 2 ] && grep -q "missing.yaml" <<<"$out" || { echo "FAIL: missing config: $code $out"; exit 1; }
[ ! -e "$tmp/c.h5" ] || { echo "FAIL: output written after an error"; exit 1; }
echo PASS
