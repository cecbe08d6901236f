"""Compiled loops (numba, the ``fast`` extra) for two linker steps: the shared terms of each pair
(``evidence._shared``, a merge of two sorted posting lists) and each row's best lexical candidates
(``evidence._votes`` then ``evidence._best``, a dense accumulator with a small heap). They give the
numpy steps' results bit for bit (the same sums in the same order, the same ties); without numba, or
with ``KB_KERNELS=numpy``, the numpy steps run. :func:`warm` compiles them (or reads numba's cache),
once a process: a big connect (``pipeline.KERNELS_FROM``) does it before it forks its workers.

>>> import numpy as np
>>> indptr, indices = np.array([0, 2, 4]), np.array([1, 3, 1, 2], np.int32)
>>> w = np.array([0.0, 0.5, 0.25, 0.125])
>>> flags = np.zeros(4, bool)
>>> out = shared_sums(indptr, indices, w, flags, flags, np.array([0]), np.array([1])) if warm() else None
>>> out is None or [x.tolist() for x in out] == [[0.5], [1.0], [0.0]]
True
"""

from __future__ import annotations

import os
import warnings

import numpy as np

__all__ = ["available", "ready", "warm", "shared_sums", "joined_parts", "visibility", "best_votes"]


def _fixed(a, dtype=None) -> np.ndarray:
    """``a`` read-only and contiguous: numba compiles once per array type."""
    out = np.ascontiguousarray(a, dtype=dtype).view()
    out.flags.writeable = False
    return out


try:  # the ``fast`` extra
    import numba
except Exception:  # noqa: BLE001 - not installed, or not importable here (a numpy it does not know): the numpy steps
    numba = None


def _jit(**options):
    """numba's ``njit`` with a disk cache (without numba: the plain function, never called)."""
    if numba is None:
        return lambda fn: fn

    def compiled(fn):
        try:
            return numba.njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:  # no cache location writable: compiled anew in each process instead
            return numba.njit(nogil=True, **options)(fn)

    return compiled


@_jit()
def _shared(indptr, indices, w, hub, strong_base, ms, cs):
    p = len(ms)
    shared_w, shared_n, strong_n = np.zeros(p), np.zeros(p), np.zeros(p)
    for i in range(p):
        a, a_end = indptr[ms[i]], indptr[ms[i] + 1]
        b, b_end = indptr[cs[i]], indptr[cs[i] + 1]
        n = 0
        total = 0.0
        strong = 0.0
        while a < a_end and b < b_end:
            ta, tb = indices[a], indices[b]
            if ta < tb:
                a += 1
            elif tb < ta:
                b += 1
            else:
                weight = w[ta]
                n += 1
                total += weight
                if not hub[ta]:
                    strong += np.float64(strong_base[a]) + np.float64(strong_base[b])
                a += 1
                b += 1
        shared_w[i] = total
        shared_n[i] = n
        strong_n[i] = strong
    return shared_w, shared_n, strong_n

@_jit(inline="always")
def _worse(v1, rank1, v2, rank2):
    # whether a candidate ranks below another: a lower vote, or the same vote and older
    return v1 < v2 or (v1 == v2 and rank1 < rank2)

@_jit(inline="always")
def _sift_down(hv, hrank, hc, size, at):
    # the heap's entry at ``at`` moved down below the worse of its children while they are worse
    while True:
        low = at
        left, right = 2 * at + 1, 2 * at + 2
        if left < size and _worse(hv[left], hrank[left], hv[low], hrank[low]):
            low = left
        if right < size and _worse(hv[right], hrank[right], hv[low], hrank[low]):
            low = right
        if low == at:
            return
        hv[at], hv[low] = hv[low], hv[at]
        hrank[at], hrank[low] = hrank[low], hrank[at]
        hc[at], hc[low] = hc[low], hc[at]
        at = low

