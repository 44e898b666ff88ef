#!/usr/bin/env bash
# A failure injected on rank 1 only ends both ranks promptly, with the message printed
# once and the documented exit code (1, internal error); bad command-line input exits 2.
set -uo pipefail
bindir=$1; mpiexec=$2
start=$(date +%s)
out=$(HOMODYNE_FAIL_AT=startup@1 timeout 30 "$mpiexec" -n 2 --oversubscribe \
        "$bindir/homodyne" --version 2>&1)
code=$?
elapsed=$(( $(date +%s) - start ))
echo "$out"
[ $code -ne 124 ] || { echo "FAIL: job hung (killed by timeout)"; exit 1; }
[ $code -eq 1 ] || { echo "FAIL: exit code $code, expected 1"; exit 1; }
[ "$elapsed" -le 10 ] || { echo "FAIL: took ${elapsed}s (> 10 s)"; exit 1; }
n=$(grep -c "injected failure at stage 'startup'" <<<"$out" || true)
[ "$n" -eq 1 ] || { echo "FAIL: message printed $n times, expected once"; exit 1; }
grep -q "(rank 1)" <<<"$out" || { echo "FAIL: failing rank not named"; exit 1; }
grep -q "^homodyne-hpc " <<<"$out" && { echo "FAIL: ran past the failure"; exit 1; }

out=$(timeout 30 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --no-such-flag 2>&1)
code=$?
echo "$out"
[ $code -eq 2 ] || { echo "FAIL: unknown flag gave exit code $code, expected 2"; exit 1; }
n=$(grep -c "no-such-flag" <<<"$out" || true)
[ "$n" -eq 1 ] || { echo "FAIL: parse error printed $n times"; exit 1; }
echo "PASS"
