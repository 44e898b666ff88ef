#!/usr/bin/env bash
# Call overhead of the Python module: one 1,024-point model evaluation from Python
# (homodyne_hpc.model_c2, numpy in and out) against the same call of the C++ API, each the
# median over 21 rounds of 2,000 calls, on an otherwise idle machine. The goal (issue 42):
# Python within 1.2x of C++.   bash bench/python_overhead/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cpp=$("$build/python/bench_python_model_call" | awk '{print $2}')
py=$(PYTHONPATH="$build/python" /usr/bin/python3 "$(dirname "$0")/model_call.py" | awk '{print $2}')
echo "C++    ${cpp} us per call"
echo "Python ${py} us per call"
echo "ratio  $(echo "scale=3; $py / $cpp" | bc)"
