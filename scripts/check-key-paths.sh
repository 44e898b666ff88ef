#!/usr/bin/env bash
# Key-path check (ctest key_path_check): no literal config key path ("optimization.nlsq.loss",
# "output.fitted_data", ...) in src/ or apps/ outside src/config. Code names keys through
# src/config/key_paths.h, so that a key is spelled in the key table and nowhere else. The
# top-level sections are read from the generated reference (docs/configuration.md), so a new
# section is covered without editing this script. File names ("parameters.json") are not keys.
# Lists the offending lines and exits 1 if any.
#   bash scripts/check-key-paths.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ref=docs/configuration.md
[ -s "$ref" ] || { echo "check-key-paths: $ref is missing" >&2; exit 2; }
mapfile -t sections < <(grep -o '^| `[a-z_]*\.' "$ref" | sed 's/^| `//; s/\.$//' | sort -u)
[ ${#sections[@]} -ge 5 ] || { echo "check-key-paths: no sections read from $ref" >&2; exit 2; }
alt=$(IFS='|'; echo "${sections[*]}")
ext='h5|hdf|hdf5|json|npz|npy|yaml|yml|txt|csv|log|png|pdf'
mapfile -t hits < <(grep -rnE "\"($alt)\.[a-z_]" src apps --exclude-dir=config |
  grep -vE "\"($alt)\.($ext)\"" || true)
# A line may hold a file name and a key path: keep it if a key path remains without the names.
bad=()
for h in "${hits[@]}"; do
  rest=$(sed -E "s/\"($alt)\.($ext)\"//g" <<<"$h")
  grep -qE "\"($alt)\.[a-z_]" <<<"$rest" && bad+=("$h")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-key-paths: ${#bad[@]} literal key path(s) outside src/config:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "name them through src/config/key_paths.h (config::keys)" >&2
  exit 1
fi
echo "check-key-paths: no literal key path outside src/config (${#sections[@]} sections)"
