"""Shared building blocks of the demo generators: the bank type, ids, times and frame builders.

Every generator draws ids with :func:`hex_ids` and creation instants with :func:`created_times`
(always before :data:`REFERENCE_DATE`), collects rows in a :class:`BankRows` builder and turns
them into schema-exact frames with ``_entries_frame``, ``_edges_frame`` and ``triples_frame``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import polars as pl

from kbtools.model.schema import conform, empty

__all__ = ["DemoBank", "REFERENCE_DATE"]


#: Every demo timestamp lies within the year before this instant (never ``datetime.now()``).
REFERENCE_DATE = datetime(2026, 11, 1, tzinfo=timezone.utc)
#: :data:`REFERENCE_DATE` as int64 microseconds since the epoch (how the generators count time).
REFERENCE_US = int(REFERENCE_DATE.timestamp()) * 1_000_000
#: One day in microseconds.
DAY_US = 86_400 * 1_000_000
#: The ``generator`` every demo bank's ground truth names.
GENERATOR = "kbtools.demo"


@dataclass(frozen=True)
class DemoBank:
    """A generated bank: its three keyed tables and the ground truth that goes beside it.

    >>> from kbtools.demo import business_bank
    >>> b = business_bank()
    >>> b.name, sorted(b.truth)[:3]
    ('business', ['bank', 'generator', 'holes'])
    """

    name: str
    entries: pl.DataFrame
    edges: pl.DataFrame
    triples: pl.DataFrame
    truth: dict


def hex_ids(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct 8-lowercase-hex ids, in draw order."""
    values = np.empty(0, dtype=np.uint64)
    for _ in range(64):  # bounded: each round keeps all but a vanishing share of the draws
        if values.size >= n:
            break
        draw = rng.integers(0, 2**32, size=n - values.size + 16, dtype=np.uint64)
        values = np.concatenate([values, draw])
        _, first = np.unique(values, return_index=True)
        values = values[np.sort(first)]
    return [f"{v:08x}" for v in values[:n].tolist()]


def created_times(rng: np.random.Generator, n: int, *, days: float = 365.0) -> np.ndarray:
    """``n`` creation instants (int64 microseconds) spread over ``days`` before the reference date."""
    back = rng.uniform(1.0, days, size=n) * DAY_US
    return (REFERENCE_US - back).astype(np.int64)


def utc_series(name: str, values) -> pl.Series:
    """A UTC ``Datetime("us")`` series named ``name`` from int64 microseconds since the epoch."""
    return pl.Series(name, values, dtype=pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")


def pick(rng: np.random.Generator, seq):
    """One item of ``seq``, drawn uniformly with ``rng``."""
    return seq[int(rng.integers(len(seq)))]


def capitalised(text: str) -> str:
    """``text`` with its first character in upper case and the rest as given.

    >>> capitalised("run the build")
    'Run the build'
    """
    return text[:1].upper() + text[1:]


class BankRows:
    """Accumulates a generated bank's entry and edge rows (:meth:`entry`, :meth:`edge`) and gives
    them as schema-exact frames (:meth:`frames`); ids come from a pre-drawn list, times from ``rng``."""

    def __init__(self, rng: np.random.Generator, ids: list[str]):
        self.rng = rng
        self._ids = iter(ids)
        self.entries: list[dict] = []
        self.edges: list[dict] = []
        self.at: dict[str, int] = {}
        self.row: dict[str, dict] = {}
        self._keys: set[tuple[str, str, str]] = set()

    def entry(self, *, kind, title, summary, content, useful_for, systems=(), tasks=(), steps=(),
              metadata=None, session="", at=None, status="active") -> str:
        id_ = next(self._ids)
        at = int(created_times(self.rng, 1)[0]) if at is None else int(at)
        self.at[id_] = at
        self.entries.append(dict(
            id=id_, kind=kind, title=title, summary=summary, content=content, useful_for=useful_for,
            systems=list(systems), tasks=list(tasks), steps=list(steps),
            metadata=json.dumps(metadata or {}, sort_keys=True), session_id=session,
            created_at=at, status=status,
        ))
        self.row[id_] = self.entries[-1]
        return id_

    def edge(self, src, dst, type_, *, note=None, by="agent-1", source="author", evidence="{}") -> bool:
        """Adds ``src type_ dst`` unless it would be a self-loop or a duplicate key."""
        key = (src, dst, type_)
        if src == dst or key in self._keys:
            return False
        self._keys.add(key)
        at = max(self.at[src], self.at[dst]) + int(self.rng.integers(60, 36_000)) * 1_000_000
        self.edges.append(dict(src=src, dst=dst, type=type_, source=source, note=note, evidence=evidence,
                               weight=1.0, created_by=by, created_at=at, seen_at=at))
        return True

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        return _entries_frame(self.entries, self.rng), _edges_frame(self.edges)


def _entries_frame(rows: list[dict], rng: np.random.Generator) -> pl.DataFrame:
    created = np.array([r["created_at"] for r in rows], dtype=np.int64)
    rewritten = rng.random(created.size) < 1 / 3  # dedup rewrites: updated well after creation
    updated = created + (rewritten * rng.uniform(0.0, 0.6, created.size) * (REFERENCE_US - created)).astype(np.int64)
    frame = pl.DataFrame(
        {k: [r[k] for r in rows] for k in rows[0] if k != "created_at"} if rows else {},
        schema_overrides={"systems": pl.List(pl.String), "tasks": pl.List(pl.String), "steps": pl.List(pl.String)},
    ).with_columns(
        utc_series("created_at", created),
        utc_series("updated_at", updated),
        pl.lit(0, dtype=pl.Int64).alias("usage_count"),
    )
    return conform(frame, "entries").sort("created_at", "id")


def _edges_frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return empty("edges")
    frame = pl.DataFrame(rows, schema_overrides={"note": pl.String}).with_columns(
        pl.col("created_at", "seen_at").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    )
    return conform(frame, "edges").sort("created_at", "src", "dst", "type")


def triples_frame(rows: list[tuple[str, str, str, str, int]]) -> pl.DataFrame:
    """The schema-exact triples frame of ``(subject, relation, object, created_by, created_at in
    microseconds)`` rows, the first of each ``(subject, relation, object)`` kept."""
    if not rows:
        return empty("triples")
    subject, relation, object_, by, at = zip(*rows)
    frame = pl.DataFrame({"subject": subject, "relation": relation, "object": object_, "created_by": by})
    frame = frame.with_columns(utc_series("created_at", list(at)))
    return conform(frame, "triples").unique(["subject", "relation", "object"], keep="first", maintain_order=True)
