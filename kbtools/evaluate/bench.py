"""``kb bench``: the performance budgets (docs/performance.md) measured in one run, each figure beside a baseline from the
same run (a ratio, so a slower or faster machine does not change the verdict much).

Sections: fold + neighbours over a pool of 20; opening a bank; a one-entry write at scale; query
latency at 10k (exact) and 100k (HNSW, with its recall@8 against exact) with the query embedded and
with embedding; index build; graph analytics (igraph view, PageRank, Leiden, betweenness, the
recall expansion); write-time linking and connect throughput; peak memory.

Benchmarks report; tests never assert wall-clock times.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from kbtools.demo import synthetic_bank
from kbtools.linker import TermStats, plan_connect, plan_links
from kbtools.model.schema import SCHEMAS
from kbtools.ops.embedding import embed_bank
from kbtools.ops.interchange import import_frames
from kbtools.ops.link_context import (NEIGHBOURS_FLAT_BELOW, faiss_threads, linker_settings, linker_vectors,
                                      neighbour_index, new_neighbour_index, term_stats)
from kbtools.ops.maintenance import connect_bank
from kbtools.ops.writes import report_learning
from kbtools.retrieval.embedders import get_embedder
from kbtools.retrieval.folding import fold
from kbtools.store.bank import Bank, create_bank, open_bank
from kbtools.store.segments import segment_files
from kbtools.store.vectors import entry_vectors

__all__ = ["run_bench", "format_bench", "default_write_rows", "BUDGETS"]

#: The performance budgets, as docs/performance.md states them (milliseconds unless the unit says otherwise).
BUDGETS = {
    "fold_p50_ms": 0.2,
    "query_10k_exact_p50_ms": 2.0,
    "query_100k_approx_p50_ms": 5.0,
    "link_one_100k_ms": 5.0,
    "open_100k_s": 2.0,
}


def _timeit(fn: Callable, n: int, warmup: int = 2) -> np.ndarray:
    for _ in range(warmup):
        fn()
    out = np.empty(n)
    for i in range(n):
        t = time.perf_counter()
        fn()
        out[i] = (time.perf_counter() - t) * 1000
    return out


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class BenchRows:
    """The rows of one bench run; ``add`` logs each as it is measured."""

    def __init__(self, log):
        self.rows: list[dict] = []
        self.log = log

    def add(self, section, metric, value, unit="ms", *, baseline=None, baseline_value=None, budget=None, note=""):
        row = {"section": section, "metric": metric, "value": round(float(value), 4), "unit": unit,
               "baseline": baseline, "baseline_value": None if baseline_value is None else round(float(baseline_value), 4),
               "ratio": None if not baseline_value else round(float(value) / float(baseline_value), 4),
               "budget": budget, "within_budget": None if budget is None else bool(value <= budget), "note": note}
        self.rows.append(row)
        shown = f"{row['value']:g} {unit}"
        if baseline_value is not None:
            shown += f"  (baseline {baseline}: {row['baseline_value']:g} {unit}, ratio {row['ratio']:g})"
        if budget is not None:
            shown += f"  budget {budget:g}: {'ok' if row['within_budget'] else 'OVER'}"
        self.log(f"  {section:>10} | {metric}: {shown}")


def _bench_fold(rows: BenchRows, seed: int) -> None:
    from kbtools.demo.banks import DEMO_DIR
    from kbtools.retrieval.pipeline import edge_lookup

    bank = open_bank(DEMO_DIR / "engineering")
    rng = np.random.default_rng(seed)
    edges = bank.edges
    touched = pl.concat([edges["src"], edges["dst"]]).unique().to_list()
    ids = bank.entries["id"].to_list()
    titles = bank.entries.select("id", "title", "summary")
    pools = []
    for _ in range(200):  # pools of 20 rich in edges, like real pools of one topic
        pick = list(rng.choice(touched, 12, replace=False)) + list(rng.choice(ids, 8, replace=False))
        pick = list(dict.fromkeys(pick))[:20]
        pools.append(pl.DataFrame({"id": pick, "score": np.linspace(1, 0.5, len(pick))}).join(titles, on="id", how="left"))
    lookup = edge_lookup(bank)
    it = iter(range(10**9))
    fast = _timeit(lambda: fold(pools[next(it) % 200], lookup, k=8), 400)
    it2 = iter(range(10**9))
    naive = _timeit(lambda: fold(pools[next(it2) % 200], edges, k=8), 100)
    rows.add("fold", "fold + neighbours, pool 20, p50", np.median(fast), baseline="edge frame per call",
             baseline_value=np.median(naive), budget=BUDGETS["fold_p50_ms"],
             note="the seed's service spends 40-100 ms")
    rows.add("fold", "fold + neighbours, pool 20, p99", np.percentile(fast, 99))


def embedder_quality(*, log: Callable = print) -> list[dict]:
    """Retrieval quality of each embedder on the demo bank's sidecar queries: recall@8 of the gold
    relevant entries, and overlap@8 with the full MiniLM model's top-8 (the fast mode's fidelity)."""
    from kbtools.demo.banks import DEMO_DIR, read_truth
    from kbtools.retrieval.search import ranked_pool

    truth = read_truth(DEMO_DIR / "engineering")
    out, tops = [], {}
    with tempfile.TemporaryDirectory(prefix="kb-emb-") as tmp:
        for name in ("minilm-int8", "minilm-static", "hashing-char"):
            shutil.copytree(DEMO_DIR / "engineering", Path(tmp) / name)
            bank = open_bank(Path(tmp) / name)
            t = time.perf_counter()
            embed_bank(bank, embedder=name)
            embed_s = time.perf_counter() - t
            recall, top = [], []
            for q in truth["queries"]:
                ids = ranked_pool(bank, q["query"], pool=8)["id"].to_list()
                top.append(ids)
                rel = set(q["relevant"])
                recall.append(len(rel & set(ids)) / max(len(rel), 1))
            tops[name] = top
            overlap = np.mean([len(set(a) & set(b)) / 8 for a, b in zip(top, tops["minilm-int8"])])
            out.append({"embedder": name, "recall_at_8": round(float(np.mean(recall)), 3),
                        "overlap_at_8_with_minilm": round(float(overlap), 3), "embed_s": round(embed_s, 1),
                        "queries": len(truth["queries"])})
            log(f"  {name}: recall@8 {out[-1]['recall_at_8']}, overlap@8 with MiniLM {out[-1]['overlap_at_8_with_minilm']}")
    return out


def _synthetic_store(n: int, root: Path, seed: int, log):

    t = time.perf_counter()
    demo = synthetic_bank(entries=n, seed=seed)
    gen = time.perf_counter() - t
    bank = create_bank(root / f"s{n}", embedder=None)
    t = time.perf_counter()
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    imp = time.perf_counter() - t
    bank.compact(sweep_age=0)
    log(f"  generated {n} entries in {gen:.1f} s, imported in {imp:.1f} s")
    return bank, imp


def _bench_store(rows: BenchRows, bank, n: int) -> None:

    raw = bank.path / segment_files(bank)["entries"][0]
    opened = _timeit(lambda: open_bank(bank.path).entries.height, 3, warmup=1)
    base = _timeit(lambda: pl.read_parquet(raw).height, 3, warmup=1)
    rows.add(f"store {n // 1000}k", "open bank (all tables merged)", np.median(opened) / 1000, "s",
             baseline="read_parquet of the entries file", baseline_value=np.median(base) / 1000,
             budget=BUDGETS["open_100k_s"] if n >= 100_000 else None)
    size = raw.stat().st_size
    before = {p for p in bank.path.rglob("*.parquet")}
    report_learning(bank, content="One more fact about the cache warmer.", actor="bench", link=False)
    written = sum(p.stat().st_size for p in bank.path.rglob("*.parquet") if p not in before)
    rows.add(f"store {n // 1000}k", "bytes written to add one entry", written, "bytes",
             baseline="entries table size", baseline_value=size)


def _bench_query(rows: BenchRows, bank, n: int, log) -> None:
    from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, recall_at_k
    from kbtools.retrieval.search import bank_index, ranked_pool

    t = time.perf_counter()
    embed_bank(bank, embedder="minilm-static")
    rows.add(f"query {n // 1000}k", "embed entries (fast mode, 4 dims)", (time.perf_counter() - t) * 1000 / n, "ms/entry")
    emb = get_embedder("minilm-static")
    queries = bank.entries.sample(200, seed=1)["title"].to_list()
    qv = emb.encode(queries)
    ids, data = entry_vectors(bank)
    data = np.asarray(data)
    kind = "flat" if n < 50_000 else "hnsw"
    t = time.perf_counter()
    bank_index(bank, kind="flat")
    rows.add(f"query {n // 1000}k", "build exact index", (time.perf_counter() - t) * 1000, "ms")
    if kind != "flat":
        t = time.perf_counter()
        bank_index(bank, kind=kind)
        rows.add(f"query {n // 1000}k", f"build {kind} index", (time.perf_counter() - t) * 1000, "ms")
    i = iter(range(10**9))
    lat = _timeit(lambda: ranked_pool(bank, "q", query_vector=qv[next(i) % 200], index=kind), 200)
    w = np.array([DEFAULT_WEIGHTS[d] for d in DIMENSIONS], dtype=np.float32)
    j = iter(range(10**9))

    def brute():
        q = qv[next(j) % 200]
        s = sum(w[d] * (data[:, d, :] @ q) for d in range(len(DIMENSIONS)))
        np.argpartition(-s, 20)[:20]

    base = _timeit(brute, 30)
    budget = BUDGETS["query_10k_exact_p50_ms"] if n < 50_000 else BUDGETS["query_100k_approx_p50_ms"]
    rows.add(f"query {n // 1000}k", f"query, embedded, {kind}, p50", np.median(lat), baseline="numpy scan of 4 dimensions",
             baseline_value=np.median(base), budget=budget)
    rows.add(f"query {n // 1000}k", f"query, embedded, {kind}, p99", np.percentile(lat, 99))
    if kind != "flat":
        exact = bank_index(bank, kind="flat").search(qv, 8)[1]
        approx = bank_index(bank, kind=kind).search(qv, 8)[1]
        rows.add(f"query {n // 1000}k", f"{kind} recall@8 against exact", recall_at_k(approx, exact), "share")
    k = iter(range(10**9))
    full = _timeit(lambda: ranked_pool(bank, queries[next(k) % 200], index=kind), 100)
    rows.add(f"query {n // 1000}k", "query with embedding (fast mode), p50", np.median(full))
    mini = get_embedder("minilm-int8")
    m = iter(range(10**9))
    enc = _timeit(lambda: mini.encode([queries[next(m) % 200]]), 30)
    rows.add(f"query {n // 1000}k", "MiniLM int8 embedding of one query, p50", np.median(enc))


def _bench_graph(rows: BenchRows, bank, n: int) -> None:
    from kbtools.graph.activation import expand
    from kbtools.graph.community import find_communities
    from kbtools.graph.hubs import centrality_scores
    from kbtools.graph.build import Adjacency, to_igraph

    tag = f"graph {n // 1000}k"
    t = time.perf_counter()
    g = to_igraph(bank.entries, bank.edges)
    rows.add(tag, "build igraph view", (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    g.pagerank(directed=False)
    rows.add(tag, "whole-graph PageRank", (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    find_communities(g, entries=bank.entries)
    rows.add(tag, "Leiden (modularity) + labels", (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    centrality_scores(g)
    rows.add(tag, "centrality (betweenness sampled above 5k)", (time.perf_counter() - t) * 1000)
    adj = Adjacency.build(bank.entries, bank.edges)
    rng = np.random.default_rng(0)
    ids = bank.edges["src"].unique().to_list()
    seeds = [dict(zip(rng.choice(ids, 8, replace=False), np.linspace(1, 0.5, 8))) for _ in range(100)]
    i = iter(range(10**9))
    lat = _timeit(lambda: expand(seeds[next(i) % 100], adj, bank.entries, links=3), 100)
    rows.add(tag, "recall expansion (PPR over <= 40 entries), p50", np.median(lat))


def _bench_linker(rows: BenchRows, bank, n: int) -> None:
    for section, metric, value, unit, extra in bench_linking(bank, n):
        rows.add(section, metric, value, unit, **extra)


def run_bench(*, sizes=(10_000, 100_000), seed: int = 7, log: Callable = print, workdir: str | None = None,
              extra: tuple = (), only: str | None = None) -> dict:
    """Measure every budget; returns {"rows": [...], "machine": {...}, "peak_memory_mb": ...}.
    ``extra``: more sections, each ``fn(rows: BenchRows)`` (the faces add their own, e.g. the views);
    ``only`` runs one section alone: ``"linker"`` (synthetic banks of each size, no store) or
    ``"serve"`` (:mod:`kbtools.evaluate.bench_serve`)."""
    rows = BenchRows(log)
    started = time.perf_counter()
    if only not in (None, "linker", "serve"):
        from kbtools.errors import ValidationError

        raise ValidationError("only", only, "must be 'linker' or 'serve' (or nothing: every section)")
    if only == "serve":
        from kbtools.evaluate.bench_serve import bench_serve

        root = Path(workdir or tempfile.mkdtemp(prefix="kb-bench-"))
        try:
            bench_serve(rows, root, sizes=(min(sizes), max(sizes)) if len(sizes) > 1 else (10_000, sizes[0]),
                        seed=seed, log=log)
        finally:
            if workdir is None:
                shutil.rmtree(root, ignore_errors=True)
        return {"rows": rows.rows, "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()},
                "peak_memory_mb": round(_maxrss_mb(), 1), "duration_s": round(time.perf_counter() - started, 1)}
    if only == "linker":
        for n in sizes:
            log(f"linker rows at {n} entries")
            _bench_linker(rows, None, n)
        return {"rows": rows.rows, "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()},
                "peak_memory_mb": round(_maxrss_mb(), 1), "duration_s": round(time.perf_counter() - started, 1)}
    log("fold")
    _bench_fold(rows, seed)
    log("embedders on the demo sidecar")
    for q in embedder_quality(log=lambda m: None):
        rows.add("embedders", f"{q['embedder']} recall@8 of gold (demo sidecar)", q["recall_at_8"], "share",
                 note=f"overlap@8 with MiniLM's top-8 {q['overlap_at_8_with_minilm']}; {q['queries']} queries")
    root = Path(workdir or tempfile.mkdtemp(prefix="kb-bench-"))
    try:
        for n in sizes:
            log(f"bank of {n} entries")
            rss0 = _maxrss_mb()
            bank, _ = _synthetic_store(n, root, seed, log)
            _bench_store(rows, bank, n)
            _bench_query(rows, bank, n, log)
            _bench_graph(rows, bank, n)
            _bench_linker(rows, bank, n)
            rows.add(f"memory {n // 1000}k", "peak resident memory so far", _maxrss_mb(), "MB",
                     note=f"{_maxrss_mb() - rss0:.0f} MB more than before this size")
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    for section in extra:
        section(rows)
    return {
        "rows": rows.rows,
        "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "peak_memory_mb": round(_maxrss_mb(), 1),
        "duration_s": round(time.perf_counter() - started, 1),
    }


def format_bench(report: dict) -> str:
    """The report as a markdown table."""
    lines = ["| section | metric | value | baseline | ratio | budget |", "|---|---|---|---|---|---|"]
    for r in report["rows"]:
        base = f"{r['baseline_value']:g} {r['unit']} ({r['baseline']})" if r["baseline_value"] is not None else ""
        budget = "" if r["budget"] is None else f"{r['budget']:g} {'✓' if r['within_budget'] else '✗'}"
        lines.append(f"| {r['section']} | {r['metric']} | {r['value']:g} {r['unit']} | {base} | {r['ratio'] or ''} | {budget} |")
    lines.append(f"\npeak memory {report['peak_memory_mb']} MB; {report['machine']['cpus']} CPUs; took {report['duration_s']} s")
    return "\n".join(lines)


def bench_linking(bank: Bank | None, n: int):
    """Rows for ``kb bench``: term statistics (build, extend on append), write-time linking of one
    new entry (without and with 384-d vectors and the neighbour index), connect throughput (the
    whole bank lexically at 2k and 20k; with vectors, the newest entries of the bank, the whole
    bank, and ``kb.connect`` as a job on the bank written to disk), and the
    query index after a deletion; each speed row beside an exact numpy scan of the same bank's
    vectors in the same run (``bank`` is unused: the banks are synthetic, seed 11)."""

    rows = []
    sizes = [2_000, 20_000] if n < 50_000 else [n]
    for size in sizes:
        demo = synthetic_bank(entries=size, seed=11)
        ents = demo.entries.with_columns(pl.lit(None).cast(SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
        tag = f"linker {size // 1000}k"
        vectors = text_vectors(ents)
        k = iter(range(10**9))
        scan = float(np.median(_timeit(lambda: _numpy_scan(vectors, next(k) % size, 20), 30)))
        base = {"baseline": "exact numpy scan of one entry", "baseline_value": scan}
        t = time.perf_counter()
        stats = TermStats.build(ents.head(size - 100))
        head_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        stats = stats.extend(ents)
        extend_ms = (time.perf_counter() - t) * 1000
        rows.append((tag, "term statistics build", head_ms, "ms",
                     {**base, "note": f"identifiers on; the first {size - 100:,} entries (target: under 5 s at 100k)"}))
        rows.append((tag, "term statistics extended by 100 appended entries", extend_ms, "ms", base))
        newest = ents.sort("created_at")["id"].tail(20).to_list()
        lat = []
        for eid in newest:
            t = time.perf_counter()
            plan_links(eid, ents, demo.edges, demo.triples, stats=stats)
            lat.append((time.perf_counter() - t) * 1000)
        rows.append((tag, "part: link one new entry (plan_links), p50", float(np.median(lat)), "ms",
                     {"budget": 5.0 if size >= 100_000 else None, "note": "the seed's linker: ~20 ms at 2k on SQLite"}))
        for kind, vecs in (("text", vectors), ("random", _random_vectors(size))):
            index = new_neighbour_index(vecs)
            faiss_threads(max(1, min(8, os.cpu_count() or 1)))
            t = time.perf_counter()
            index.add(vecs)
            built = time.perf_counter() - t
            faiss_threads(1)
            if kind == "text" and size >= NEIGHBOURS_FLAT_BELOW:
                rows.append(_bench_index_cache(tag, index, built))
            rows.append(_bench_with_vectors(tag, ents, demo, stats, newest, size, vecs, index, base, kind))
            rows.append(_bench_connect_vectors(tag, ents, demo, stats, vecs, index, scan, kind))
            if kind == "text":
                rows.append(_bench_connect_whole(tag, ents, demo, stats, vecs, index, scan))
            del index
        rows.extend(_bench_connect_job(tag, ents, demo, scan, size))
        if size <= 20_000:
            t = time.perf_counter()
            plan = plan_connect(ents, demo.edges, demo.triples, stats=stats)
            secs = time.perf_counter() - t
            auto = plan.add.filter(pl.col("source") == "auto")
            deg = pl.concat([auto["src"], auto["dst"]]).value_counts()["count"] if auto.height else pl.Series([0])
            rows.append((tag, "connect throughput", size / secs, "entries/s",
                         {"note": f"{auto.height} links in {secs:.1f} s; links per entry mean {2 * auto.height / size:.2f}, "
                                  f"max {int(deg.max())}; the seed: 2,000 memories -> 10,000 links in 66 s"}))
        rows.extend(_bench_deletion(tag, ents, vectors, size))
    return rows


def _bench_index_cache(tag, index, built_s: float):
    """The linker's neighbour index read back from a file as a bank's ``cache/`` keeps it (what a new
    process does, see ``link_context.neighbour_index``), beside building it."""
    import faiss

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as tmp:
        path = os.path.join(tmp, "neighbours.faiss")
        faiss.write_index(index, path)
        t = time.perf_counter()
        faiss.read_index(path)
        read_s = time.perf_counter() - t
        mb = os.path.getsize(path) / 1e6
    return (tag, "neighbour index read from the bank's cache", read_s, "s",
            {"baseline": "building it", "baseline_value": built_s,
             "note": f"{type(index).__name__}, {mb:,.0f} MB on disk; a new process (a scheduled connect, a "
                     "server's first linked add) reads it and adds the entries appended since"})


def _numpy_scan(vectors: np.ndarray, row: int, k: int) -> np.ndarray:
    scores = vectors @ vectors[row]
    return np.argpartition(-scores, k)[:k]


_VECTORS = {
    "text": "384-d vectors of the entries' own text (the hashing-char embedder)",
    "random": "random unit 384-d vectors, the worst case: no entry has near neighbours",
}


def text_vectors(ents: pl.DataFrame) -> np.ndarray:
    """384-d ``hashing-char`` vectors of the entries' content (title, summary and text): vectors with
    the neighbourhoods a bank's text gives, from the project's own embedder, in seconds."""
    from kbtools.retrieval.embedders import HashingEmbedder
    from kbtools.retrieval.search import entry_texts

    return HashingEmbedder(384).encode(entry_texts(ents)["content"])


def _random_vectors(size: int) -> np.ndarray:
    vectors = np.random.default_rng(0).normal(size=(size, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _bench_with_vectors(tag, ents, demo, stats, newest, size, vectors, index, base, kind: str = "text"):
    """Linking one new entry with 384-d vectors (``_VECTORS[kind]``) and the neighbour index (flat or
    HNSW), p50 over three passes of the newest entries after a first pass."""
    lat = []
    for eid in newest * 4:
        t = time.perf_counter()
        plan_links(eid, ents, demo.edges, demo.triples, vectors=vectors, neighbors=index, stats=stats)
        lat.append((time.perf_counter() - t) * 1000)
    index_kind = "flat" if size < NEIGHBOURS_FLAT_BELOW else "HNSW"
    name = "part: link one new entry with vectors (plan_links), p50" + ("" if kind == "text" else f" ({kind} vectors)")
    return (tag, name, float(np.median(lat[len(newest):])), "ms",
            {**base, "budget": 3.0 if size >= 100_000 else None, "note": f"{_VECTORS[kind]}, {index_kind} neighbour index"})


def _bench_connect_vectors(tag, ents, demo, stats, vectors, index, scan_ms, kind: str = "text", count: int = 2_000):
    """connect with vectors (``_VECTORS[kind]``) and the neighbour index over the bank's newest
    ``count`` entries (the others created earlier: each sees the whole bank), in entries per second,
    beside the rate of a bare exact numpy scan per entry."""
    ids = ents.sort("created_at")["id"].tail(count).to_list()
    plan, secs = _timed_connect(ents, demo, stats, vectors, index, ids)
    name = f"connect throughput with vectors (newest {len(ids):,})" + ("" if kind == "text" else f", {kind} vectors")
    return (tag, name, len(ids) / secs, "entries/s",
            {"baseline": "exact numpy scan, one entry at a time", "baseline_value": 1000.0 / scan_ms,
             "note": f"{plan.report['links']} links in {secs:.1f} s; {_VECTORS[kind]}; "
                     "target 5,000/s at 100k"})


def _timed_connect(ents, demo, stats, vectors, index, ids):
    """``plan_connect`` of ``ids`` (None: every entry never linked) with the neighbour index and
    faiss's threads as the connect job sets them, and its seconds. The statistics are those a new
    process reads from the bank's cache (``TermStats.from_parts``, not timed): what a connect builds
    on them (the whole frame's candidate lists, the rare terms' postings, the totals) is timed, as
    ``kb connect`` pays it, not left over from the rows timed before."""
    stats = TermStats.from_parts(ents, stats.parts(), stats.anchors, known_entities=stats.known_entities,
                                 settings=stats.settings)
    faiss_threads(max(1, min(8, os.cpu_count() or 1)))  # as the connect job searches a chunk
    try:
        t = time.perf_counter()
        plan = plan_connect(ents, demo.edges, demo.triples, ids=ids, vectors=vectors, neighbors=index, stats=stats)
        return plan, time.perf_counter() - t
    finally:
        faiss_threads(1)


def _bench_connect_whole(tag, ents, demo, stats, vectors, index, scan_ms):
    """connect with vectors over the whole bank (every entry, oldest first, none linked before: an
    entry sees those before it, and one that sees under a quarter of the index is scanned exactly),
    in entries per second, beside the rate of a bare exact numpy scan per entry.

    >>> from kbtools.demo.banks import synthetic_bank
    >>> from kbtools.linker import TermStats
    >>> from kbtools.ops.link_context import new_neighbour_index
    >>> demo = synthetic_bank(entries=300, seed=11)
    >>> vecs = _random_vectors(300)
    >>> index = new_neighbour_index(vecs); index.add(vecs)
    >>> row = _bench_connect_whole("linker 0k", demo.entries, demo, TermStats.build(demo.entries), vecs, index, 1.0)
    >>> row[1], row[3], row[2] > 0
    ('connect throughput with vectors (the whole bank)', 'entries/s', True)
    """
    plan, secs = _timed_connect(ents, demo, stats, vectors, index, None)
    report = plan.report
    return (tag, "connect throughput with vectors (the whole bank)", report["entries"] / secs, "entries/s",
            {"baseline": "exact numpy scan, one entry at a time", "baseline_value": 1000.0 / scan_ms,
             "note": f"{report['entries']:,} entries, {report['links']:,} links in {secs:.1f} s, "
                     f"{_VECTORS['text']}; "
                     "target 5,000/s at 100k"})


def _bench_connect_job(tag, ents, demo, scan_ms, size):
    """``kb.connect``, the job a schedule runs, over a bank of these entries on disk (none linked,
    their texts embedded with ``hashing-char``): a new ``Bank`` opened where a run before left the
    linker's caches (term statistics, neighbour index), the whole job timed: the caches read back,
    the frame's lists, the linking and a commit per 2,000 entries. Then, on the bank the job left,
    the write an agent calls (:func:`default_write_rows`)."""
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as tmp:
        bank = create_bank(Path(tmp) / "connect", embedder=None)
        import_frames(bank, entries=ents, edges=demo.edges, guard=False)
        embed_bank(bank, embedder="hashing-char", actor="bench")
        term_stats(bank, linker_settings(bank))
        neighbour_index(bank, linker_vectors(bank))  # written to the bank's cache/
        fresh = open_bank(bank.path)
        t = time.perf_counter()
        report = connect_bank(fresh)
        secs = time.perf_counter() - t
        job = (tag, "kb.connect, the whole job (the bank on disk, its caches warm)", report["entries"] / secs, "entries/s",
               {"baseline": "exact numpy scan, one entry at a time", "baseline_value": 1000.0 / scan_ms,
                "note": f"{report['entries']:,} entries, {report['links_made']:,} links in {secs:.1f} s; "
                        "entries embedded with hashing-char; target 5,000/s at 100k"})
        return [job, *default_write_rows(tag, fresh, size)]


#: Writes of each kind the default-write rows time (after two of each, untimed)
WRITES = 20


def default_write_rows(tag, bank: Bank, size: int):
    """The verb a write-time link comes from: ``kb.report_learning`` with the linker (the default)
    and without it, alternated on the connected bank on disk, each write durable and embedded; the
    linking's cost to the user is the difference of their medians (the row the linking goal reads;
    ``plan_links`` above is one part of it)."""
    took: dict[bool, list[float]] = {True: [], False: []}
    for i in range(2 + WRITES):
        for linked in (True, False):
            t = time.perf_counter()
            report_learning(bank, content=f"Bench write {i}: pump {i % 7} on line {i % 3} faults with E-{100 + i} "
                                          "after the encoder cable comes loose.", actor="bench", link=linked)
            if i >= 2:
                took[linked].append((time.perf_counter() - t) * 1000)
    on, off = float(np.median(took[True])), float(np.median(took[False]))
    edges = bank.edges.height
    return [
        (tag, "kb.report_learning with the linker (the default write), p50", on, "ms",
         {"baseline": "the same write with link=False", "baseline_value": off,
          "note": f"alternated, {WRITES} of each, on the connected bank ({edges:,} edges); durable, embedded"}),
        (tag, "linking one new entry, on the verb: that write less the unlinked one", on - off, "ms",
         {"budget": 3.0 if size >= 100_000 else None,
          "note": "what an agent's write pays for its links; the plan_links rows time one part of it"}),
    ]


def _bench_deletion(tag, ents, vectors, size):
    """The query index after one entry is deleted: masked in place (``grown_index``) against a full
    rebuild of the same kind (HNSW from 50k entries, flat below), and a masked search's p50."""
    from kbtools.retrieval.index import DEFAULT_WEIGHTS, VectorIndex
    from kbtools.retrieval.search import grown_index

    kind = "hnsw" if size >= 50_000 else "flat"
    ids = np.asarray(ents["id"].to_list())
    threads = max(1, min(8, os.cpu_count() or 1))
    t = time.perf_counter()
    index = VectorIndex.build(ids.tolist(), vectors, kind=kind, threads=threads)
    rebuild_ms = (time.perf_counter() - t) * 1000
    index.segments = ["bench"]
    live = np.ones(size, bool)
    live[size // 2] = False
    nothing_new = np.broadcast_to(vectors[:1, None, :], (size - 1, 4, vectors.shape[1]))  # no row is added
    t = time.perf_counter()
    grown = grown_index(index, ["bench"], ids[live], nothing_new, DEFAULT_WEIGHTS)
    masked_ms = (time.perf_counter() - t) * 1000
    assert grown is index and index.n_dead == 1
    q = iter(range(10**9))
    lat = _timeit(lambda: index.search(vectors[next(q) % size][None], 8), 50)
    return [(tag, f"query index after a deletion ({kind})", masked_ms, "ms",
             {"baseline": "full rebuild", "baseline_value": rebuild_ms,
              "note": f"masked in place, rebuilt past 20 % dead rows; masked search p50 {np.median(lat):.2f} ms"})]
