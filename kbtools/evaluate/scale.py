"""``kb bench --scale 1m``: one big bank on one machine, measured end to end (not in CI).

Generate (``kb demo --entries N`` in a child process), embed with the fast embedder in a child
process (streamed in chunks; its peak resident memory is the child's own), then in this process:
open, first query (index built or read from its cache file), steady query p50 with the default
index and its recall@8 against an exact scan, serving memory, disk, connect throughput, PageRank
and Leiden. Every figure is appended to ``report`` as it is measured, so a run cut short keeps
what it measured (``on_row``).

>>> _bytes_h(3 * 1024**3)
'3.0 GB'
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["run_scale", "SCALES"]

#: ``--scale`` names.
SCALES = {"20k": 20_000, "100k": 100_000, "300k": 300_000, "1m": 1_000_000}

_CHILD = ("import resource, sys; from kbtools.cli.main import main; rc = main(sys.argv[1:]); "
          "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def _bytes_h(n: float) -> str:
    return f"{n / 1024**3:.1f} GB"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(args: list[str], env: dict) -> tuple[float, float]:
    """Run ``kb ARGS`` in a child process: (seconds, its peak resident MB)."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"kb {' '.join(args)} failed: {out.stderr[-2000:]}")
    peak = [line for line in out.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    return secs, int(peak[-1].split()[1]) / 1024 if peak else float("nan")


_SERVE = """
import json, sys, time
import numpy as np
t = time.perf_counter()
from kbtools.store.bank import open_bank
from kbtools.retrieval.embedders import get_embedder
from kbtools.retrieval.search import ranked_pool
t = time.perf_counter()
bank = open_bank(sys.argv[1], readonly=True)
bank.entries.height
open_s = time.perf_counter() - t
texts = bank.entries.sample(int(sys.argv[2]), seed=2)["title"].to_list()
qv = get_embedder("minilm-static").encode(texts)
t = time.perf_counter()
ranked_pool(bank, texts[0], query_vector=qv[0])
first_s = time.perf_counter() - t
lat = []
for q, v in zip(texts, qv):
    t = time.perf_counter()
    ranked_pool(bank, q, query_vector=v)
    lat.append((time.perf_counter() - t) * 1000)
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")][0] / 1024
print(json.dumps({"open_s": open_s, "first_s": first_s, "p50_ms": float(np.median(lat)),
                  "p99_ms": float(np.percentile(lat, 99)), "rss_mb": rss}))
"""


def _serve(path: Path, queries: int, env: dict) -> dict:
    """Open, first query and steady queries in a fresh process (its own memory)."""
    import json

    out = subprocess.run([sys.executable, "-c", _SERVE, str(path), str(queries)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"serving run failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_scale(entries: int, workdir: str | os.PathLike, *, seed: int = 7, connect_limit: int | None = 50_000,
              queries: int = 200, log: Callable = print, on_row: Callable | None = None) -> dict:
    """Measure a bank of ``entries`` entries built under ``workdir`` (kept: rerun to measure a warm
    cache). ``connect_limit`` bounds the connect measurement (None: the whole bank)."""
    from kbtools.ops.jobs import connect
    from kbtools.retrieval.embedders import get_embedder
    from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, index_kind, recall_at_k
    from kbtools.retrieval.search import bank_index, ranked_pool
    from kbtools.store.bank import open_bank

    rows: list[dict] = []

    def add(metric, value, unit, note=""):
        rows.append({"metric": metric, "value": round(float(value), 4), "unit": unit, "note": note})
        log(f"  {metric}: {value:.4g} {unit} {note}")
        if on_row is not None:
            on_row(rows[-1])

    path = Path(workdir) / f"bank-{entries}"
    env = {**os.environ, "KBTOOLS_EMBED_CACHE": "0", "ORT_DISABLE_TELEMETRY": "1"}
    log(f"generate {entries} entries")
    secs, peak = _child(["demo", "--entries", str(entries), "--out", str(path), "--seed", str(seed), "--force"], env)
    add("generate + import (kb demo --entries)", secs, "s", f"peak {peak:.0f} MB resident")
    log("embed (minilm-static, streamed)")
    secs, peak = _child(["embed", str(path), "--embedder", "minilm-static"], env)
    add("embed (minilm-static, chunks of 50k)", secs, "s", f"peak {peak:.0f} MB resident (child process)")
    add("embed peak resident", peak, "MB")

    t = time.perf_counter()
    bank = open_bank(path)
    n = bank.entries.height
    kind = index_kind("auto", n)
    emb = get_embedder("minilm-static")
    texts = bank.entries.sample(queries, seed=1)["title"].to_list()
    qv = emb.encode(texts)
    t = time.perf_counter()
    ranked_pool(bank, texts[0], query_vector=qv[0])
    add(f"index build ({kind}), cached as files", time.perf_counter() - t, "s", "the first query on a new bank")
    serve = _serve(path, queries, env)
    add("open (a fresh process)", serve["open_s"], "s")
    add(f"first query, {kind} index read from its cache file", serve["first_s"], "s")
    add(f"steady query p50 (pool 20, {kind})", serve["p50_ms"], "ms", f"p99 {serve['p99_ms']:.1f} ms")
    raw = n * len(DIMENSIONS) * 384 * 4
    add("serving resident memory (fresh process, after the queries)", serve["rss_mb"], "MB",
        f"raw float32 vectors {_bytes_h(raw)}, precombined {_bytes_h(raw / 4)}")
    idx = bank_index(bank)
    approx = idx.search(qv, 8)[1]
    ids, data = bank.vectors()
    w = np.array([DEFAULT_WEIGHTS[d] for d in DIMENSIONS], dtype=np.float32)
    t = time.perf_counter()
    best_s = np.full((queries, 8), -np.inf, dtype=np.float32)
    best_i = np.zeros((queries, 8), dtype=np.int64)
    for start in range(0, len(ids), 50_000):
        block = np.einsum("nkd,k->nd", np.asarray(data[start : start + 50_000], dtype=np.float32), w)
        s = qv @ block.T
        cand_s = np.concatenate([best_s, s], axis=1)
        cand_i = np.concatenate([best_i, np.arange(start, start + len(block))[None, :].repeat(queries, 0)], axis=1)
        top = np.argpartition(-cand_s, 7, axis=1)[:, :8]
        best_s, best_i = np.take_along_axis(cand_s, top, 1), np.take_along_axis(cand_i, top, 1)
    exact = ids[best_i]
    add("exact scan of all vectors, per query", (time.perf_counter() - t) * 1000 / queries, "ms",
        "numpy over the four dimensions, batched")
    add(f"recall@8 of {kind} against exact", recall_at_k(approx, exact), "share", f"{queries} title queries")
    del data
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    add("disk", disk / 1024**3, "GB")
    index_bytes = sum(f.stat().st_size for f in (path / "cache").rglob("*") if f.is_file()) if (path / "cache").exists() else 0
    add("index cache files", index_bytes / 1024**2, "MB")

    t = time.perf_counter()
    report = connect(bank, limit=connect_limit)
    secs = time.perf_counter() - t
    add("connect throughput", report["entries"] / secs, "entries/s",
        f"{report['entries']} entries, {report['links_made']} links in {secs:.1f} s"
        + ("" if connect_limit is None else f" (limit {connect_limit})"))

    from kbtools.graph.build import to_igraph
    from kbtools.graph.community import communities

    t = time.perf_counter()
    g = to_igraph(bank.entries, bank.edges)
    add("igraph view", time.perf_counter() - t, "s", f"{g.vcount()} vertices, {g.ecount()} edges")
    t = time.perf_counter()
    g.pagerank(directed=False)
    add("PageRank (whole graph)", time.perf_counter() - t, "s")
    t = time.perf_counter()
    communities(g, entries=bank.entries)
    add("Leiden (modularity) + labels", time.perf_counter() - t, "s")
    add("peak resident memory (this process)", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "MB")
    return {"entries": n, "rows": rows, "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}}
