"""Rows of a table by the value of one column, kept across writes: the edges of a few entries are
found by binary search instead of a scan of every edge (a linked write reads the edges near its
entry, checks its new links against those from the same sources and commits them).

A :class:`RowIndex` numbers rows as they arrive (a row's number is never given to another) and
keeps, per slab of rows, the column's values sorted with the rows' numbers. A write that appends
rows adds a slab; one that drops rows (a deleted key) records their numbers. A row's position in
the table is its number less the dropped numbers below it. :class:`RowChange` says how a merged
frame came from the one before it (what :func:`~kbtools.store.segments.read_segments` reports).

>>> import polars as pl
>>> ix = RowIndex.build(pl.Series(["b", "a", "b"]))
>>> ix.rows_of(["b"]).tolist()
[0, 2]
>>> ix = ix.changed(RowChange(np.array([0]), 1), pl.Series(["b"]))  # row 0 dropped, "b" appended
>>> ix.rows_of(["b"]).tolist(), ix.rows_of(["a", "c"]).tolist()
([1, 2], [0])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

__all__ = ["RowChange", "RowIndex", "packed_ids", "packed_query"]


def packed_ids(ids: pl.Series) -> np.ndarray | None:
    """``ids`` as big-endian ``uint64`` (each id's bytes, zero-padded to 8), converted as bytes
    (no ``str`` array in between): integer order is string order. None unless every id is ASCII
    of at most 8 bytes.

    >>> packed_ids(pl.Series(["a", "b"])).tolist() == sorted(packed_ids(pl.Series(["b", "a"])).tolist())
    True
    """
    if not len(ids) or ids.null_count() or ids.str.len_bytes().max() > 8:
        return None
    raw = ids.cast(pl.Binary).to_numpy().astype("S8")
    if (raw.view(np.uint8) > 127).any():
        return None
    return raw.view(">u8").astype(np.uint64)


class RowChange(NamedTuple):
    """How a table's merged rows came from the rows before: those at positions ``dropped`` (sorted,
    in the rows before) left, ``appended`` rows were added at the end; every other row kept its
    place and its key (its other values may have changed)."""

    dropped: np.ndarray
    appended: int


class _Slab(NamedTuple):
    """Values of a run of rows, sorted (packed into uint64 where they pack), with each one's row number."""

    values: np.ndarray
    numbers: np.ndarray
    packed: bool


