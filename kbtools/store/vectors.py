"""Entry vectors read in place: a view over the memory-mapped ``.npy`` segments of a bank.

A bank's vectors are written one segment per write (an append), so concatenating them on every
read would copy the whole (n, 4, d) array after each small write. :class:`SegmentedVectors` keeps
the segments memory-mapped and a row selection over them (the latest vector per id, live entries
only); indexing it gathers just the rows asked for, and ``np.asarray(view)`` materialises the whole
array for the callers that need one (batch jobs, never the query path).

>>> a = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
>>> b = np.ones((1, 4, 3), np.float32)
>>> view = SegmentedVectors([a, b])
>>> view.shape, view[[2, 0], 0, :].tolist()
((3, 4, 3), [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
>>> np.asarray(view).shape
(3, 4, 3)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["SegmentedVectors"]


class SegmentedVectors:
    """Rows ``rows`` (positions in the virtual concatenation of ``parts``; all rows when None) of
    a list of arrays of the same trailing shape, without concatenating them. Read-only; rows come
    back as float32."""

    __slots__ = ("parts", "offsets", "rows", "_tail")

    def __init__(self, parts: Sequence[np.ndarray], rows: np.ndarray | None = None):
        self.parts = list(parts)
        sizes = [len(p) for p in self.parts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self._tail = tuple(self.parts[0].shape[1:]) if self.parts else (0, 0)

    # -- array protocol ---------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self._tail)

    @property
    def ndim(self) -> int:
        return 1 + len(self._tail)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32)

    @property
    def total(self) -> int:
        """Rows in all the segments together (before the selection)."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return int(self.offsets[-1]) if self.rows is None else int(len(self.rows))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.take(np.arange(len(self)))
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        rest: tuple = ()
        if isinstance(key, tuple):
            key, rest = key[0], key[1:]
        if isinstance(key, (int, np.integer)):
            return self.take(np.array([int(key) % max(len(self), 1)]))[(0, *rest)]
        if isinstance(key, slice):
            picked = np.arange(len(self))[key]
        else:
            picked = np.asarray(key)
            if picked.dtype == bool:
                if picked.shape != (len(self),):
                    raise IndexError(f"boolean index of shape {picked.shape} for {len(self)} rows")
                picked = np.flatnonzero(picked)
        if rest and isinstance(rest[0], (int, np.integer)) and not isinstance(rest[0], bool):
            kind = int(rest[0])
            if not -self._tail[0] <= kind < self._tail[0]:
                raise IndexError(f"index {kind} is out of bounds for {self._tail[0]} vectors per row")
            out = self.take(picked.astype(np.int64, copy=False), kind=kind % self._tail[0])  # one vector of each row read
            return out[(slice(None), *rest[1:])] if rest[1:] else out
        out = self.take(picked.astype(np.int64, copy=False))
        return out[(slice(None), *rest)] if rest else out

    # -- reading ----------------------------------------------------------------------------

    def take(self, picked: np.ndarray, kind: int | None = None) -> np.ndarray:
        """The selected rows at ``picked`` (positions in this view), gathered from their segments
        into one new float32 array; with ``kind``, only that vector of each row (``view[picked,
        kind]``, shape (rows, d)), the others neither read nor converted.

        >>> view = SegmentedVectors([np.arange(8, dtype=np.float16).reshape(2, 2, 2), np.ones((1, 2, 2))])
        >>> view.take(np.array([2, 0]), kind=1).tolist()
        [[1.0, 1.0], [2.0, 3.0]]
        """
        picked = np.asarray(picked, dtype=np.int64)
        pos = picked if self.rows is None else self.rows[picked]
        tail = self._tail if kind is None else self._tail[1:]
        out = np.empty((len(pos), *tail), dtype=np.float32)
        if not len(pos):
            return out
        seg = np.searchsorted(self.offsets, pos, side="right") - 1
        for s in np.unique(seg):
            where = np.flatnonzero(seg == s)
            local = pos[where] - self.offsets[s]
            part = self.parts[s] if kind is None else self.parts[s][:, kind]
            if len(where) == len(part) and np.array_equal(local, np.arange(len(part))):
                out[where] = part  # a whole segment in order: one sequential read
            elif len(local) and local[-1] - local[0] == len(local) - 1 and np.all(np.diff(local) == 1):
                out[where] = part[local[0] : local[-1] + 1]  # a run in order: a slice, no gather
            else:
                out[where] = part[local]
        return out

    def __repr__(self) -> str:
        return f"<SegmentedVectors {self.shape} over {len(self.parts)} segments>"
