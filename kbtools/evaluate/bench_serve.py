"""``kb bench --only serve``: kbtools served like an embedded database, each figure as a ratio in
one run: adding one entry at 10k vs 100k (no linking, and with the write-time linker), the first
query after an add vs a steady query, a cold open + first query in a fresh process at 10k vs 100k,
memory serving queries vs the raw 384-d vectors, disk vs the peers' median (their figures quoted
as references, not measured here), personalized PageRank (kbtools vs igraph's
PRPACK), fold at 2k and 20k.

Banks are synthetic (``synthetic_bank``) with random unit 384-d vectors recorded under the
hashing embedder, so that an add embeds its entry (cheaply) inside its write, as a real add does.
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
from kbtools.ops.interchange import import_frames
from kbtools.ops.writes import report_learning
from kbtools.retrieval.search import bank_index, ranked_pool, text_hashes
from kbtools.store.bank import create_bank, open_bank

__all__ = ["bench_serve", "PEERS_100K"]

#: The peers at 100k entries, measured once on the same 384-d vectors: references
#: quoted, not dependencies and not measured here. LanceDB / Chroma / DuckDB vss.
PEERS_100K = {
    "add one entry (no linking), ms": (4.3, 7.4, 11.1),
    "first query after an add, ms": (7.2, 1.2, 7.5),
    "cold open + first query, s": (0.015, 0.23, 0.25),
    "memory serving queries, MB": (190, 290, 530),
    "disk, MB": (164, 305, 414),
}


def _bank(root: Path, n: int, seed: int):
    demo = synthetic_bank(entries=n, seed=seed)
    bank = create_bank(root / f"serve{n}")
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
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
import numpy as np
from kbtools.store.bank import open_bank
from kbtools.retrieval.search import ranked_pool
bank = open_bank(sys.argv[1], readonly=True)
q = np.random.default_rng(0).normal(size=384).astype(np.float32); q /= np.linalg.norm(q)
ranked_pool(bank, "q", query_vector=q, index=sys.argv[2])
first = time.perf_counter() - t0
for i in range(50):
    ranked_pool(bank, "q", query_vector=np.roll(q, i), index=sys.argv[2])
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


def _queries(bank, kind: str, rng) -> tuple[float, float]:
    """(first query after one add, median steady query) in ms, vector given."""
    qs = rng.normal(size=(40, 384)).astype(np.float32)
    for q in qs[:5]:
        ranked_pool(bank, "q", query_vector=q, index=kind)
    firsts = []
    for i in range(10):
        report_learning(bank, content=f"Query bench fact {i} about shard {i}.", actor="bench", link=False)
        t = time.perf_counter()
        ranked_pool(bank, "q", query_vector=qs[i], index=kind)
        firsts.append((time.perf_counter() - t) * 1000)
    steady = []
    for q in qs:
        t = time.perf_counter()
        ranked_pool(bank, "q", query_vector=q, index=kind)
        steady.append((time.perf_counter() - t) * 1000)
    return float(np.median(firsts)), float(np.median(steady))


def _ppr(rows, n: int, seed: int) -> None:
    from kbtools.graph.activation import _transition_matrix, personalized_pagerank, power_iteration
    from kbtools.graph.build import to_igraph

    demo = synthetic_bank(entries=n, seed=seed)
    g = to_igraph(demo.entries, demo.edges)
    rng = np.random.default_rng(seed)
    seeds = [list(rng.choice(g.vs["name"], 5, replace=False)) for _ in range(10)]
    a, _ = _transition_matrix(g)
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
        banks[n] = _bank(root, n, seed)
    kind = "hnsw"
    cold = {}
    for n in (small, big):
        bank_index(banks[n], kind=kind)  # the index file a cold process maps
        cold[n] = _cold(banks[n].path, kind)
    rows.add("serve", f"cold open + first query {big // 1000}k (new process, {kind})", cold[big]["first_s"], "s",
             baseline=f"same at {small // 1000}k", baseline_value=cold[small]["first_s"],
             note="peers at 100k: LanceDB 0.015 / Chroma 0.23 / DuckDB vss 0.25 s (references)")
    raw = big * 384 * 4 / 1e6
    rows.add("serve", f"memory serving queries {big // 1000}k (max RSS of that process)", cold[big]["rss_mb"], "MB",
             baseline="raw 384-d float32 vectors", baseline_value=raw,
             note="peers: LanceDB 190 / Chroma 290 / DuckDB vss 530 MB (references)")
    disk = _disk_mb(banks[big].path)
    rows.add("serve", f"disk {big // 1000}k (tables, vectors, {kind} index cache)", disk, "MB",
             baseline="peers' median (Chroma, reference)", baseline_value=float(np.median(PEERS_100K["disk, MB"])),
             note="peers: LanceDB 164 / Chroma 305 / DuckDB vss 414 MB (references)")
    adds = {}
    for n in (small, big):
        _adds(banks[n], 3)
        adds[n] = float(np.median(_adds(banks[n], 15)))
    rows.add("serve", f"add one entry {big // 1000}k (no linking, embedded, durable), p50", adds[big],
             baseline=f"same at {small // 1000}k", baseline_value=adds[small],
             note="peers at 100k: LanceDB 4.3 / Chroma 7.4 / DuckDB vss 11.1 ms (references)")
    linked = {n: _linked_adds(banks[n], 10) for n in (small, big)}
    rows.add("serve", f"add one entry with linking {big // 1000}k (report_learning, links committed with it), p50",
             float(np.median(linked[big][1])), baseline=f"same at {small // 1000}k",
             baseline_value=float(np.median(linked[small][1])),
             note=f"the first linked add builds the linker's caches: {linked[small][0]:.1f} s at "
                  f"{small // 1000}k, {linked[big][0]:.1f} s at {big // 1000}k")
    rng = np.random.default_rng(seed)
    first, steady = _queries(banks[big], kind, rng)
    rows.add("serve", f"first query after an add {big // 1000}k ({kind}, vector given), p50", first,
             baseline="steady query", baseline_value=steady,
             note="peers at 100k: LanceDB 7.2 / Chroma 1.2 / DuckDB vss 7.5 ms (references)")
    _ppr(rows, 20_000, seed)
    for n in (2000, 20_000):
        _fold(rows, n, seed)