@_jit()
def _best(q_indptr, q_terms, q_weights, parts_indptr, parts_indices, parts_data, part_starts, cut, rows, row_rank, seen,
          n, k):
    n_rows = len(q_indptr) - 1
    sums = np.zeros(n)
    touched = np.empty(n, np.int64)
    out_r = np.empty(n_rows * k, np.int64)
    out_c = np.empty(n_rows * k, np.int64)
    out_pos = np.empty(n_rows * k, np.int64)
    # the k best so far (a higher vote, then the newer entry) as a heap whose top is the worst kept
    hv = np.empty(max(k, 1))
    hrank = np.empty(max(k, 1), np.int64)
    hc = np.empty(max(k, 1), np.int64)
    written = 0
    for r in range(n_rows):
        count = 0
        for part in range(len(part_starts) - 1):  # an entry's postings are in one part: its votes sum there
            base = part_starts[part]
            for j in range(q_indptr[r], q_indptr[r + 1]):
                t = q_terms[j]
                weight = q_weights[j]
                for x in range(parts_indptr[base + t], parts_indptr[base + t + 1]):
                    c = parts_indices[x]
                    if c >= cut:  # a term's entries run in order: none of the rows sees these
                        break
                    add = weight * parts_data[x]
                    if add > 0.0:  # none is negative (checked): a sum is 0 until its entry's first vote
                        if sums[c] == 0.0:
                            touched[count] = c
                            count += 1
                        sums[c] += add
        m, own = rows[r], row_rank[r]
        size = 0
        # newest first as they came (a term's entries run oldest first): of equal votes the first
        # kept wins, and the rest leave the heap alone
        for j in range(count - 1, -1, -1):
            c = touched[j]
            value = sums[c]
            sums[c] = 0.0
            if seen[c, 0] >= own or c == m:  # not visible from this row
                continue
            cr = seen[c, 1]
            if size < k:
                at = size
                size += 1
                while at > 0:
                    up = (at - 1) // 2
                    if not _worse(value, cr, hv[up], hrank[up]):
                        break
                    hv[at], hrank[at], hc[at] = hv[up], hrank[up], hc[up]
                    at = up
                hv[at], hrank[at], hc[at] = value, cr, c
            elif _worse(hv[0], hrank[0], value, cr):
                hv[0], hrank[0], hc[0] = value, cr, c
                _sift_down(hv, hrank, hc, size, 0)
        kept = size
        for pos in range(kept - 1, -1, -1):  # the worst first: placed from the back
            out_r[written + pos] = r
            out_c[written + pos] = hc[0]
            out_pos[written + pos] = pos
            size -= 1
            hv[0], hrank[0], hc[0] = hv[size], hrank[size], hc[size]
            _sift_down(hv, hrank, hc, size, 0)
        written += kept
    return out_r[:written], out_c[:written], out_pos[:written]


def available() -> bool:
    """Whether the compiled loops can run (numba installed, ``KB_KERNELS`` not ``numpy``)."""
    return numba is not None and os.environ.get("KB_KERNELS", "").strip().lower() != "numpy"


_warmed = False  #: whether ``warm`` compiled (or read) the loops in this process or in its parent before a fork


def ready() -> bool:
    """Whether the linker's steps use the compiled loops now: they can run and were warmed (a small
    batch keeps the numpy steps: reading the compiled code back costs more than the loops save)."""
    return _warmed and available()


def warm() -> bool:
    """Compile (or read from numba's cache) the loops, once a process; returns ``ready()``. Should
    numba fail, it warns and the numpy steps run."""
    global _warmed
    if not available():
        return False
    if _warmed:
        return True
    indptr, indices = np.array([0, 1, 2], np.int32), np.array([0, 0], np.int32)
    flags = np.zeros(2, bool)
    one = np.array([0], np.int64)
    try:
        shared = shared_sums(indptr, indices, np.ones(1), flags[:1], flags, one, one + 1)
        best = best_votes(indptr[:2], indices[:1], np.ones(1), joined_parts([(indptr[:2], indices[:1], np.ones(1))]),
                          2, one + 1, one + 1, visibility(np.array([-1, -1]), np.arange(2)), 2, 1)
    except Exception as err:  # noqa: BLE001 - any failure of numba leaves the numpy steps, which give the same bits
        warnings.warn(f"the linker's compiled loops could not be made ({type(err).__name__}: {err}); "
                      "the numpy steps run instead (the same results, slower)", RuntimeWarning, stacklevel=2)
        return False
    # the pair shares term 0; row 1 sees row 0
    if shared[1].tolist() != [1.0] or best[1].tolist() != [0]:
        warnings.warn("the linker's compiled loops gave a wrong answer on a known case; the numpy steps run "
                      "instead", RuntimeWarning, stacklevel=2)
        return False
    _warmed = True
    return True


