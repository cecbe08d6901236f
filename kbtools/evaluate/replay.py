"""The replay: a query log run with folding on and off, every returned entry judged.

Each query runs once against the bank (pool of 20, no usage counted) and the same pool is answered
four ways: ``flat`` (the top-k), ``fold`` (results, folded pointers and neighbours), ``mmr``
(maximal marginal relevance, λ = 0.5, over the precombined entry vectors) and ``collapse`` (one
result per connected component, no dominance, no pointers: field collapsing). A judge scores every
entry an arm shows (results, pointers, neighbours), each (query, entry) once.

Metrics, as in the seed: share of queries carrying a pointer; share that gained at least one
judged-relevant entry the flat answer did not show; the average gain, split by queries whose pool
has at least one trusted edge among its members ("connected") and the rest ("sparse"); relevant
flat entries the folded answer lost (must be 0; the report says so loudly when not); pointer
precision; note coverage; and the same per edge source and per relation, so a bank owner sees which
source makes the noise.

>>> [a for a in REPLAY_ARMS]
['flat', 'fold', 'mmr', 'collapse']
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

from kbtools.model.config import QUERY_DEFAULTS
from kbtools.model.answer import Answer
from kbtools.errors import KbError, ValidationError
from kbtools.progress import Progress, progress_callback
from kbtools.evaluate.agents import agent_name
from kbtools.evaluate.hoplab import entry_text
from kbtools.evaluate.judges import GoldJudge, verdict
from kbtools.evaluate.report import ReplayReport
from kbtools.evaluate.intervals import mean_summary, proportion
from kbtools.evaluate.tasks import as_queries, queries_from_truth, read_queries
from kbtools.store.vectors import entry_vectors

__all__ = ["REPLAY_ARMS", "REPLAY_LABELS", "REPLAY_DEFAULTS", "run_replay", "query_outcome", "summarize_replay"]

#: The replay's arms, in report order.
REPLAY_ARMS: tuple[str, ...] = ("flat", "fold", "mmr", "collapse")
REPLAY_LABELS = {"flat": "flat top-k (folding off)", "fold": "folded (results + pointers + neighbours)",
                 "mmr": "MMR diversification (λ = 0.5)", "collapse": "plain collapse by connected component"}
#: Defaults of :func:`run_replay`.
REPLAY_DEFAULTS = {"k": QUERY_DEFAULTS.k, "pool": QUERY_DEFAULTS.pool, "protect": QUERY_DEFAULTS.protect,
                   "neighbors": QUERY_DEFAULTS.neighbors, "lam": 0.5, "threshold": 0.5}


def run_replay(bank, *, queries=None, judge=None, seed: int = 0, k: int = 8, pool: int = 20, lam: float = 0.5,
               threshold: float = 0.5, n: int = 60, progress: Progress = False) -> ReplayReport:
    """Replay ``queries`` on ``bank`` with folding on and off (and MMR, collapse); judge; report.

    ``queries``: ``None`` for the bank's ground-truth sidecar (or, without one, ``n`` queries mined
    from the bank's citations and supersessions: :func:`~kbtools.evaluate.tasks.mined_queries`),
    ``"mined"``, a path (:func:`read_queries`: one
    query per line, JSON lines, or a sidecar), or a list of strings / dicts with ``query`` and
    optionally ``relevant``. ``judge``: any ``judge(query, entry_id, entry_text) -> bool | float``
    (numbers count as relevant at ``threshold`` or above); default the gold labels the queries
    carry. ``seed`` drives the bootstrap intervals only. ``progress``: ``True`` for a ``tqdm.auto``
    bar, or a callback ``progress(done, total)`` (silent by default).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> print(kb.evaluate.run_replay(kb.open_bank("data/demo/engineering")).to_markdown())  # doctest: +SKIP
    """
    from kbtools.evaluate.baselines import collapse, mmr
    from kbtools.retrieval.folding import flat, fold_refilled

    progress = progress_callback(progress, "replay", unit="query")
    from kbtools.retrieval.index import combine
    from kbtools.retrieval.pipeline import edge_lookup
    from kbtools.retrieval.search import pool_fetcher, ranked_pool

    if not isinstance(k, int) or k < 1:
        raise ValidationError("k", k, "k is a positive integer")
    qs = _resolve_queries(bank, queries, n=n, seed=seed, k=k)
    judge = GoldJudge.from_queries(qs) if judge is None else judge
    if not callable(judge):
        raise ValidationError("judge", type(judge).__name__, "a judge is a callable (query, entry_id, entry_text)")
    lookup = edge_lookup(bank)
    entries = bank.entries
    texts = dict(zip(entries["id"].to_list(), entry_text(entries)))
    vec_ids, data = entry_vectors(bank)
    combined = combine(np.asarray(data)) if len(vec_ids) else np.zeros((0, 1), np.float32)
    row_of = {i: r for r, i in enumerate(vec_ids.tolist())}
    verdicts: dict[tuple[str, str], bool] = {}

    def is_relevant(query: str, entry_id: str) -> bool:
        key = (query, entry_id)
        if key not in verdicts:
            verdicts[key] = verdict(judge(query, entry_id, texts.get(entry_id, "")), threshold=threshold)
        return verdicts[key]

    outcomes = []
    for done, q in enumerate(qs, 1):
        candidates = ranked_pool(bank, q["query"], pool=max(pool, k))
        vecs = combined[[row_of[i] for i in candidates["id"].to_list()]] if candidates.height else combined[:0]
        answers = {
            "flat": flat(candidates, lookup, k=k, neighbors=0, query=q["query"]),
            "fold": fold_refilled(pool_fetcher(bank, q["query"], candidates), lookup, pool=max(pool, k), k=k,
                                  protect=REPLAY_DEFAULTS["protect"], neighbors=REPLAY_DEFAULTS["neighbors"],
                                  query=q["query"]),
            "mmr": mmr(candidates, vecs, k=k, lam=lam, query=q["query"]),
            "collapse": collapse(candidates, lookup, k=k, query=q["query"]),
        }
        edges_in_pool = _pool_edges(lookup, candidates["id"].to_list())
        outcomes.append(query_outcome(q, answers, edges_in_pool, lambda e, _q=q["query"]: is_relevant(_q, e)))
        if progress:
            progress(done, len(qs))
    params = {"k": k, "pool": max(pool, k), "protect": REPLAY_DEFAULTS["protect"],
              "neighbors": REPLAY_DEFAULTS["neighbors"], "lam": lam, "threshold": threshold, "seed": seed,
              "queries_from": _origin(queries), "bank": str(getattr(bank, "path", "")),
              "embedder": getattr(bank, "embedder_name", None), "judgements": len(verdicts)}
    headline, arms, by_source, by_relation = summarize_replay(outcomes, seed=seed)
    return ReplayReport(params=params, judge=agent_name(judge), queries=outcomes, headline=headline, arms=arms,
                        by_source=by_source, by_relation=by_relation)


def query_outcome(query: dict, answers: dict[str, Answer], pool_edges: int,
                  is_relevant: Callable[[str], bool]) -> dict:
    """One query's raw outcome: per arm the ids shown, judged relevant, gained and lost against
    the flat answer; the folded answer's pointers with their source, note and verdict.

    >>> from kbtools.model.answer import Answer, Pointer, Result
    >>> flat_ = Answer("q", [Result("a", 1), Result("b", 2)], folded=False)
    >>> fold_ = Answer("q", [Result("a", 1, related=[Pointer("b", "cites", "out", source="author")],
    ...                              neighbors=[Pointer("c", "cites", "out", "why", kind="neighbor", source="author")])])
    >>> out = query_outcome({"id": "q1", "query": "q"}, {"flat": flat_, "fold": fold_}, 1, lambda e: e != "a")
    >>> out["arms"]["fold"]["gained"], out["arms"]["fold"]["lost"], out["gained_by"]
    (['c'], [], {'c': 'author'})
    """
    shown = {arm: _shown(answer) for arm, answer in answers.items()}
    relevant = {arm: [i for i in ids if is_relevant(i)] for arm, ids in shown.items()}
    flat_relevant = set(relevant.get("flat", []))
    arms = {}
    for arm, ids in shown.items():
        present = set(ids)
        arms[arm] = {"shown": ids, "relevant": relevant[arm],
                     "gained": [i for i in relevant[arm] if i not in flat_relevant],
                     "lost": sorted(flat_relevant - present)}
    pointers = []
    source_of: dict[str, str] = {}
    for r in answers["fold"].results if "fold" in answers else []:
        for p in r.pointers():
            pointers.append({"id": p.id, "parent": r.id, "kind": p.kind, "relation": p.relation,
                             "source": p.source or "unknown", "note": bool(p.note and p.note.strip()),
                             "relevant": is_relevant(p.id)})
            source_of.setdefault(p.id, p.source or "unknown")
    gained_by = {i: source_of.get(i, "(result)") for i in arms.get("fold", {}).get("gained", [])}
    return {"id": query["id"], "query": query["query"], "connected": pool_edges > 0, "pool_edges": pool_edges,
            "arms": arms, "pointers": pointers, "gained_by": gained_by}


def summarize_replay(outcomes: Sequence[dict], *, seed: int = 0) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """(headline, arms, by source, by relation) from the raw query outcomes.

    >>> h, arms, src, rel = summarize_replay([])
    >>> h["queries"], h["lost"], src
    (0, 0, [])
    """
    n = len(outcomes)
    gains = [len(o["arms"]["fold"]["gained"]) for o in outcomes]
    pointers = [p for o in outcomes for p in o["pointers"]]
    headline = {
        "queries": n,
        "pointer_share": proportion(sum(bool(o["pointers"]) for o in outcomes), n),
        "gained_share": proportion(sum(g > 0 for g in gains), n),
        "gain": mean_summary(gains, seed=seed),
        "gain_connected": mean_summary([g for g, o in zip(gains, outcomes) if o["connected"]], seed=seed),
        "gain_sparse": mean_summary([g for g, o in zip(gains, outcomes) if not o["connected"]], seed=seed),
        "lost": sum(len(o["arms"]["fold"]["lost"]) for o in outcomes),
        "lost_entries": [{"query": o["id"], "id": i} for o in outcomes for i in o["arms"]["fold"]["lost"]],
        "pointers": len(pointers),
        "pointer_precision": proportion(sum(p["relevant"] for p in pointers), len(pointers)),
        "note_coverage": proportion(sum(p["note"] for p in pointers), len(pointers)),
    }
    present = [a for a in REPLAY_ARMS if any(a in o["arms"] for o in outcomes)] or list(REPLAY_ARMS)
    arms = []
    for arm in present:
        rows = [o["arms"][arm] for o in outcomes if arm in o["arms"]]
        arms.append({
            "arm": arm, "label": REPLAY_LABELS.get(arm, arm),
            "relevant": mean_summary([len(r["relevant"]) for r in rows], seed=seed),
            "gain": mean_summary([len(r["gained"]) for r in rows], seed=seed),
            "gained_share": proportion(sum(bool(r["gained"]) for r in rows), len(rows)),
            "lost": sum(len(r["lost"]) for r in rows),
            "shown": mean_summary([len(r["shown"]) for r in rows], seed=seed),
        })
    return headline, arms, _breakdown(outcomes, "source"), _breakdown(outcomes, "relation")


def _breakdown(outcomes: Sequence[dict], key: str) -> list[dict]:
    """Pointer precision, note coverage, queries carrying and entries gained per value of ``key``."""
    groups: dict[str, dict] = {}
    for o in outcomes:
        carried = set()
        for p in o["pointers"]:
            g = groups.setdefault(p[key], {"pointers": 0, "relevant": 0, "noted": 0, "queries": 0, "gained": 0})
            g["pointers"] += 1
            g["relevant"] += p["relevant"]
            g["noted"] += p["note"]
            carried.add(p[key])
        for value in carried:
            groups[value]["queries"] += 1
        if key == "source":
            for source in o["gained_by"].values():
                if source in groups:
                    groups[source]["gained"] += 1
        else:
            by_id = {p["id"]: p[key] for p in o["pointers"]}
            for gained in o["gained_by"]:
                if gained in by_id:
                    groups[by_id[gained]]["gained"] += 1
    return [{key: value, "pointers": g["pointers"], "precision": proportion(g["relevant"], g["pointers"]),
             "note_coverage": proportion(g["noted"], g["pointers"]), "queries": g["queries"], "gained": g["gained"]}
            for value, g in sorted(groups.items(), key=lambda kv: (-kv[1]["pointers"], kv[0]))]


def _shown(answer: Answer) -> list[str]:
    """Every id an answer shows, in reading order, once: results then their pointers."""
    seen: dict[str, None] = {}
    for r in answer.results:
        seen.setdefault(r.id)
        for p in r.pointers():
            seen.setdefault(p.id)
    return list(seen)


def _pool_edges(lookup, ids: list[str]) -> int:
    members = set(ids)
    incident = lookup.incident_of(ids)
    return sum(1 for i in ids for other, direction, _ in incident.get(i, ())
               if direction == "out" and other in members)


def _resolve_queries(bank, queries, *, n: int = 60, seed: int = 0, k: int = 8) -> list[dict]:
    from kbtools.demo.banks import read_truth, truth_path
    from kbtools.evaluate.tasks import mined_queries

    if queries is None:
        queries = "sidecar" if truth_path(bank.path).exists() else "mined"
    if queries == "mined":
        qs = mined_queries(bank, n=n, seed=seed, k=k)
    elif queries == "sidecar":
        qs = queries_from_truth(read_truth(bank))
    elif isinstance(queries, (str, os.PathLike)):
        qs = read_queries(queries)
    else:
        qs = as_queries(list(queries))
    if not qs:
        raise KbError("the replay needs at least one query")
    return qs


def _origin(queries) -> str:
    if queries is None or queries in ("sidecar", "mined"):
        return queries or "sidecar/mined"
    if isinstance(queries, (str, os.PathLike)):
        return str(queries)
    return "given"
