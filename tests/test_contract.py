"""The contract of every pure algorithm: it runs on an empty input and on a one-entry input, and it
never changes the frames it is given (polars frames are immutable, so the check is that the
caller's frames still equal a copy taken before)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kbtools import graph
from kbtools.evaluate.baselines import collapse, mmr
from kbtools.evaluate.leak import leaky_notes
from kbtools.linker import plan_connect
from kbtools.ops.citations import plan_backfill
from kbtools.model.fading import plan_decay
from kbtools.judging.judge import candidate_pairs
from kbtools.model.schema import SCHEMAS, empty
from kbtools.ops.interchange import plan_import
from kbtools.ops.writes import plan_edge_changes
from kbtools.retrieval.folding import flat, fold, pool_components

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


def _entries(n: int) -> pl.DataFrame:
    if n == 0:
        return empty("entries")
    return pl.DataFrame([{
        "id": "a1b2c3d4", "kind": "step", "title": "Ship the order", "summary": "Ship it.",
        "content": "Ship the order to the customer once it is packed.", "useful_for": "", "systems": ["wms"],
        "tasks": ["ship"], "steps": [], "metadata": "{}", "session_id": None, "created_at": NOW, "updated_at": NOW,
        "linked_at": None, "usage_count": 0, "last_used_at": None, "status": "active",
    }], schema=SCHEMAS["entries"])


def _pool(entries: pl.DataFrame) -> pl.DataFrame:
    return entries.select("id", "title", "summary", "kind", "steps").with_columns(pl.lit(1.0).alias("score"))


ALGORITHMS = {
    "fold": lambda e, g: fold(_pool(e), g, entries=e),
    "flat": lambda e, g: flat(_pool(e), g, entries=e),
    "pool_components": lambda e, g: pool_components(_pool(e), g),
    "collapse": lambda e, g: collapse(_pool(e), g),
    "mmr": lambda e, g: mmr(_pool(e), np.ones((e.height, 2))),
    "find_holes": lambda e, g: graph.find_holes(e, g),
    "find_flows": lambda e, g: graph.find_flows(e, g),
    "to_igraph": lambda e, g: graph.to_igraph(e, g),
    "find_communities": lambda e, g: graph.find_communities(graph.to_igraph(e, g), entries=e),
    "centrality_scores": lambda e, g: graph.centrality_scores(graph.to_igraph(e, g)),
    "personalized_pagerank": lambda e, g: graph.personalized_pagerank(
        graph.Adjacency.build(e, g), {i: 1.0 for i in e["id"].to_list()}),
    "plan_connect": lambda e, g: plan_connect(e, g, None, now=NOW),
    "plan_backfill": lambda e, g: plan_backfill(e, g),
    "plan_decay": lambda e, g: plan_decay(g, e["id"], now=NOW),
    "leaky_notes": lambda e, g: leaky_notes(e, g),
    "candidate_pairs": lambda e, g: candidate_pairs(e, edges=g),
    "plan_import": lambda e, g: plan_import(empty("entries"), empty("edges"), e, g, None, actor="t", now=NOW),
    "plan_edge_changes": lambda e, g: plan_edge_changes(e, g, actor="t", reason="contract", now=NOW),
}


@pytest.mark.parametrize("size", [0, 1])
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_pure_algorithm_runs_on_tiny_input_and_leaves_it_unchanged(name, size):
    entries, edges = _entries(size), empty("edges")
    before = (entries.clone(), edges.clone())
    ALGORITHMS[name](entries, edges)
    assert_frame_equal(entries, before[0])
    assert_frame_equal(edges, before[1])