def shared_sums(indptr, indices, w, hub, strong_base, ms, cs):
    """Per pair (``ms[i]``, ``cs[i]``), over the terms both rows of the postings hold: the summed
    weight ``w`` (nonzero ones), their number and the strong count (each side's ``strong_base``
    where the term is not a ``hub``); ``evidence._shared``' values."""
    return _shared(_fixed(indptr, np.int64), _fixed(indices, np.int32), _fixed(w, np.float64), _fixed(hub, bool),
                  _fixed(strong_base, bool), _fixed(ms, np.int64), _fixed(cs, np.int64))


def joined_parts(parts) -> tuple:
    """``(indptr, indices, data, part_starts)``: the (terms x entries) matrices ``parts``, each
    ``(indptr, indices, data)``, in one set of arrays (``best_votes`` reads them; join once). Their
    values must not be negative (the vote loop counts on it)."""
    n_terms = len(parts[0][0]) - 1
    if any(len(p[0]) != n_terms + 1 for p in parts):
        raise ValueError("the parts of the transposed postings must have the same terms")
    part_starts = np.arange(len(parts) + 1, dtype=np.int64) * (n_terms + 1)
    offsets = np.cumsum([0] + [len(p[1]) for p in parts[:-1]])  # each part's positions past the ones before
    indptr = np.concatenate([np.asarray(p[0], np.int64) + off for p, off in zip(parts, offsets)])
    indices = np.concatenate([np.asarray(p[1], np.int32) for p in parts])
    data = np.concatenate([np.asarray(p[2], np.float64) for p in parts])
    if data.size and not data.min() >= 0.0:
        raise ValueError("the transposed postings hold a negative (or NaN) value: the vote loop sums non-negative ones")
    return tuple(_fixed(a) for a in (indptr, indices, data, part_starts))


def visibility(visible_from, rank) -> np.ndarray:
    """Per entry, the rank a row must exceed to see it and its own rank, side by side (one read)."""
    return _fixed(np.stack([np.asarray(visible_from, np.int64), np.asarray(rank, np.int64)], axis=1))


def best_votes(q_indptr, q_terms, q_weights, joined, cut, rows, row_rank, seen, n: int, k: int):
    """Per query row, the ``k`` entries with the highest vote (ties: the newer first) among those
    it may see (``seen[c, 0] < row_rank``, not itself; ``seen``: ``visibility(...)``) and before
    ``cut``: a vote sums ``q_weights * data`` over the row's terms (``q_indptr``/``q_terms``, in
    term order) and the entries of each term in the parts ``joined`` (``joined_parts``: matrices
    whose sum is the transposed postings). No weight may be negative. Returns ``(r, c, pos)``, by
    row then place: what ``evidence._best`` makes of ``evidence._votes``."""
    q_weights = _fixed(q_weights, np.float64)
    if q_weights.size and not q_weights.min() >= 0.0:
        raise ValueError("a voting term's weight is negative (or NaN): the vote loop sums non-negative ones")
    indptr, indices, data, part_starts = joined
    return _best(_fixed(q_indptr, np.int64), _fixed(q_terms, np.int64), q_weights, indptr, indices, data, part_starts,
                 int(cut), _fixed(rows, np.int64), _fixed(row_rank, np.int64), _fixed(seen, np.int64), int(n), int(k))
