"""A ``Plan``: everything one transaction writes, computed by pure code and applied once by
:meth:`kbtools.store.bank.Bank.apply` (one manifest swap, all or nothing).

Every write function of kbtools reads the bank, builds a Plan and applies it once: rows to upsert
or delete per keyed table (entries, edges, triples), rows to append (events, usage), optionally
entry vectors and settings.

>>> import polars as pl
>>> Plan().is_empty()
True
>>> p = Plan(appends={"events": pl.DataFrame({"action": ["a"]})})
>>> (p + Plan(appends={"events": pl.DataFrame({"action": ["b"]})})).appends["events"]["action"].to_list()
['a', 'b']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

import numpy as np
import polars as pl

__all__ = ["Plan", "VectorRows"]


class VectorRows(NamedTuple):
    """Vectors of some entries: ids (n,), data (n, dims, d) float32, the embedder's name and the
    hash of the texts each vector was built from (uint64, n)."""

    ids: np.ndarray
    data: np.ndarray
    embedder: str
    hashes: np.ndarray | None = None


def _concat(a: Mapping[str, pl.DataFrame], b: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    out = dict(a)
    for name, frame in b.items():
        out[name] = pl.concat([out[name], frame], how="diagonal_relaxed") if name in out else frame
    return out


@dataclass(frozen=True)
class Plan:
    """What one transaction writes. Frozen: combine plans with ``+`` (the right one's rows come
    after the left one's; at most one of them may carry vectors)."""

    upserts: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    deletes: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    appends: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    vectors: VectorRows | None = None
    replace_vectors: bool = False  # start the vectors over (a re-embed with another embedder)
    settings: Mapping | None = None

    def is_empty(self) -> bool:
        """True when applying this plan would write nothing."""
        frames = [*self.upserts.values(), *self.deletes.values(), *self.appends.values()]
        return all(f.height == 0 for f in frames) and self.vectors is None and not self.settings

    def __add__(self, other: "Plan") -> "Plan":
        if self.vectors is not None and other.vectors is not None:
            raise ValueError("two plans with vectors cannot be combined; embed them together")
        return Plan(
            upserts=_concat(self.upserts, other.upserts),
            deletes=_concat(self.deletes, other.deletes),
            appends=_concat(self.appends, other.appends),
            vectors=self.vectors if self.vectors is not None else other.vectors,
            replace_vectors=self.replace_vectors or other.replace_vectors,
            settings={**(self.settings or {}), **(other.settings or {})} or None,
        )
