"""The exact passes over lexicographically sorted, duplicate-free rows (lower is better in every column).

In that order row j dominates row i exactly when j comes before i and is no worse in columns 1..M-1, so
each pass only looks back: a running minimum (2 objectives), a staircase (3), blocks (4 or more).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

from backend.pareto.definitions import BoolArray, FloatArray

# Points per block in the 4+ objective pass; the comparison matrix against the frontier is capped at about
# _BLOCK_CELLS booleans so that a long frontier does not blow the cache.
_MAX_BLOCK = 1024
_MIN_BLOCK = 64
_BLOCK_CELLS = 1 << 18


def sweep_2d(unique: FloatArray) -> BoolArray:
    """Two objectives: a row is kept when every earlier row is worse in column 1. O(N)."""
    y = unique[:, 1]
    best_before = np.minimum.accumulate(y)
    keep = np.ones(len(y), dtype=bool)
    keep[1:] = best_before[:-1] > y[1:]
    return keep


def staircase_3d(unique: FloatArray) -> BoolArray:
    """Three objectives (Kung et al.): sweep in order, keeping the 2D frontier of columns (1, 2) so far.

    The staircase holds y ascending and z descending; a row is dominated when the staircase point with the
    largest y <= its y has z <= its z. Bisection per row; the list updates are memmoves.
    """
    keep = np.zeros(len(unique), dtype=bool)
    ys: list[float] = []
    neg_zs: list[float] = []  # -z, ascending, so that bisect works on it
    for i, (y, z) in enumerate(zip(unique[:, 1].tolist(), unique[:, 2].tolist(), strict=True)):
        p = bisect_right(ys, y)
        if p and -neg_zs[p - 1] <= z:
            continue
        keep[i] = True
        # Drop the staircase points this row dominates in (y, z): y >= its y and z >= its z.
        q = bisect_left(ys, y, hi=p)
        end = bisect_right(neg_zs, -z, lo=q)
        ys[q:end] = [y]
        neg_zs[q:end] = [-z]
    return keep


def blockwise(unique: FloatArray) -> BoolArray:
    """Four or more objectives: blocks of rows, each compared at once with the frontier so far and itself."""
    keep = np.zeros(len(unique), dtype=bool)
    rest = [np.ascontiguousarray(unique[:, c]) for c in range(1, unique.shape[1])]
    front = [np.empty(0) for _ in rest]  # the frontier found so far, per column
    start = 0
    while start < len(unique):
        block = max(_MIN_BLOCK, min(_MAX_BLOCK, _BLOCK_CELLS // max(len(front[0]), 1)))
        stop = min(start + block, len(unique))
        blk = [c[start:stop] for c in rest]
        idx = np.arange(stop - start)
        if len(front[0]):
            hit = front[0][:, None] <= blk[0][None, :]
            for fc, bc in zip(front[1:], blk[1:], strict=True):
                hit &= fc[:, None] <= bc[None, :]
            idx = np.flatnonzero(~hit.any(axis=0))
        if len(idx) > 1:
            # Within the block only an earlier row can dominate a later one: hit[j, i] needs j < i.
            hit = np.tri(len(idx), k=-1, dtype=bool).T
            for bc in blk:
                sub = bc[idx]
                hit &= sub[:, None] <= sub[None, :]
            idx = idx[~hit.any(axis=0)]
        keep[start + idx] = True
        front = [np.concatenate([fc, bc[idx]]) for fc, bc in zip(front, blk, strict=True)]
        start = stop
    return keep