def _slab(values: pl.Series, first: int) -> _Slab:
    if len(values) <= 64:  # a write's few rows: read in Python (each polars call costs more here)
        listed = [(v, first + i) for i, v in enumerate(values.cast(pl.String).to_list()) if v is not None]
        got = [v for v, _ in listed]
        packed, fits = packed_query(got)
        keys = packed if fits.all() else np.asarray(got, dtype=str)
        numbers = np.asarray([n for _, n in listed], dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        return _Slab(keys[order], numbers[order], bool(fits.all()))
    numbers = np.arange(first, first + len(values), dtype=np.int64)
    keep = values.is_not_null().to_numpy()
    if not keep.all():  # a null value is never looked up
        values, numbers = values.filter(pl.Series(keep)), numbers[keep]
    packed = packed_ids(values.cast(pl.String)) if len(values) else None
    keys = packed if packed is not None else values.cast(pl.String).to_numpy().astype(str)
    order = np.argsort(keys, kind="stable")
    return _Slab(keys[order], numbers[order], packed is not None)


def packed_query(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``values`` packed as :func:`packed_ids` packs ids (0 for one that does not pack), and which
    pack: what a binary search among packed ids looks for.

    >>> q, fits = packed_query(["a", "not-ascii-é", 7])
    >>> bool(q[0] == packed_ids(pl.Series(["a"]))[0]), fits.tolist()
    (True, [True, False, False])
    """
    if values and all(isinstance(v, str) for v in values) and max(map(len, values)) <= 8 and "".join(values).isascii():
        return np.array(values, dtype="S8").view(">u8").astype(np.uint64), np.ones(len(values), dtype=bool)
    fits = np.array([isinstance(v, str) and len(v) <= 8 and v.isascii() for v in values], dtype=bool)
    raw = np.asarray([v if ok else "" for v, ok in zip(values, fits.tolist())], dtype="S8")
    return raw.view(">u8").astype(np.uint64), fits


def _unpacked(values: np.ndarray) -> np.ndarray:
    """Packed values as the strings they pack."""
    return np.char.rstrip(values.astype(">u8").view("S8").astype(str), "\0") if len(values) else values.astype(str)


class RowIndex:
    """Positions of rows by the value of one column, grown by :meth:`changed` as writes append and
    drop rows (see the module's text). Immutable: a change makes a new index sharing the slabs."""

    #: appended slabs past which they are merged into one (the first slab is left alone)
    MAX_SLABS = 8
    #: how many indexes this process built from a whole column (tests count them)
    builds = 0

    __slots__ = ("slabs", "dropped", "total")

    def __init__(self, slabs: tuple[_Slab, ...], dropped: np.ndarray, total: int):
        self.slabs, self.dropped, self.total = slabs, dropped, total

    @classmethod
    def build(cls, values: pl.Series) -> RowIndex:
        """The index of a column's ``values`` (row ``i`` at position ``i``)."""
        RowIndex.builds += 1
        return cls((_slab(values, 0),), np.zeros(0, np.int64), len(values))

    @property
    def height(self) -> int:
        """The rows the indexed table holds now."""
        return self.total - len(self.dropped)

    def changed(self, change: RowChange, appended: pl.Series) -> RowIndex:
        """This index after ``change``; ``appended``: the column's values of the appended rows."""
        dropped = self.dropped
        if len(change.dropped):
            # a position is its number less the dropped numbers below it: the numbers of positions p
            # are p + (how many dropped numbers d have d - (their rank) <= p)
            gaps = dropped - np.arange(len(dropped))
            pos = np.asarray(change.dropped, np.int64)
            dropped = np.union1d(dropped, pos + np.searchsorted(gaps, pos, side="right"))
        slabs = list(self.slabs)
        if change.appended:
            slabs.append(_slab(appended, self.total))
        if len(slabs) > self.MAX_SLABS + 1:
            tail = slabs[1:]
            packed = all(s.packed for s in tail)
            values = np.concatenate([s.values if packed or not s.packed else _unpacked(s.values) for s in tail])
            numbers = np.concatenate([s.numbers for s in tail])
            order = np.argsort(values, kind="stable")
            slabs = [slabs[0], _Slab(values[order], numbers[order], packed)]
        return RowIndex(tuple(slabs), dropped, self.total + change.appended)

    def rows_of(self, values) -> np.ndarray:
        """The positions (ascending) of the rows whose value is one of ``values``."""
        wanted = [v for v in dict.fromkeys(values) if v is not None]
        if not wanted:
            return np.zeros(0, np.int64)
        packed = fits = text = None
        found = []
        for slab in self.slabs:
            if slab.packed:
                if packed is None:
                    packed, fits = packed_query(wanted)
                q = packed[fits]
            else:
                if text is None:
                    text = np.asarray([str(v) for v in wanted])
                q = text
            if not len(q) or not len(slab.values):
                continue
            lo, hi = np.searchsorted(slab.values, q, "left"), np.searchsorted(slab.values, q, "right")
            count = hi - lo
            if count.any():  # lo[i] .. hi[i] - 1, each i in turn
                found.append(slab.numbers[np.repeat(lo - np.cumsum(count) + count, count) + np.arange(int(count.sum()))])
        if not found:
            return np.zeros(0, np.int64)
        numbers = np.unique(np.concatenate(found))
        if len(self.dropped):
            at = np.searchsorted(self.dropped, numbers)
            live = (at >= len(self.dropped)) | (self.dropped[np.minimum(at, len(self.dropped) - 1)] != numbers)
            numbers, at = numbers[live], at[live]
            return numbers - at
        return numbers
