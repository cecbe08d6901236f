"""``kb bench --only serve``: kbtools served like an embedded database, timed through the verbs a
user calls, each figure as a ratio in one run: ``kb.report_learning`` at 10k vs 100k (no linking,
and with the write-time linker), ``kb.query(bank, text)`` folded with the bank's embedder (steady,
and the first one after a report), ``open_bank`` + first ``kb.query`` in a fresh process at 10k vs
100k and that process's peak memory against the vectors as stored, one ``query_knowledge_bank``
round trip through ``kb mcp`` over stdio with the real MCP client, disk; beside them the parts
(``ranked_pool`` with the vector given, the fold over its pool), personalized PageRank (kbtools vs
igraph's PRPACK) and fold at 2k and 20k. The peers (LanceDB, Chroma, DuckDB + vss) are measured
by ``kb bench --peers`` (:mod:`kbtools.evaluate.bench_peers`) on the same kind of bank.

Banks are synthetic (``synthetic_bank``) with random unit 384-d vectors recorded under the
hashing embedder, so that an add embeds its entry (cheaply) inside its write, as a real add does,
and a query embeds its text with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from kbtools.demo import synthetic_bank
from kbtools.model.plan import Plan, VectorRows
from kbtools.errors import ValidationError
from kbtools.ops.embedding import embed_bank
from kbtools.ops.interchange import import_frames
from kbtools.ops.writes import report_learning
from kbtools.retrieval.index import index_kind
from kbtools.retrieval.search import bank_index, ranked_pool, text_hashes
from kbtools.store.bank import create_bank, open_bank
from kbtools.store.vectors import vector_segments

__all__ = ["bench_serve", "serve_bank"]


def serve_bank(root: Path, n: int, seed: int, *, vectors: str = "random"):
    """A synthetic bank of ``n`` entries under ``root`` under the hashing embedder (an add embeds
    its text, cheaply), compacted. ``vectors="random"``: random unit 384-d vectors, the worst case
    for an approximate index (its recall says little); ``"text"``: the entries' own texts embedded
    with that embedder, so neighbours mean something and recall can be read beside the speed."""
    if vectors not in ("random", "text"):
        raise ValidationError("vectors", vectors, "vectors are random or text")
    demo = synthetic_bank(entries=n, seed=seed)
    bank = create_bank(root / f"serve{n}", embedder=None)
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    if vectors == "text":
        embed_bank(bank, embedder="hashing-char", actor="bench")
    else:
        rng = np.random.default_rng(seed)
        v = rng.normal(size=(n, 4, 384)).astype(np.float32)
        v /= np.linalg.norm(v, axis=2, keepdims=True)
        e = bank.entries
        bank.apply(Plan(vectors=VectorRows(e["id"].to_numpy(), v, "hashing-char", text_hashes(e)),
                        settings={"embedder": "hashing-char"}), actor="bench", reason="vectors")
    bank.compact(sweep_age=0)
    return bank


def _disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


_COLD = """
import json, resource, sys, time
t0 = time.perf_counter()
import kbtools as kb
bank = kb.open_bank(sys.argv[1], readonly=True)
kb.query(bank, "why does the warm pool drain at night", index=sys.argv[2])
first = time.perf_counter() - t0
for i in range(50):
    kb.query(bank, f"which shard holds tenant {i}", index=sys.argv[2])
