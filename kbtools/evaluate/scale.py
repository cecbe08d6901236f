"""``kb bench --scale 1m``: one big bank on one machine, measured end to end (not in CI).

Generate (``kb demo --entries N`` in a child process) and embed with the fast embedder in a child
process (streamed in chunks; its peak resident memory is the child's own), or with ``reuse`` take
the bank already built there; then build the default index in a fresh process (streamed from the
memory-mapped segments: its time and peak memory), then the verbs a user calls in another:
``open_bank`` + first ``kb.query`` (cold), steady ``kb.query`` (folded, text embedded with the bank's
embedder), ``kb.report_learning`` and the first query after each, peak memory; a 10k bank's cold
start in the same run beside it. Then, in this process: recall@8 against an exact scan (on title
queries held out from the ones the index settings were tuned on), disk, PageRank and Leiden; last,
connect over a sample in a child process with a time limit. Every figure is appended to ``report``
as it is measured, so a run cut short keeps what it measured (``on_row``).

>>> _bytes_h(3 * 1024**3)
'3.0 GB'
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

__all__ = ["run_scale", "exact_top", "SCALES"]

#: Writes the serving run makes (each followed by a query); they stay in the bank.
SERVE_ADDS = 20
#: The bank whose cold start the big one's is compared with, built in the same run.
SMALL_BANK = 10_000

#: ``--scale`` names.
SCALES = {"20k": 20_000, "100k": 100_000, "300k": 300_000, "1m": 1_000_000}

_CHILD = ("import resource, sys; from kbtools.cli.main import main; rc = main(sys.argv[1:]); "
          "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def _bytes_h(n: float) -> str:
    return f"{n / 1024**3:.1f} GB"


def _child(args: list[str], env: dict, timeout: float | None = None) -> tuple[float, float, str]:
    """Run ``kb ARGS`` in a child process: (seconds, its peak resident MB, its stdout)."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, timeout=timeout)
    secs = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"kb {' '.join(args)} failed: {out.stderr[-2000:]}")
    peak = [line for line in out.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    return secs, int(peak[-1].split()[1]) / 1024 if peak else float("nan"), out.stdout


_BUILD = """
import json, resource, sys, time
from kbtools.store.bank import open_bank
from kbtools.retrieval.search import bank_index
bank = open_bank(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
idx = bank_index(bank)
print(json.dumps({"build_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "kind": idx.kind, "size": idx.size,
                  "lists": int(getattr(idx.faiss_index, "nlist", 0)), "nprobe": int(getattr(idx.faiss_index, "nprobe", 0)),
                  "refine_factor": idx.refine_factor if idx.refine is not None else 1,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_SERVE = """
import json, sys, time
import numpy as np
adds = int(sys.argv[3])
t0, c0 = time.perf_counter(), time.process_time()
import kbtools as kb
bank = kb.open_bank(sys.argv[1])
opened = time.perf_counter() - t0
kb.query(bank, "why does the warm pool drain at night")
first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
texts = [f"which shard holds the retention window of tenant {i}" for i in range(int(sys.argv[2]))]
lat, cpu = [], []
for q in texts:
    t, c = time.perf_counter(), time.thread_time()
    kb.query(bank, q)
    lat.append((time.perf_counter() - t) * 1000)
    cpu.append((time.thread_time() - c) * 1000)
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0] / 1024
from kbtools.retrieval.search import bank_embedder, ranked_pool
vecs = bank_embedder(bank).encode(texts)
part = []
for q, v in zip(texts, vecs):
    t = time.perf_counter()
    ranked_pool(bank, q, query_vector=v)
    part.append((time.perf_counter() - t) * 1000)
add_ms, after_ms = [], []
for j in range(adds):
    t = time.perf_counter()
    kb.report_learning(bank, content=f"Scale fact {j}: the warm pool of shard {j} drains at {j % 12} am.",
                       actor="scale", link=False)
    add_ms.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    kb.query(bank, texts[j % len(texts)])
    after_ms.append((time.perf_counter() - t) * 1000)
print(json.dumps({"open_s": opened, "first_s": first_s, "first_cpu_s": first_cpu,
                  "p50_ms": float(np.median(lat)), "p99_ms": float(np.percentile(lat, 99)),
                  "p50_cpu_ms": float(np.median(cpu)), "rss_mb": rss, "part_ms": float(np.median(part)),
                  "add_ms": float(np.median(add_ms)) if adds else None,
                  "after_ms": float(np.median(after_ms)) if adds else None}))
