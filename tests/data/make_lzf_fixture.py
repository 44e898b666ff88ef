#!/usr/bin/python3
"""Writes tests/data/aps_u_lzf_small.h5: a small APS-U layout file compressed with h5py's LZF.

Layout (2 q x 3 phi, all 6 bins processed, 24 x 24 half matrices):
  /xpcs/qmap/dynamic_v_list_dim0   (2,)  [0.0054, 0.0080]
  /xpcs/qmap/dynamic_v_list_dim1   (3,)  [-30.0, 45.0, 200.0]
  /xpcs/twotime/processed_bins     (6,)  int64 [1..6]   (b-1 -> q=(b-1)//3, phi=(b-1)%3)
  /xpcs/twotime/correlation_map/c2_0000b  (24, 24) float64, compression='lzf'

Matrix of bin b (1-based), full symmetric value at (i, j):
  C_b(i, j) = 1 + 0.25*b + exp(-0.1*b*|i - j|) + 0.001*(i + j)
stored as the upper triangle including the diagonal (lower triangle 0).
/noise/incompressible holds 24*24 float64 from a fixed random byte stream (LZF cannot
shrink it, so h5py stores the chunk raw with the filter bit set in its filter mask) and
/noise/bytes_sum its byte-wise sum for the test.
Run with the Debian python3 (python3-h5py): /usr/bin/python3 tests/data/make_lzf_fixture.py
"""
import os
import sys

import h5py
import numpy as np

F = 24
Q = [0.0054, 0.0080]
PHI = [-30.0, 45.0, 200.0]


def full_matrix(b):
    i = np.arange(F, dtype=np.float64)[:, None]
    j = np.arange(F, dtype=np.float64)[None, :]
    return 1.0 + 0.25 * b + np.exp(-0.1 * b * np.abs(i - j)) + 0.001 * (i + j)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "aps_u_lzf_small.h5")
    with h5py.File(out, "w") as f:
        f.create_dataset("/xpcs/qmap/dynamic_v_list_dim0", data=np.array(Q))
        f.create_dataset("/xpcs/qmap/dynamic_v_list_dim1", data=np.array(PHI))
        bins = np.arange(1, len(Q) * len(PHI) + 1, dtype=np.int64)
        f.create_dataset("/xpcs/twotime/processed_bins", data=bins)
        grp = f.create_group("/xpcs/twotime/correlation_map")
        for b in bins:
            grp.create_dataset("c2_%05d" % b, data=np.triu(full_matrix(int(b))),
                               compression="lzf", chunks=(12, 12))
        raw = np.random.default_rng(20260101).bytes(F * F * 8)
        noise = np.frombuffer(raw, dtype=np.uint8).astype(np.float64)
        f.create_dataset("/noise/incompressible", data=np.frombuffer(raw, dtype="<f8").reshape(F, F),
                         compression="lzf", chunks=(F, F))
        f.create_dataset("/noise/bytes_sum", data=np.array([noise.sum()]))
        f.attrs["provenance"] = "homodyne-hpc tests/data/make_lzf_fixture.py (h5py %s)" % h5py.__version__


if __name__ == "__main__":
    main()