# VmHWM: the peak of this process alone (ru_maxrss would include the parent's peak before exec)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")]
rss = int(hwm[0].split()[1]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first_s": first, "rss_mb": rss}))
"""


def _cold(path: Path, kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _COLD, str(path), kind], capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _adds(bank, n: int) -> list[float]:
    lat = []
    for i in range(n):
        t = time.perf_counter()
        report_learning(bank, content=f"Bench fact {i}: the warm pool drains at {i} am.", actor="bench", link=False)
        lat.append((time.perf_counter() - t) * 1000)
    return lat


def _linked_adds(bank, n: int) -> tuple[float, list[float]]:
    """(seconds of the first add with linking, which builds the linker's caches, then p50 ms of
    ``n`` more): the write-time linker as an agent meets it (term statistics, content vectors and
    their neighbour index grown by each add, the links committed with the entry)."""
    def add(i):
        report_learning(bank, content=f"Pump {i} on line {i % 7} keeps faulting with error E-{i}; "
                                      f"the valve on press {i % 5} leaks.", actor="bench")

    t = time.perf_counter()
    add(0)
    first = time.perf_counter() - t
    lat = []
    for i in range(1, n + 1):
        t = time.perf_counter()
        add(i)
        lat.append((time.perf_counter() - t) * 1000)
    return first, lat


def _queries(bank, kind: str, rng) -> dict:
    """p50 ms of what a user calls, ``kb.query(bank, text)`` folded and embedded with the bank's
    embedder: steady, and the first query after each ``report_learning(..., link=False)`` and
    after each linked one (the default); beside
    them the parts: ``ranked_pool`` with the vector given, and the fold over its pool alone."""
    from kbtools.retrieval.folding import fold
    from kbtools.retrieval.pipeline import edge_lookup, query

    # every query is asked once: the titles of entries drawn at random (a repeated or near-repeated
    # query would read the display records and pools an earlier one left in memory); the steady
    # queries come first and then one before each write, so that a query after a write is compared
    # with queries of a process as warm as its own (the memory-mapped index's pages faulted in)
    titles = bank.entries["title"].to_list()
    asked = iter(titles[i] for i in rng.choice(len(titles), size=min(85, len(titles)), replace=False))
    for _ in range(5):
        query(bank, next(asked, "warm up"), index=kind)
    steady, pools, folds = [], [], []

    def timed_query() -> float:
        t = time.perf_counter()
        query(bank, next(asked, "which shard holds the tenant"), index=kind)
        return (time.perf_counter() - t) * 1000

    for q in rng.normal(size=(40, 384)).astype(np.float32):
        steady.append(timed_query())
        t = time.perf_counter()
        pool = ranked_pool(bank, "q", query_vector=q, index=kind)
        pools.append((time.perf_counter() - t) * 1000)
        lookup = edge_lookup(bank)
        t = time.perf_counter()
        fold(pool, lookup)
        folds.append((time.perf_counter() - t) * 1000)
    firsts, linked = [], []
    for i in range(10):
        steady.append(timed_query())
        report_learning(bank, content=f"Query bench fact {i} about shard {i}.", actor="bench", link=False)
        firsts.append(timed_query())
    for i in range(10):  # the default write: linked, its links (and the links it evicts) committed with it
        steady.append(timed_query())
        report_learning(bank, content=f"Linked query bench fact {i}: shard {i} moved to rack {i + 3}.", actor="bench")
        linked.append(timed_query())
    return {"first": float(np.median(firsts)), "first_linked": float(np.median(linked)), "steady": float(np.median(steady)),
            "pool": float(np.median(pools)), "fold": float(np.median(folds))}


_MCP = """
import asyncio, json, os, sys, time
from mcp import ClientSession, StdioServerParameters, stdio_client
async def go():
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtools", "mcp", sys.argv[1]], env=dict(os.environ))
    with open(os.devnull, "w") as err:
        async with stdio_client(params, errlog=err) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                await s.call_tool("query_knowledge_bank", {"query": "warm up the server"})
                lat = []
                for i in range(20):
                    t = time.perf_counter()
                    await s.call_tool("query_knowledge_bank", {"query": f"which shard holds tenant {i}"})
                    lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    print(json.dumps({"p50_ms": lat[len(lat) // 2]}))
asyncio.run(go())
"""


def _mcp_round_trip(path: Path) -> float | None:
    """p50 ms of one ``query_knowledge_bank`` call through ``kb mcp`` over stdio with the real MCP
    client (server started and warmed first); None when the mcp extra is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return None
    out = subprocess.run([sys.executable, "-c", _MCP, str(path)], capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])["p50_ms"]


def _ppr(rows, n: int, seed: int) -> None:
    from kbtools.graph.activation import transition_matrix, personalized_pagerank, power_iteration
    from kbtools.graph.build import to_igraph

    demo = synthetic_bank(entries=n, seed=seed)
    g = to_igraph(demo.entries, demo.edges)
    rng = np.random.default_rng(seed)
    seeds = [list(rng.choice(g.vs["name"], 5, replace=False)) for _ in range(10)]
    a, _ = transition_matrix(g)
    ours, theirs, public = [], [], []
    for s in seeds:
        reset = np.zeros(g.vcount())
        reset[[g.vs.find(v).index for v in s]] = 1 / len(s)
        t = time.perf_counter()
        power_iteration(a, reset, restart=0.15)
        ours.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        g.personalized_pagerank(damping=0.85, reset=reset.tolist(), directed=True, implementation="prpack")
        theirs.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        personalized_pagerank(g, {v: 1.0 for v in s}, restart=0.15)
        public.append((time.perf_counter() - t) * 1000)
    rows.add("serve", f"PPR whole graph {n // 1000}k, kbtools' power iteration, p50", np.median(ours),
             baseline="igraph PRPACK, same graph and seeds", baseline_value=np.median(theirs),
             note="personalized_pagerank uses the faster of the two (PRPACK)")
    rows.add("serve", f"PPR whole graph {n // 1000}k, personalized_pagerank (PRPACK + ranked frame), p50",
             np.median(public))


def _fold(rows, n: int, seed: int) -> None:
    from kbtools.retrieval.folding import fold
    from kbtools.retrieval.pipeline import edge_lookup

    if n == 2000:
        from kbtools.demo.banks import DEMO_DIR

        bank = open_bank(DEMO_DIR / "engineering", readonly=True)
        entries, edges = bank.entries, bank.edges
        lookup = edge_lookup(bank)
    else:
        from kbtools.retrieval.folding import EdgeLookup
        from kbtools.model.vocab import TRUSTED_SOURCES

        demo = synthetic_bank(entries=n, seed=seed)
        entries, edges = demo.entries, demo.edges
        lookup = EdgeLookup.build(edges, sources=frozenset(TRUSTED_SOURCES),
                                  entries=entries.select("id", "title", "summary", "kind"))
    rng = np.random.default_rng(seed)
    touched = pl.concat([edges["src"], edges["dst"]]).unique().to_list()
    ids = entries["id"].to_list()
    titles = entries.select("id", "title", "summary")
    pools = []
    for _ in range(100):
        pick = list(dict.fromkeys(list(rng.choice(touched, 12, replace=False)) + list(rng.choice(ids, 8, replace=False))))[:20]
        pools.append(pl.DataFrame({"id": pick, "score": np.linspace(1, 0.5, len(pick))}).join(titles, on="id", how="left"))
    for p in pools[:10]:
        fold(p, lookup, k=8)
    lat = []
    for i in range(300):
        t = time.perf_counter()
        fold(pools[i % 100], lookup, k=8)
        lat.append((time.perf_counter() - t) * 1000)
    rows.add("serve", f"fold + neighbours, pool 20, {entries.height} entries, p50", np.median(lat), budget=0.2)


def bench_serve(rows, root: Path, *, sizes=(10_000, 100_000), seed: int = 7, log: Callable = print) -> None:
    """Add the serve rows to ``rows`` (a bench ``_Rows``), banks built under ``root``."""
    small, big = sizes
    banks = {}
    for n in (small, big):
        log(f"serve: bank of {n} entries")
        banks[n] = serve_bank(root, n, seed)
    kind = "auto"  # the index kb.query picks for the bank's size, as a user gets it
    picked = {n: index_kind(kind, banks[n].entries.height) for n in (small, big)}
    cold = {}
    for n in (small, big):
        bank_index(banks[n], kind=kind)  # the index file a cold process maps
        cold[n] = _cold(banks[n].path, kind)
    rows.add("serve", f"cold: open_bank + first kb.query {big // 1000}k (new process, {picked[big]})", cold[big]["first_s"], "s",
             baseline=f"same at {small // 1000}k ({picked[small]})", baseline_value=cold[small]["first_s"])
    raw = big * 384 * 4 / 1e6
    stored = sum((Path(banks[big].path) / sg[k]).stat().st_size for sg in vector_segments(banks[big])
                 for k in ("data", "codes") if sg.get(k)) / 1e6
    rows.add("serve", f"memory serving kb.query {big // 1000}k (peak RSS of that process)", cold[big]["rss_mb"], "MB",
             baseline="the vectors as the bank stores them", baseline_value=stored)
    disk = _disk_mb(banks[big].path)
    rows.add("serve", f"disk {big // 1000}k (tables, vectors, {picked[big]} index cache)", disk, "MB",
             baseline="the vectors as the bank stores them", baseline_value=stored)
    adds = {}
    for n in (small, big):
        _adds(banks[n], 3)
        adds[n] = float(np.median(_adds(banks[n], 15)))
    rows.add("serve", f"kb.report_learning {big // 1000}k (link=False, embedded, durable), p50", adds[big],
             baseline=f"same at {small // 1000}k", baseline_value=adds[small])
    linked = {n: _linked_adds(banks[n], 10) for n in (small, big)}
    rows.add("serve", f"kb.report_learning with the linker {big // 1000}k (links committed with it), p50",
             float(np.median(linked[big][1])), baseline=f"same at {small // 1000}k",
             baseline_value=float(np.median(linked[small][1])),
             note=f"the first linked add builds the linker's caches: {linked[small][0]:.1f} s at "
                  f"{small // 1000}k, {linked[big][0]:.1f} s at {big // 1000}k")
    rng = np.random.default_rng(seed)
    for n in (small, big):
        q = _queries(banks[n], kind, rng)
        rows.add("serve", f"kb.query {n // 1000}k (folded, text embedded by the bank's embedder, {picked[n]}), p50",
                 q["steady"])
        rows.add("serve", f"first kb.query after a report_learning {n // 1000}k, p50", q["first"],
                 baseline="steady kb.query", baseline_value=q["steady"])
        rows.add("serve", f"first kb.query after a linked report_learning (the default write) {n // 1000}k, p50",
                 q["first_linked"], baseline="steady kb.query", baseline_value=q["steady"])
        rows.add("serve", f"part: ranked_pool {n // 1000}k (vector given), p50", q["pool"])
        rows.add("serve", f"part: fold over that pool {n // 1000}k (bank's edge lookup), p50", q["fold"])
    mcp_ms = _mcp_round_trip(banks[big].path)
    if mcp_ms is not None:
        rows.add("serve", f"kb mcp: one query_knowledge_bank round trip {big // 1000}k (stdio, real client), p50",
                 mcp_ms, baseline="kb.query in process", baseline_value=q["steady"])
    _ppr(rows, 20_000, seed)
    for n in (2000, 20_000):
        _fold(rows, n, seed)