"""


def _small_cold(workdir: Path, seed: int, env: dict, log: Callable) -> float:
    """Cold open + first ``kb.query`` of a :data:`SMALL_BANK`-entry bank built the same way in
    ``workdir`` (kept and reused), in a fresh process: the figure the big bank's cold start is
    compared with."""
    path = workdir / f"bank-{SMALL_BANK}"
    if not _embedded(path):
        log(f"the {SMALL_BANK}-entry bank the cold start is compared with")
        _child(["demo", "--entries", str(SMALL_BANK), "--out", str(path), "--seed", str(seed), "--force"], env)
        _child(["embed", str(path), "--embedder", "minilm-static"], env)
        _python(_BUILD, [str(path)], env, "small index build")
    return _python(_SERVE, [str(path), "5", "0"], env, "small serving run")["first_s"]


def _python(code: str, args: list[str], env: dict, what: str) -> dict:
    """Run ``code`` in a fresh process (its own memory); its last stdout line is JSON."""
    import json

    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _embedded(path: Path) -> bool:
    """Whether ``path`` is a bank whose every entry has minilm-static vectors (reusable)."""
    from kbtools.store.bank import open_bank
    from kbtools.store.vectors import embedder_name, vector_ids

    try:
        bank = open_bank(path, readonly=True)
    except Exception:  # noqa: BLE001 - not a bank (yet): build it
        return False
    return embedder_name(bank) == "minilm-static" and len(vector_ids(bank)) == bank.entries.height > 0


def exact_top(bank, queries: np.ndarray, k: int = 8, *, block: int = 50_000, ids=None) -> np.ndarray:
    """The exact top ``k`` ids per query row by the default weighted cosine, streamed over the
    bank's memory-mapped vector segments (``block`` rows at a time; the vectors are never joined).
    ``ids``: only these entries (e.g. the active ones, as the index holds)."""
    from kbtools.retrieval.index import combine
    from kbtools.store.vectors import vector_blocks

    best_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), k), dtype=np.int64)
    blocks = vector_blocks(bank, block, ids=ids)
    start = 0
    for _, data in blocks:
        s = queries @ combine(data).T
        cand_s = np.concatenate([best_s, s], axis=1)
        cand_i = np.concatenate([best_i, np.arange(start, start + len(data))[None, :].repeat(len(queries), 0)], axis=1)
        top = np.argpartition(-cand_s, k - 1, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, top, 1), np.take_along_axis(cand_i, top, 1)
        start += len(data)
    return blocks.ids[best_i]


def run_scale(entries: int, workdir: str | os.PathLike, *, seed: int = 7, connect_limit: int | None = 50_000,
              queries: int = 200, reuse: bool = False, connect_timeout: float | None = 1800,
              log: Callable = print, on_row: Callable | None = None) -> dict:
    """Measure a bank of ``entries`` entries built under ``workdir`` (kept). With ``reuse`` a bank
    already generated and embedded there is measured as it is (generate and embed are skipped).
    ``connect_limit`` bounds the connect measurement (None: the whole bank); connect runs last, in
    a child process, and is stopped after ``connect_timeout`` seconds (reported, not an error)."""
    from kbtools.retrieval.embedders import get_embedder
    from kbtools.retrieval.index import DIMENSIONS, recall_at_k
    from kbtools.retrieval.search import bank_index
    from kbtools.store.bank import open_bank
    from kbtools.store.vectors import vector_blocks

    rows: list[dict] = []

    def add(metric, value, unit, note=""):
        rows.append({"metric": metric, "value": round(float(value), 4), "unit": unit, "note": note})
        log(f"  {metric}: {value:.4g} {unit} {note}")
        if on_row is not None:
            on_row(rows[-1])

    path = Path(workdir) / f"bank-{entries}"
    env = {**os.environ, "KBTOOLS_EMBED_CACHE": "0", "ORT_DISABLE_TELEMETRY": "1"}
    if reuse and _embedded(path):
        log(f"reusing the embedded bank at {path} (generate and embed not measured in this run)")
    else:
        log(f"generate {entries} entries")
        secs, peak, _ = _child(["demo", "--entries", str(entries), "--out", str(path), "--seed", str(seed), "--force"], env)
        add("generate + import (kb demo --entries)", secs, "s", f"peak {peak:.0f} MB resident")
        log("embed (minilm-static, streamed)")
        secs, peak, _ = _child(["embed", str(path), "--embedder", "minilm-static"], env)
        add("embed (minilm-static, chunks of 50k)", secs, "s", f"peak {peak:.0f} MB resident (child process)")
        add("embed peak resident", peak, "MB")

    shutil.rmtree(path / "cache", ignore_errors=True)  # the index is built in this run, not found
    log("index build (a fresh process)")
    built = _python(_BUILD, [str(path)], env, "index build")
    kind = built["kind"]
    add(f"index build ({kind}), streamed from the segments, cached as files", built["build_s"], "s",
        f"{built['lists']} lists, {built['nprobe']} visited, {built['refine_factor']}x candidates re-scored;"
        f" CPU {built['cpu_s']:.0f} s; peak {built['peak_mb']:.0f} MB resident (child process)")
    add("index build peak resident", built["peak_mb"], "MB")
    log("serve (a fresh process): open + first kb.query, steady kb.query, report_learning + the query after it")
    serve = _python(_SERVE, [str(path), str(queries), str(SERVE_ADDS)], env, "serving run")
    # wall clock, and the CPU time this process got: on a shared machine the gap is the wait
    add("cold: open_bank + first kb.query (a fresh process: import, open, embed, fold)", serve["first_s"], "s",
        f"CPU {serve['first_cpu_s']:.2f} s; of which import + open {serve['open_s']:.2f} s")
    small = None
    if entries > SMALL_BANK:
        small = _small_cold(Path(workdir), seed, env, log)
        add(f"cold: the same at {SMALL_BANK // 1000}k (same run)", small, "s",
            f"ratio {serve['first_s'] / small:.2f} (goal <= 1.5)")
    add(f"kb.query steady p50 (folded, the bank's embedder, {kind})", serve["p50_ms"], "ms",
        f"p99 {serve['p99_ms']:.1f} ms; CPU p50 {serve['p50_cpu_ms']:.2f} ms (this thread)")
    add("part: ranked_pool p50 (vector given, no fold)", serve["part_ms"], "ms")
    if serve["add_ms"] is not None:
        add("kb.report_learning p50 (link=False, embedded, durable)", serve["add_ms"], "ms", f"{SERVE_ADDS} adds")
        add("first kb.query after each report_learning, p50", serve["after_ms"], "ms",
            f"ratio to steady {serve['after_ms'] / serve['p50_ms']:.2f} (goal <= 3)")
    bank = open_bank(path, readonly=True)
    n = bank.entries.height
    dim = vector_blocks(bank).shape[2]
    raw = n * len(DIMENSIONS) * dim * 4
    stored = sum(f.stat().st_size for f in (path / "vectors").rglob("*.npy") if f.is_file())
    add("peak resident memory serving kb.query (fresh process)", serve["rss_mb"], "MB",
        f"ratio {serve['rss_mb'] * 1024**2 / stored:.2f} to the vectors as stored ({stored / 1024**2:.0f} MB; goal <= 3);"
        f" raw float32 vectors {_bytes_h(raw)} ({len(DIMENSIONS)} x {dim})")

    # recall on title queries held out from tuning (tuned on another sample), against an exact scan
    texts = bank.entries.sample(queries, seed=1)["title"].to_list()
    qv = get_embedder("minilm-static").encode(texts).astype(np.float32)
    idx = bank_index(bank)
    approx = idx.search(qv, 8)[1]
    unrefined = idx.ids[np.maximum(idx.faiss_index.search(qv, 8)[1], 0)]
    t = time.perf_counter()
    exact = exact_top(bank, qv, 8, ids=bank.entries.filter(pl.col("status") == "active")["id"])
    add("exact scan of all vectors, per query", (time.perf_counter() - t) * 1000 / queries, "ms",
        "numpy over the four dimensions, streamed from the segments, batched")
    add(f"recall@8 of {kind} against exact", recall_at_k(approx, exact), "share",
        f"{queries} title queries; candidates re-scored with the stored vectors")
    add(f"recall@8 of {kind} codes alone (no re-scoring)", recall_at_k(unrefined, exact), "share", f"{queries} title queries")
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    add("disk", disk / 1024**3, "GB")
    vec_bytes = sum(f.stat().st_size for f in (path / "vectors").rglob("*.npy") if f.is_file())
    add("vector segments on disk (float16, memory-mapped)", vec_bytes / 1024**3, "GB")
    index_bytes = sum(f.stat().st_size for f in (path / "cache").rglob("*") if f.is_file()) if (path / "cache").exists() else 0
    add("index cache files", index_bytes / 1024**2, "MB")
    entries_mb = bank.entries.estimated_size() / 1024**2
    edges_mb = bank.edges.estimated_size() / 1024**2
    add("entries table in memory (polars)", entries_mb, "MB", f"edges {edges_mb:.0f} MB, {bank.edges.height} edges")
    del idx

    from kbtools.graph.build import to_igraph
    from kbtools.graph.community import find_communities

    t = time.perf_counter()
    g = to_igraph(bank.entries, bank.edges)
    add("igraph view", time.perf_counter() - t, "s", f"{g.vcount()} vertices, {g.ecount()} edges")
    t = time.perf_counter()
    g.pagerank(directed=False)
    add("PageRank (whole graph, igraph)", time.perf_counter() - t, "s")
    t = time.perf_counter()
    find_communities(g, entries=bank.entries)
    add("Leiden (modularity) + labels", time.perf_counter() - t, "s")
    add("peak resident memory (this process)", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "MB")
    del g, bank

    log("connect (a child process)")
    args = ["connect", str(path), "--json"] + ([] if connect_limit is None else ["--limit", str(connect_limit)])
    try:
        secs, peak, out = _child(args, env, timeout=connect_timeout)
        import json

        report = json.loads(out)
        report = report[0] if isinstance(report, list) else report
        add("connect throughput", report["entries"] / secs, "entries/s",
            f"{report['entries']} entries, {report['links_made']} links in {secs:.1f} s (the child process, start"
            f" and term statistics included), peak {peak:.0f} MB" + ("" if connect_limit is None else f" (limit {connect_limit})"))
    except subprocess.TimeoutExpired:
        add("connect did not finish", connect_timeout, "s", f"stopped after {connect_timeout:.0f} s" +
            ("" if connect_limit is None else f" (limit {connect_limit})"))
    return {"entries": n, "rows": rows, "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}}
