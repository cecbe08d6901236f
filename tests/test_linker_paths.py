"""Every path a whole-bank connect can take plans what the plain path plans.

The oracle is ``reference_connect`` (below): ``plan_links`` for one entry at a
time, in ``created_at`` order, each plan applied before the next. ``plan_connect`` reads the bank in
chunks of any size, with the term statistics given or built by the call. Each path, on each bank,
must leave the same edges (type, source, weight, evidence, seen_at) and the same entries (status,
linked_at) as the oracle.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from kbtools.linker import LINKER_DEFAULTS, TermStats, apply_links, plan_connect, plan_links
from kbtools.linker.planning import triple_entities
from kbtools.model.schema import SCHEMAS, conform
from tests.seed_memories import synthetic_bank

NOW = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
SIZE = 400
SMALL_CHUNK = 7  #: chunks of a few entries: a chunk's entries are linked after the chunk before them

#: (seed, vectors, max_degree, neighbour index) of each bank.
BANKS = {
    "lexical, degree 4": (1, False, 4, None),
    "vectors, degree 12": (0, True, 12, None),
    "vectors, degree 3": (2, True, 3, None),
    "vectors through an approximate index": (5, True, LINKER_DEFAULTS.max_degree, "hnsw"),
}

#: (chunk, statistics given) of each path.
PATHS = {
    "one chunk": (None, True),
    "small chunks": (SMALL_CHUNK, True),
    "statistics built by the call": (23, False),
}


def _hnsw(vectors):
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexHNSWFlat(vectors.shape[1], 16, faiss.METRIC_INNER_PRODUCT)  # approximate: order matters
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


_MADE: dict = {}


def reference_connect(entries, edges, triples, *, vectors, neighbors, stats, settings, now):
    """The entries and edges after linking the bank the plain way: ``plan_links`` one entry at a time
    in ``created_at`` order, each plan applied before the next."""
    if "linked_at" not in entries.columns:
        entries = entries.with_columns(pl.lit(None, SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
    order = entries.filter(pl.col("linked_at").is_null()).sort("created_at", "id")["id"].to_list()
    for entry_id in order:
        plan = plan_links(entry_id, entries, edges, triples, vectors=vectors, neighbors=neighbors, stats=stats,
                          settings=settings, now=now)
        entries, edges = apply_links(entries, edges, plan)
    return entries, conform(edges if edges is not None else pl.DataFrame(schema=SCHEMAS["edges"]), "edges")


def _bank(name):
    """The bank's frames, its statistics and what the oracle leaves (made once per bank)."""
    if name not in _MADE:
        seed, use_vectors, max_degree, index = BANKS[name]
        entries, edges, triples, vectors = synthetic_bank(SIZE, seed=seed)
        vectors = vectors if use_vectors else None
        neighbors = _hnsw(vectors) if index == "hnsw" else None
        settings = LINKER_DEFAULTS.with_(max_degree=max_degree)
        stats = TermStats.build(entries, known_entities=triple_entities(triples))
        want = reference_connect(entries, edges, triples, vectors=vectors, neighbors=neighbors, stats=stats,
                                 settings=settings, now=NOW)
        _MADE[name] = (entries, edges, triples, vectors, neighbors, settings, stats, want)
    return _MADE[name]


def _norm_edges(edges):
    return edges.select("src", "dst", "type", "source", "weight", "evidence", "seen_at").sort("src", "dst", "type")


def _norm_entries(entries):
    return entries.select("id", "status", "linked_at").sort("id")


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("bank", list(BANKS))
def test_every_connect_path_plans_what_one_entry_at_a_time_plans(bank, path):
    chunk, given = PATHS[path]
    entries, edges, triples, vectors, neighbors, settings, stats, (want_entries, want_edges) = _bank(bank)
    seen = []
    plan = plan_connect(entries, edges, triples, vectors=vectors, neighbors=neighbors, stats=stats if given else None,
                        settings=settings, now=NOW, chunk=chunk,
                        progress=lambda done, total: seen.append((done, total)))
    got_entries, got_edges = apply_links(entries, edges, plan)
    assert plan.report["links"] > 100 and plan.report["structural"] > 0
    assert _norm_edges(got_edges).equals(_norm_edges(want_edges))
    assert _norm_entries(got_entries).equals(_norm_entries(want_entries))
    assert seen[-1][0] == seen[-1][1] == plan.report["entries"]
