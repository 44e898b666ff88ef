#!/usr/bin/env bash
# Puts the key table of docs/migrating.md in place from the key table itself
# (`homodyne-config --migration-keys`), between its BEGIN/END markers, so that the page
# cannot drift from the reader. Run after a change of src/config/key_table_*.cpp or
# src/config/earlier_keys.cpp; a unit test (ConfigKeyTable.MigratingDocMatchesTheTable)
# fails while the page is stale.
#   usage: scripts/update-migrating-keys.sh [BUILD_DIR]   (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
doc=$src/docs/migrating.md
begin='<!-- BEGIN generated: homodyne-config --migration-keys -->'
end='<!-- END generated: homodyne-config --migration-keys -->'
grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" || { echo "$doc: markers missing" >&2; exit 2; }
table=$(mktemp); trap 'rm -f "$table" "$table.new"' EXIT
"$build/apps/homodyne-config" --migration-keys > "$table"
awk -v b="$begin" -v e="$end" -v t="$table" '
  $0 == b { print; while ((getline line < t) > 0) print line; skip = 1; next }
  $0 == e { skip = 0 }
  !skip { print }' "$doc" > "$table.new"
mv "$table.new" "$doc"
echo "updated $doc"
