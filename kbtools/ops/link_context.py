"""What the linker reads from a bank, cached on the bank and grown on append: its settings, its
term statistics, the content vectors in row order and a nearest-neighbour index over them; and the
plan of links for entries that are about to be written (the write-time linker inside one
transaction).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> linker_settings(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")).max_new
5
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.linker import LINKER_DEFAULTS, LINKER_LEXICAL, LinkerSettings, LinkPlan, TermStats, plan_links
from kbtools.store.bank import Bank

__all__ = ["linker_settings", "term_stats", "linker_vectors", "neighbour_index", "plan_new_entry_links",
           "NEIGHBOURS_FLAT_BELOW", "new_neighbour_index", "faiss_threads"]


def linker_settings(bank: Bank) -> LinkerSettings:
    """The linker's settings for this bank: the lexical weight of meaning (omega 0.25) when its
    vectors come from a lexical embedder, the defaults otherwise; ``linker`` settings in the bank
    override both."""
    base = LINKER_LEXICAL if (bank.embedder_name or "").startswith("hashing") else LINKER_DEFAULTS
    over = dict(bank.settings.get("linker") or {})
    if over.get("weights"):  # stored as JSON lists: the settings are hashable tuples
        over["weights"] = tuple((str(k), float(v)) for k, v in over["weights"])
    return base.with_(**over) if over else base


def term_stats(bank: Bank, settings: LinkerSettings) -> TermStats:
    """The linker's term statistics for the bank, cached; when entries were only appended since
    (same triples, no text or kind changed), the previous statistics are extended, not rebuilt."""
    name = f"termstats:{hash(settings)}"
    known = tuple(sorted(set(bank.triples["subject"].to_list()) | set(bank.triples["object"].to_list())))
    entries = bank.entries
    content = entries.select(pl.struct("id", "kind", "title", "summary", "content").hash()).to_series()

    def build(prior) -> tuple:
        if prior is not None:
            old_stats, old_known, old_content = prior
            n = len(old_content)
            if old_known == known and n <= len(content) and content.head(n).equals(old_content):
                try:
                    return old_stats.extend(entries), known, content
                except ValidationError:
                    pass
        return TermStats.build(entries, known_entities=known, settings=settings), known, content

    return bank.derived(name, build, on=("entries", "triples"), grow=True)[0]


def linker_vectors(bank: Bank) -> np.ndarray | None:
    """Content-dimension vectors aligned with the entries' rows (zero rows where missing)."""
    ids, data = bank.vectors()
    if len(ids) == 0:
        return None

    def build() -> np.ndarray:
        pos = pl.DataFrame({"id": ids.tolist(), "_pos": np.arange(len(ids))})
        order = bank.entries.select("id").join(pos, on="id", how="left")["_pos"].to_numpy()
        out = np.zeros((bank.entries.height, data.shape[2]), dtype=np.float32)
        have = ~np.isnan(order.astype(float))
        out[have] = np.asarray(data)[order[have].astype(np.int64), 0, :]
        return out

    return bank.derived("linker-vectors", build, on=("entries", "vectors"))


#: Below this many entries the linker's neighbour index is exact (flat); above it, HNSW.
NEIGHBOURS_FLAT_BELOW = 20_000
_HNSW_M, _HNSW_EF_CONSTRUCTION, _HNSW_EF_SEARCH = 32, 80, 64


def faiss_threads(threads: int = 1):
    """faiss with its OpenMP threads set (one for interactive searches)."""
    import faiss

    faiss.omp_set_num_threads(threads)
    return faiss


