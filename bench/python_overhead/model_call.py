"""The Python side of the call-overhead benchmark (run.sh): homodyne_hpc.model_c2 on the
grid of model_call.cpp, the median time of one call over ROUNDS rounds of CALLS calls.
    python3 model_call.py [ROUNDS (21)] [CALLS (2000)] [N_FRAMES (32)]"""
import sys
import time

import numpy as np

import homodyne_hpc as hh

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
n_frames = int(sys.argv[3]) if len(sys.argv) > 3 else 32
physical = np.array([2.0e4, -0.4, 10.0])
phi = np.array([10.0])
contrast, offset = np.array([0.3]), np.array([1.0])
sink = 0.0
per_call = []
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(calls):
        sink += hh.model_c2("static", physical, phi, q=0.0054, dt=0.1, n_frames=n_frames,
                            contrast=contrast, offset=offset)[0, 0, 1]
    per_call.append((time.perf_counter() - start) / calls * 1e6)
print("python_us_per_call %.3f (checksum %.6g)" % (sorted(per_call)[rounds // 2], sink))
