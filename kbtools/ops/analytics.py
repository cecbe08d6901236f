"""Graph analytics on a bank: thin wrappers that hand a bank's frames to the pure algorithms of
``kbtools.graph`` (``related_entries``, ``shortest_trace``, ``find_communities``,
``centrality_scores``, ``find_holes``, ``find_flows``), caching the graph views per bank version.

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.workflow_holes(kb.open_bank("data/demo/business")).height  # doctest: +SKIP
18
"""

from __future__ import annotations

import dataclasses
import igraph as ig
import polars as pl

from kbtools.graph.activation import expand, links_section
from kbtools.graph.build import Adjacency, to_igraph
from kbtools.graph.community import find_communities
from kbtools.graph.holes import find_flows, find_holes
from kbtools.graph.hubs import centrality_scores
from kbtools.graph.paths import related_entries, shortest_trace
from kbtools.model.answer import Answer
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.retrieval.pipeline import query
from kbtools.store.bank import Bank

__all__ = [
    "bank_igraph",
    "bank_adjacency",
    "recall",
    "related",
    "trace",
    "communities",
    "centrality",
    "edges_counted",
    "workflow_holes",
    "process_flows",
]


def bank_igraph(bank: Bank, *, trusted_only: bool = True) -> ig.Graph:
    """The bank as a directed igraph: vertices carry id, kind, title, status; edges carry type,
    source, weight (faded for fading sources) and note. Cached per bank version."""
    return bank.derived(f"igraph:{trusted_only}", lambda: to_igraph(bank.entries, bank.edges, trusted_only=trusted_only),
                        on=("entries", "edges"))


def bank_adjacency(bank: Bank, *, trusted_only: bool = False) -> Adjacency:
    """The bank's undirected weighted adjacency for breadth-first walks (cached per version);
    automatic links take part unless ``trusted_only``."""
    return bank.derived(f"adjacency:{trusted_only}", lambda: Adjacency.build(bank.entries, bank.edges, trusted_only=trusted_only),
                        on=("entries", "edges"))


def _require(bank: Bank, *ids: str) -> None:
    bank.require_entries(ids)


def recall(bank: Bank, text: str, *, links: int = 3, k: int = 8, fold: bool = True, record_usage: bool | None = None,
           max_lines: int = 6, **query_options) -> Answer:
    """Query (folded by default), then spread activation from the results over the links: the best
    ``links`` entries the links bring in join the answer as ``linked`` (with their activation
    relative to the strongest seed; their usage is not counted), and ``links`` lines explain
    "How these entries connect". ``record_usage`` as in :func:`~kbtools.retrieval.pipeline.query`
    (by default unless the bank is open read-only)."""
    answer = query(bank, text, k=k, fold=fold, record_usage=record_usage, **query_options)
    if links == 0 or not answer.results:
        return answer
    adj = bank_adjacency(bank)
    seeds = {r.id: max(float(r.score), 1e-9) for r in answer.results}
    shown_all = {r.id for r in answer.results} | {p.id for r in answer.results for p in (*r.related, *r.neighbors)}
    brought = expand(seeds, adj, bank.entries, links=links + len(shown_all))
    brought = brought.filter(~pl.col("id").is_in(sorted(shown_all))).head(links)
    info = bank.entries.join(brought, on="id", how="inner").select("id", "kind", "title", "summary", "activation", "via")
    linked = [dict(row) for row in brought.join(info.drop("activation", "via"), on="id", how="left").iter_rows(named=True)]
    shown = [r.id for r in answer.results] + [p.id for r in answer.results for p in r.related]
    lines = links_section(shown, brought, bank.edges, bank.entries, max_lines=max_lines)
    return dataclasses.replace(answer, linked=linked, links=lines)


def related(bank: Bank, entry_id: str, *, depth: int = 2, limit: int = 10) -> pl.DataFrame:
    """What is connected to an entry, best first: id, title, score, path (the chain of links)."""
    _require(bank, entry_id)
    return related_entries(bank_adjacency(bank), entry_id, bank.entries, depth=depth, limit=limit)


def trace(bank: Bank, a: str, b: str, *, max_depth: int = 4) -> pl.DataFrame:
    """The shortest chain of links from ``a`` to ``b`` (either direction), as a frame of edges."""
    _require(bank, a, b)
    return shortest_trace(bank_adjacency(bank), a, b, max_depth=max_depth)


def communities(bank: Bank, *, method: str = "leiden", resolution: float = 1.0, seed: int = 0,
                trusted_only: bool = True) -> pl.DataFrame:
    """Communities ("constellations"): id, community, size, label (the members' distinctive terms).
    Only trusted edges link entries unless ``trusted_only=False`` (automatic links included): on a
    bank of few trusted edges most entries are isolates (community -1); :func:`edges_counted`
    says how many edges took part."""
    key = f"communities:{method}:{resolution}:{seed}:{trusted_only}"
    return bank.derived(key, lambda: find_communities(
        bank_igraph(bank, trusted_only=trusted_only), method=method, resolution=resolution, seed=seed, entries=bank.entries),
        on=("entries", "edges"))


def centrality(bank: Bank, *, betweenness_sample: int | None = None, trusted_only: bool = True) -> pl.DataFrame:
    """Per entry: degree, in/out degree, pagerank, betweenness, hub (the documented hub rule),
    over trusted edges only unless ``trusted_only=False`` (automatic links included)."""
    return bank.derived(f"centrality:{betweenness_sample}:{trusted_only}", lambda: centrality_scores(
        bank_igraph(bank, trusted_only=trusted_only), betweenness_sample=betweenness_sample), on=("entries", "edges"))


def edges_counted(bank: Bank, *, trusted_only: bool = True) -> dict:
    """How many of the bank's edges the graph analytics count: ``counted`` (the trusted ones with
    ``trusted_only``, else all), ``trusted``, ``automatic`` (the rest) and ``edges``.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> edges_counted(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    {'counted': 0, 'trusted': 0, 'automatic': 0, 'edges': 0, 'trusted_only': True}
    """
    edges = bank.edges
    trusted = int(edges["source"].is_in(sorted(TRUSTED_SOURCES)).sum()) if edges.height else 0
    return {"counted": trusted if trusted_only else edges.height, "trusted": trusted,
            "automatic": edges.height - trusted, "edges": edges.height, "trusted_only": trusted_only}


def workflow_holes(bank: Bank, *, lanes: bool = False) -> pl.DataFrame:
    """The holes in the bank's process flows, declared or inferred from ``precedes`` edges alone: id,
    title, flow, hole, severity, explanation, question, affects, declared. ``lanes=True``: a step in
    a BPMN pool needs a lane (by default its participant owns it)."""
    return find_holes(bank.entries, bank.edges, lanes=lanes)


def process_flows(bank: Bank) -> pl.DataFrame:
    """One row per process flow (declared or inferred): its start steps, end steps, steps, owners and holes."""
    return find_flows(bank.entries, bank.edges)
