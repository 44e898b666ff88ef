#!/usr/bin/python3
"""Writes malformed variants of a valid aps_old data file for tests/cli/test_bad_input.sh.

usage: make_bad_h5.py VALID.h5 OUTDIR
Each output file <case>.h5 differs from VALID.h5 in exactly one way (named by <case>).
"""
import shutil
import sys

import h5py
import numpy as np

valid, outdir = sys.argv[1], sys.argv[2]
MAPS = "/exchange/C2T_all"
FIRST = MAPS + "/c2_00001"


def variant(case, edit):
    path = f"{outdir}/{case}.h5"
    shutil.copyfile(valid, path)
    with h5py.File(path, "r+") as h:
        edit(h)


def replace(h, name, data, **kw):
    del h[name]
    h.create_dataset(name, data=data, **kw)


raw = open(valid, "rb").read()
open(f"{outdir}/truncated.h5", "wb").write(raw[: len(raw) // 3])
open(f"{outdir}/not_hdf5.h5", "wb").write(b"time,c2\n0,1.0\n1,0.9\n" * 20)

variant("missing_dataset", lambda h: h.__delitem__("/xpcs/dphilist"))
variant("wrong_rank", lambda h: replace(h, FIRST, np.ones((2, 30, 30))))
variant("non_square", lambda h: replace(h, FIRST, np.ones((30, 29))))
variant("string_dtype", lambda h: replace(h, FIRST, np.array([b"abc"] * 900).reshape(30, 30)))
variant("string_qlist", lambda h: replace(h, "/xpcs/dqlist", np.array([[b"0.0054", b"0.0054"]])))
variant("nan_matrix",
        lambda h: h[FIRST].__setitem__((slice(5, 6), slice(9, 10)), np.array([[np.nan]])))
variant("all_nan_matrix", lambda h: h[FIRST].__setitem__(Ellipsis, np.nan))
variant("inf_qlist", lambda h: replace(h, "/xpcs/dqlist", np.array([[0.0054, np.inf]])))
variant("mismatched_lists", lambda h: replace(h, "/xpcs/dphilist", np.array([[0.0, 90.0, 45.0]])))


def empty_group(h):
    for k in list(h[MAPS].keys()):
        del h[MAPS][k]
    replace(h, "/xpcs/dqlist", np.zeros((1, 0)))
    replace(h, "/xpcs/dphilist", np.zeros((1, 0)))


variant("empty_group", empty_group)


def huge(h):
    # A dataspace of 10^9 x 10^9 frames with no data written: a tiny file whose header
    # claims an absurd size; it must be rejected before anything is allocated.
    del h[FIRST]
    h.create_dataset(FIRST, shape=(10**9, 10**9), dtype="f8", chunks=(64, 64))


variant("absurd_size", huge)


def unwritten(h):
    # A matrix of a size the loader accepts (90000 frames) whose chunks were never written:
    # a 7 kB file that would otherwise be fitted as 4·10^9 zeros (18 GB, minutes per pass).
    del h[FIRST]
    h.create_dataset(FIRST, shape=(90000, 90000), dtype="f8", chunks=(1000, 1000))


variant("unwritten_matrix", unwritten)


def huge_list(h):
    replace(h, "/xpcs/dqlist", None, shape=(1, 10**10), dtype="f8", chunks=(1, 1024))


variant("absurd_list", huge_list)