def new_neighbour_index(vectors: np.ndarray):
    """A flat inner-product index (exact) for a small bank, HNSW (M 32, efSearch 64) for a large one."""
    faiss = faiss_threads(1)
    d = vectors.shape[1]
    if len(vectors) < NEIGHBOURS_FLAT_BELOW:
        return faiss.IndexFlatIP(d)
    index = faiss.IndexHNSWFlat(d, _HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = _HNSW_EF_SEARCH
    return index


def neighbour_index(bank: Bank, vectors: np.ndarray | None):
    """The faiss index over the linker's content vectors in row order (what ``plan_links`` and
    ``plan_connect`` take as ``neighbors``), cached per bank; when entries were only appended since
    (earlier rows and their vectors unchanged), the previous index grows by the new rows. A flat
    index that grows past ``NEIGHBOURS_FLAT_BELOW`` entries is rebuilt as HNSW."""
    if vectors is None or len(vectors) == 0:
        return None
    name = "linker-neighbours"

    def build(prior):
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if prior is not None:
            index, old = prior
            n = len(old)
            outgrown = isinstance(index, faiss_threads(1).IndexFlatIP) and len(vecs) >= NEIGHBOURS_FLAT_BELOW
            if not outgrown and n <= len(vecs) and np.array_equal(vecs[:n], old):
                if len(vecs) > n:
                    index.add(vecs[n:])
                return index, vecs
        index = new_neighbour_index(vecs)
        threads = 1 if len(vecs) < NEIGHBOURS_FLAT_BELOW else max(1, min(8, os.cpu_count() or 1))
        faiss_threads(threads)
        try:
            index.add(vecs)
        finally:
            faiss_threads(1)
        return index, vecs

    return bank.derived(name, build, on=("entries", "vectors"), grow=True)[0]


class _WithNewRows:
    """A neighbour index over the bank's rows plus a few rows about to be written: the cached index
    is searched as it is (never changed before the commit) and the new rows are scored exactly."""

    def __init__(self, base, extra: np.ndarray):
        self.base, self.extra = base, np.ascontiguousarray(extra, dtype=np.float32)
        self.n_base = 0 if base is None else int(base.ntotal)
        self.ntotal = self.n_base + len(self.extra)

    def search(self, x: np.ndarray, k: int):
        parts_s, parts_r = [], []
        if self.base is not None and self.n_base:
            s, r = self.base.search(x, min(k, self.n_base))
            parts_s.append(s)
            parts_r.append(r)
        if len(self.extra):
            parts_s.append(x @ self.extra.T)
            parts_r.append(np.broadcast_to(np.arange(self.n_base, self.ntotal), (len(x), len(self.extra))))
        scores, rows = np.concatenate(parts_s, axis=1), np.concatenate(parts_r, axis=1)
        scores = np.where(rows < 0, -np.inf, scores)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top_s, top_r = np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)
        if top_s.shape[1] < k:
            pad = k - top_s.shape[1]
            top_s = np.pad(top_s, ((0, 0), (0, pad)), constant_values=-np.inf)
            top_r = np.pad(top_r, ((0, 0), (0, pad)), constant_values=-1)
        return top_s.astype(np.float32), np.where(np.isfinite(top_s), top_r, -1).astype(np.int64)


def plan_new_entry_links(bank: Bank, new_entries: pl.DataFrame, new_edges: pl.DataFrame,
                         content_vectors: np.ndarray | None, *, now) -> LinkPlan:
    """The write-time linker's links for entries that are not in the bank yet (``new_entries``,
    with ``new_edges`` written beside them), as if they were appended to it: what
    ``report_learning`` commits in the same transaction as the entries themselves.

    ``content_vectors`` holds the content-dimension vector of each new entry (row order), or None
    when the bank has no vectors. The bank's cached statistics and index are read, never changed.
    """
    settings = linker_settings(bank)
    entries = pl.concat([bank.entries, new_entries.select(bank.entries.columns)], how="vertical_relaxed")
    edges = pl.concat([bank.edges, new_edges.select(bank.edges.columns)], how="vertical_relaxed") if new_edges.height else bank.edges
    old_vectors = linker_vectors(bank)
    vectors = neighbors = None
    if old_vectors is not None and content_vectors is not None:
        vectors = np.vstack([old_vectors, np.asarray(content_vectors, dtype=np.float32)])
        neighbors = _WithNewRows(neighbour_index(bank, old_vectors), content_vectors)
        faiss_threads(1)
    try:
        stats = term_stats(bank, settings).extend(entries)
    except ValidationError:
        stats = None
    plans = [plan_links(eid, entries, edges, bank.triples, vectors=vectors, neighbors=neighbors, stats=stats,
                        settings=settings, now=now) for eid in new_entries["id"].to_list()]
    if len(plans) == 1:
        return plans[0]
    return LinkPlan(add=pl.concat([p.add for p in plans], how="diagonal_relaxed"),
                    remove=pl.concat([p.remove for p in plans], how="diagonal_relaxed"),
                    entry_updates=pl.concat([p.entry_updates for p in plans], how="diagonal_relaxed"),
                    report={"entries": len(plans)})
