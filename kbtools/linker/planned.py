"""The edges a linking plan adds, kept as columns while the plan is made (``PlannedColumns``), so
that the plan's ``add`` frame of a big connect is built from lists instead of from its records.

A record is a dictionary made when its link is planned; a whole-bank connect at 100k plans
hundreds of thousands of them, scattered over the heap. Reading them back at the end, ten fields
of each, misses the cache at every record, on one core after the last chunk, where the workers
have nothing left to do. Appending each record's columns as it is planned spreads that work over
the run, so less of it is left after the last chunk.

>>> planned = PlannedColumns(now_us=1_700_000_000_000_000)
>>> first = planned.put_auto(0, 1, "see_also", 0.5)
>>> second = planned.put_auto(1, 2, "resolves", 0.75)
>>> planned.write(second, "{}")
>>> planned.drop(first)
>>> ids = pl.Series(["a", "b", "c"])
>>> planned.frame(lambda rows: ids[rows]).select("src", "dst", "type", "evidence").rows()
[('b', 'c', 'resolves', '{}')]
"""

from __future__ import annotations

import numpy as np
import polars as pl

from kbtools.model.schema import SCHEMAS

__all__ = ["PlannedColumns"]

#: A record's fields that an automatic link planned now holds the same values of (``PlannedColumns._auto``)
_CONSTANT = ("source", "note", "created_by", "created_us", "seen_us")
_CONSTANT_COLUMNS = ("source", "note", "created_by", "created_at", "seen_at")  #: their columns in the frame


class PlannedColumns:
    """One place per record put into a plan's ``added`` (in that order): its ends' rows, type,
    weight and evidence text, and whether it is still planned (``alive``). An automatic link the
    linker plans now (``put_auto``) has the same source, note, author and times as every other; a
    record that differs is kept whole (``others``) and its own values are read at the end."""

    __slots__ = ("src", "dst", "type", "weight", "evidence", "alive", "others", "_auto")

    def __init__(self, now_us: int):
        self.src: list[int] = []
        self.dst: list[int] = []
        self.type: list[str] = []
        self.weight: list[float] = []
        self.evidence: list[str | None] = []
        self.alive = bytearray()
        self.others: dict[int, dict] = {}
        #: an automatic link's source, note, author, created and seen times (epoch microseconds)
        self._auto = ("auto", None, "linker", now_us, now_us)

    def put_auto(self, src: int, dst: int, typ: str, weight: float) -> int:
        """The place of an automatic link planned now (its evidence text is written later)."""
        at = len(self.src)
        self.src.append(src)
        self.dst.append(dst)
        self.type.append(typ)
        self.weight.append(weight)
        self.evidence.append(None)
        self.alive.append(1)
        return at

    def extend_auto(self, src: list, dst: list, types: list, weights: list, evidence: list) -> None:
        """Many automatic links planned now, their evidence texts written (a link lane's, in order)."""
        self.src.extend(src)
        self.dst.extend(dst)
        self.type.extend(types)
        self.weight.extend(weights)
        self.evidence.extend(evidence)
        self.alive.extend(b"\x01" * len(src))

    def put(self, rec: dict) -> int:
        """The place of any planned record (``state.LinkState._new``'s fields)."""
        at = self.put_auto(rec["src"], rec["dst"], rec["type"], rec["weight"])
        self.evidence[at] = rec["evidence"]
        if tuple(rec[name] for name in _CONSTANT) != self._auto:
            self.others[at] = rec
        return at

    def write(self, at: int, text: str | None) -> None:
        """The evidence text of the record at this place."""
        self.evidence[at] = text

    def drop(self, at: int) -> None:
        """The record at this place is no longer planned (removed or replaced)."""
        self.alive[at] = 0

    def frame(self, ids_of) -> pl.DataFrame:
        """The records still planned, in the order they were put, as an edges-schema frame (times
        in epoch microseconds read as the schema's datetimes); ``ids_of(rows)``: the ids of an
        array of rows as a polars Series."""
        n = len(self.src)
        keep = np.frombuffer(bytes(self.alive), dtype=np.bool_)
        rows = np.flatnonzero(keep)
        mask = pl.Series(keep)
        schema = SCHEMAS["edges"]
        if self.others:  # the columns every automatic link holds the same, with the others' own values
            source, note, created_by, created, seen = ([value] * n for value in self._auto)
            for at, rec in self.others.items():
                source[at], note[at], created_by[at], created[at], seen[at] = (rec[name] for name in _CONSTANT)
        else:  # one value each (``kept`` repeats it)
            source, note, created_by, created, seen = self._auto

        def kept(name: str, values, dtype=None) -> pl.Series:
            if not self.others and name in _CONSTANT_COLUMNS:  # every record's the same value
                return pl.repeat(values, len(rows), dtype=dtype or schema[name], eager=True).alias(name)
            return pl.Series(name, values, dtype=dtype or schema[name]).filter(mask)

        return pl.DataFrame([
            ids_of(np.fromiter(self.src, np.int64, n)[rows]).alias("src"),
            ids_of(np.fromiter(self.dst, np.int64, n)[rows]).alias("dst"),
            kept("type", self.type), kept("source", source), kept("note", note), kept("evidence", self.evidence),
            pl.Series("weight", np.fromiter(self.weight, np.float64, n)[rows], dtype=schema["weight"]),
            kept("created_by", created_by),
            kept("created_at", created, pl.Int64).cast(schema["created_at"]),
            kept("seen_at", seen, pl.Int64).cast(schema["seen_at"]),
        ])
