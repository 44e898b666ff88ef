#!/usr/bin/env bash
# Style check (ctest format_check): every C++ file of the project is as clang-format
# (.clang-format, Google-based) writes it. Lists the offending files and exits 1 if any.
#   bash scripts/check-format.sh [clang-format binary]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fmt=${1:-clang-format}
"$fmt" --version > /dev/null || { echo "check-format: cannot run $fmt" >&2; exit 2; }
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else
  mapfile -t files < <(find apps bench include src tests -name '*.cpp' -o -name '*.h' | sort)
fi
# One clang-format process for all files; its diagnostics name each file that differs.
mapfile -t bad < <("$fmt" --dry-run "${files[@]}" 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: \(warning\|error\): code should be clang-formatted.*/\1/p' |
  sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: clang-format -i <file>" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clang-formatted"
