"""``kb bench --peers``: kbtools beside three embedded vector stores, measured in one run on the
same entries: LanceDB (a directory of Lance files), Chroma (``PersistentClient``: SQLite and its
HNSW segment) and DuckDB with the ``vss`` extension (one database file, an HNSW index persisted).

Every system holds the same single vector per entry that kbtools searches (the bank's four
per-dimension vectors precombined with the default weights, :func:`~kbtools.retrieval.index.combine`)
and the entry's text, and ranks by the same inner product. The operations, timed alike: top-8 for
a query vector (steady p50, and recall@8 against an exact numpy scan), one add (p50: as each system
commits it, and on disk when it returns), the
first query after each add (p50), a cold open + first query in a fresh process and that process's
peak memory while it serves 50 more, and the disk after the adds. kbtools is timed through
``kb.query(bank, text, query_vector=q)`` (folded, the vector given: no embedding) and
``kb.report_learning(..., link=False)`` (which embeds its text with the bank's hashing embedder
inside the write); the peers take the vector with the row. The vectors are the entries' texts
embedded with that embedder, and the queries the titles of entries drawn at random, so that recall
means what it means on a real bank (random vectors defeat every approximate index alike). The
systems take turns (rounds of queries, each add, each cold process), so that the shared machine's
load, which moves a query's time by a third between runs, lands on every system alike.

The peers come from the ``bench`` extra. Nothing is downloaded at run time: DuckDB loads ``vss``
from the file the ``duckdb-extension-vss`` wheel installs (built for the one DuckDB it pins),
Chroma runs with telemetry off, and no peer is given an embedding function.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from kbtools.errors import KbError, ValidationError
from kbtools.evaluate.bench_serve import serve_bank
from kbtools.ops.writes import report_learning
from kbtools.retrieval.index import combine, index_kind
from kbtools.retrieval.pipeline import query
from kbtools.retrieval.search import bank_embedder, bank_index
from kbtools.store.vectors import vector_blocks

__all__ = ["bench_peers", "format_peers", "PEERS"]

#: The systems, in the table's column order.
PEERS = ("kbtools", "LanceDB", "Chroma", "DuckDB+vss")

K = 8
_INDEX_WORDS = {"hnsw": "faiss HNSW, M 32, efSearch 128, float16 vectors as the bank stores them", "flat": "exact scan",
                "ivf_sq8": "faiss IVF, 8-bit codes, a tenth of the lists visited, re-scored with the stored vectors"}
_QUERIES = 100  # recall@8 and the steady p50 over these
_ADDS = 30  # each followed by a query asked for the first time: their p50s
_ROUNDS = 10  # the steady queries in rounds, each round on every system in turn
_COLD_RUNS = 3  # fresh processes per system for the cold row (the median)

# Each peer: the code a fresh process runs for the cold row. argv: the store's path, the query
# vectors (.npy). It prints the seconds from the library's import to the first answer (and those
# of the import and the open alone: a library that imports on first use pays it in the open), and its peak resident memory (VmHWM, this process alone) after 50 more
# queries.
_COLD_HEAD = """
import json, sys, time
import numpy as np
qs = np.load(sys.argv[2])
t0 = time.perf_counter()
"""
_COLD_TAIL = """
search(qs[0])
first = time.perf_counter() - t0
for q in qs[1:51]:
    search(q)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")]
print(json.dumps({"first_s": first, "import_s": imported, "rss_mb": int(hwm[0].split()[1]) / 1024}))
"""
_COLD = {
    "kbtools": """
import kbtools as kb
bank = kb.open_bank(sys.argv[1], readonly=True)
imported = time.perf_counter() - t0
def search(q):
    return kb.query(bank, "cold query", query_vector=q, k=8, record_usage=False).ids()
""",
    "LanceDB": """
import lancedb
table = lancedb.connect(sys.argv[1]).open_table("bench")
imported = time.perf_counter() - t0
def search(q):
    return table.search(q).distance_type("dot").limit(8).select(["id", "_distance"]).to_arrow()["id"].to_pylist()
""",
    "Chroma": """
import chromadb
from chromadb.config import Settings
col = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False)).get_collection("bench")
imported = time.perf_counter() - t0
def search(q):
    return col.query(query_embeddings=[q], n_results=8, include=[])["ids"][0]
""",
    "DuckDB+vss": """
import duckdb, duckdb_extension_vss, pathlib
ext = pathlib.Path(duckdb_extension_vss.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "vss.duckdb_extension"
con = duckdb.connect(sys.argv[1] + "/bench.duckdb",
                     config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
con.execute(f"LOAD '{ext}'")
con.execute("SET hnsw_enable_experimental_persistence = true")
imported = time.perf_counter() - t0
def search(q):
    return [r[0] for r in con.execute(QUERY.format("[" + ",".join(f"{x:.9g}" for x in q.tolist()) + "]")).fetchall()]
""",
}

# the vector goes in as an array literal: a bound list parameter of 384 floats is converted value by
# value (about ten times slower than parsing the literal in duckdb 1.5)
DUCKDB_QUERY = "SELECT id FROM bench ORDER BY array_negative_inner_product(vec, {}::FLOAT[384]) LIMIT 8"


def _duckdb_array(v) -> str:
    """``v`` as a DuckDB array literal."""
    return "[" + ",".join(f"{x:.9g}" for x in v.tolist()) + "]"


def _need(module: str):
    try:
        return __import__(module)
    except ImportError as e:
        raise KbError(f"kb bench --peers needs {module!r} ({e}): install the bench extra, "
                      "pip install 'kbtools[bench]' (in a venv of its own: it pins DuckDB to its vss build)") from e


def _duckdb_connect(path: str):
    """A DuckDB connection with ``vss`` loaded from the ``duckdb-extension-vss`` wheel's file
    (never installed from the network: autoinstall is off) and HNSW persistence on."""
    duckdb = _need("duckdb")
    vss = _need("duckdb_extension_vss")
    ext = Path(vss.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "vss.duckdb_extension"
    if not ext.exists():
        found = sorted(p.name for p in (Path(vss.__file__).parent / "extensions").iterdir())
        raise KbError(f"duckdb {duckdb.__version__}: duckdb-extension-vss holds the vss extension for {found} only; "
                      "install the DuckDB its version pins (the bench extra pins both)")
    con = duckdb.connect(path, config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute(f"LOAD '{ext}'")
    con.execute("SET hnsw_enable_experimental_persistence = true")
    return con


class _Lance:
    name, index = "LanceDB", "IVF_HNSW_SQ, its defaults (dot); rows added after the build scanned exactly"
    syncs = False  # an add writes its files and returns, no fsync (strace -f -e trace=fsync,fdatasync)

    def load(self, path: Path, ids, texts, vecs):
        import lancedb

        self.path = path
        db = lancedb.connect(str(path))
        self.table = db.create_table("bench", data=_arrow(ids, texts, vecs))
        self.table.create_index(metric="dot", vector_column_name="vector", index_type="IVF_HNSW_SQ")

    def search(self, q):
        return self.table.search(q).distance_type("dot").limit(K).select(["id", "_distance"]).to_arrow()["id"].to_pylist()

    def add(self, i, text, v):
        self.table.add(_arrow([i], [text], v[None, :]))

    def close(self):
        self.table = None

    def reopen(self):
        import lancedb

        self.table = lancedb.connect(str(self.path)).open_table("bench")


class _Chroma:
    name, index = "Chroma", "HNSW, its defaults (M 16, ef_search 100; ip)"
    syncs = False  # SQLite in WAL mode, no fsync per add (strace)

    def load(self, path: Path, ids, texts, vecs):
        import chromadb
        from chromadb.config import Settings

        self.path = path
        self.client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        self.col = self.client.create_collection("bench", metadata={"hnsw:space": "ip"}, embedding_function=None)
        step = self.client.get_max_batch_size()
        for s in range(0, len(ids), step):
            self.col.add(ids=list(ids[s:s + step]), documents=list(texts[s:s + step]), embeddings=vecs[s:s + step])

    def search(self, q):
        return self.col.query(query_embeddings=[q], n_results=K, include=[])["ids"][0]

    def add(self, i, text, v):
        self.col.add(ids=[i], documents=[text], embeddings=v[None, :])

    def close(self):
        self.col = self.client = None

    def reopen(self):
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(path=str(self.path), settings=Settings(anonymized_telemetry=False))
        self.col = self.client.get_collection("bench", embedding_function=None)


class _DuckDB:
    name, index = "DuckDB+vss", "HNSW, vss defaults (M 16, ef_search 64; ip), persisted in the file"
    syncs = True  # each commit fsyncs its write-ahead log (strace)

    def load(self, path: Path, ids, texts, vecs):
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.con = _duckdb_connect(str(path / "bench.duckdb"))
        src = _arrow(ids, texts, vecs).rename_columns(["id", "text", "vec"])
        self.con.execute("CREATE TABLE bench (id VARCHAR, text VARCHAR, vec FLOAT[384])")
        self.con.register("src", src)
        self.con.execute("INSERT INTO bench SELECT id, text, vec FROM src")
        self.con.unregister("src")
        self.con.execute("CREATE INDEX bench_hnsw ON bench USING HNSW (vec) WITH (metric = 'ip')")
        self.con.execute("CHECKPOINT")
        plan = "".join(r[1] for r in self.con.execute("EXPLAIN " + DUCKDB_QUERY.format(_duckdb_array(vecs[0]))).fetchall())
        if "HNSW_INDEX_SCAN" not in plan:
            raise KbError(f"DuckDB did not plan the HNSW index for the bench query: {plan[:400]}")

    def search(self, q):
        return [r[0] for r in self.con.execute(DUCKDB_QUERY.format(_duckdb_array(q))).fetchall()]

    def add(self, i, text, v):
        self.con.execute(f"INSERT INTO bench VALUES (?, ?, {_duckdb_array(v)}::FLOAT[384])", [i, text])

    def close(self):
        self.con.close()

    def reopen(self):
        self.con = _duckdb_connect(str(self.path / "bench.duckdb"))


def _arrow(ids, texts, vecs):
    import pyarrow as pa

    flat = pa.array(np.ascontiguousarray(vecs, dtype=np.float32).reshape(-1))
    return pa.table({"id": pa.array(list(ids), pa.string()), "text": pa.array(list(texts), pa.string()),
                     "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1])})


def _disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 1e6


def _cold(system: str, path: Path, queries: Path) -> dict:
    code = _COLD_HEAD + f"QUERY = {DUCKDB_QUERY!r}\n" + _COLD[system] + _COLD_TAIL
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(queries)], capture_output=True, text=True,
                         timeout=900, env=env)
    if out.returncode:
        raise RuntimeError(f"{system} cold process failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f[:K]) & set(t)) / K for f, t in zip(found, truth)]))


def _take_turns(systems: dict[str, tuple[Callable, Callable]], qs: np.ndarray, truth, new_rows,
                after: np.ndarray | None = None) -> dict:
    """Per system (``{name: (search, add)}``): steady p50 and recall@8 over ``qs`` (after 5 warm-up
    queries each), then each add's p50 and the p50 of the first query after it (the query vectors
    ``after``, cycled; default ``qs``). The systems take
    turns: the queries run in :data:`_ROUNDS` rounds and each round, like each add, goes to every
    system, the first place rotating; a change in the machine's load lands on all of them alike."""
    names = list(systems)
    for search, _ in systems.values():
        for q in qs[:5]:
            search(q)
    steady = {name: [] for name in names}
    found = {name: [None] * len(qs) for name in names}
    for turn, chunk in enumerate(np.array_split(np.arange(len(qs)), _ROUNDS)):
        for name in _rotated(names, turn):
            search = systems[name][0]
            for i in chunk.tolist():
                t = time.perf_counter()
                found[name][i] = list(search(qs[i]))
                steady[name].append((time.perf_counter() - t) * 1000)
    adds = {name: [] for name in names}
    firsts = {name: [] for name in names}
    after = qs if after is None or not len(after) else after
    for turn, (i, text, v) in enumerate(new_rows):
        q = after[turn % len(after)]
        for name in _rotated(names, turn):
            search, add = systems[name]
            t = time.perf_counter()
            add(i, text, v)
            adds[name].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            search(q)
            firsts[name].append((time.perf_counter() - t) * 1000)
    return {name: {"steady_ms": float(np.median(steady[name])), "recall": _recall(found[name], truth),
                   "add_ms": float(np.median(adds[name])), "first_ms": float(np.median(firsts[name]))}
            for name in names}


def _files(path: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``path`` with its (modification time, size)."""
    out = {}
    for p in Path(path).rglob("*"):
        try:
            st = p.stat()
        except FileNotFoundError:  # removed while listed
            continue
        if p.is_file():
            out[p] = (st.st_mtime_ns, st.st_size)
    return out


def _fsync(paths) -> None:
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except FileNotFoundError:  # a file the store removed again (a temporary one)
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _synced_adds(systems: dict[str, tuple[Callable, Path | None]], new_rows) -> dict[str, float]:
    """Per system (``{name: (add, path)}``), the p50 of an add that is on disk when it returns: a
    system that fsyncs its own commit (``path`` None) is timed as it is; for one that does not, the
    files its add created or changed under ``path`` (listed before and after it, not timed) are
    fsynced with the folders of the new ones, and that time is added to the add's. The systems take
    turns, each add on every system, the first place rotating."""
    names = list(systems)
    took: dict[str, list[float]] = {name: [] for name in names}
    for turn, (i, text, v) in enumerate(new_rows):
        for name in _rotated(names, turn):
            add, path = systems[name]
            before = _files(path) if path is not None else None
            t = time.perf_counter()
            add(i, text, v)
            spent = time.perf_counter() - t
            if before is not None:
                after = _files(path)
                changed = [p for p, stamp in after.items() if before.get(p) != stamp]
                folders = {p.parent for p in changed if p not in before}
                t = time.perf_counter()
                _fsync([*changed, *folders])
                spent += time.perf_counter() - t
            took[name].append(spent * 1000)
    return {name: float(np.median(took[name])) for name in names}


def _rotated(names: list[str], turn: int) -> list[str]:
    """``names`` starting from the ``turn``-th (cyclically)."""
    at = turn % len(names)
    return names[at:] + names[:at]


def _cold_turns(paths: dict[str, Path], qfile: Path, say: Callable) -> dict[str, dict]:
    """The cold row of each system, :data:`_COLD_RUNS` fresh processes each, the systems taking
    turns; the median of each figure."""
    runs: dict[str, list[dict]] = {name: [] for name in paths}
    for turn in range(_COLD_RUNS):
        for name in _rotated(list(paths), turn):
            say(f"{name}: cold open + first query in a new process ({turn + 1} of {_COLD_RUNS})")
            runs[name].append(_cold(name, paths[name], qfile))
    return {name: {key: float(np.median([r[key] for r in got])) for key in got[0]} for name, got in runs.items()}


def bench_peers(root: Path, *, n: int = 100_000, seed: int = 7, peers=PEERS[1:], log: Callable = print) -> dict:
    """Measure kbtools and ``peers`` (names from :data:`PEERS`; default the three) on one synthetic
    bank of ``n`` entries under ``root``; returns ``{"entries", "systems", "index", "rows", "notes"}``
    (``rows``: one per operation, a value per system and kbtools / best peer)."""
    unknown = [p for p in peers if p not in PEERS[1:]]
    if unknown or not peers:
        raise ValidationError("peers", unknown[0] if unknown else peers, f"name some of {', '.join(PEERS[1:])}")
    chosen = [c for c in (_Lance, _Chroma, _DuckDB) if c.name in peers]
    for module in ("lancedb", "chromadb", "duckdb", "duckdb_extension_vss"):
        _need(module)
    root = Path(root)
    start = time.perf_counter()
    load_before = _load_average()

    def say(message: str) -> None:
        log(f"peers: {message} (at {time.perf_counter() - start:.0f} s)")

    say(f"kbtools bank of {n} entries")
    t = time.perf_counter()
    bank = serve_bank(root, n, seed, vectors="text")
    kind = index_kind("auto", bank.entries.height)  # the index kb.query picks for this bank, as a user gets it
    bank_index(bank)  # the index file a cold process maps
    load = {"kbtools": time.perf_counter() - t}
    blocks = vector_blocks(bank, ids=bank.entries.filter(pl.col("status") == "active")["id"])  # what the index holds
    ids = np.asarray(blocks.ids, dtype=str)
    vecs = np.concatenate([combine(d) for _, d in blocks]).astype(np.float32)
    text = dict(zip(bank.entries["id"].to_list(), bank.entries["content"].to_list()))
    texts = [text[i] for i in ids]
    # queries as a user types them: the titles of entries drawn at random, embedded as kb.query
    # embeds its text; the truth is the exact inner product over the same vectors
    rng = np.random.default_rng(seed + 1)
    emb = bank_embedder(bank)
    titles = bank.entries["title"].to_list()
    drawn = rng.choice(len(titles), size=min(_QUERIES + _ADDS, len(titles)), replace=False)
    asked = [titles[i] for i in drawn[:_QUERIES]]
    qs = np.asarray(emb.encode(asked), dtype=np.float32)
    # the query after each add is one no system was asked before in this run (a repeated query
    # would read what the steady queries left in a system's caches)
    after = np.asarray(emb.encode([titles[i] for i in drawn[_QUERIES:]] or asked[:1]), dtype=np.float32)
    qfile = root / "peer-queries.npy"
    np.save(qfile, qs)
    truth = [list(ids[np.argsort(-(vecs @ q))[:K]]) for q in qs]
    added = [f"Bench fact {j}: the warm pool drains at {j} am." for j in range(_ADDS)]
    new_rows = [(f"peer{j:06d}", t, v) for j, (t, v) in enumerate(zip(added, np.asarray(emb.encode(added), dtype=np.float32)))]

    peers = []
    for peer in (c() for c in chosen):
        say(f"{peer.name}: load {n} rows and build its index")
        t = time.perf_counter()
        peer.load(root / peer.name.replace("+", "-"), ids, texts, vecs)
        load[peer.name] = time.perf_counter() - t
        peers.append(peer)
    say("queries and adds, the systems taking turns")
    turns = {"kbtools": (lambda q: query(bank, "bench query", query_vector=q, k=K).ids(),  # usage counted, as by default
                         lambda i, text, v: report_learning(bank, content=text, actor="bench", link=False))}
    turns.update({peer.name: (peer.search, peer.add) for peer in peers})
    results = _take_turns(turns, qs, truth, new_rows, after)
    # recall of the index kb.query searches (its answer is folded, so not the plain nearest 8)
    searched = bank_index(bank)
    results["kbtools"]["recall"] = _recall([list(searched.search(q[None, :], K)[1][0]) for q in qs], truth)
    index = {"kbtools": f"{kind}, the default for {n:,} entries ({_INDEX_WORDS.get(kind, kind)}); kb.query folds the pool"}
    paths = {"kbtools": Path(bank.path)}
    for peer in peers:
        peer.close()  # a cold process opens the store next (DuckDB's file takes one writer)
        index[peer.name] = peer.index
        paths[peer.name] = peer.path
    for name, cold in _cold_turns(paths, qfile, say).items():
        results[name].update(cold, disk_mb=_disk_mb(paths[name]), load_s=load[name])
    # adds again, each on disk when it returns: after the cold and disk rows, so that those read
    # the stores as the first adds left them
    say("adds synced to disk, the systems taking turns")
    synced = {"kbtools": (lambda i, text, v: report_learning(bank, content=text, actor="bench", link=False), None)}
    for peer in peers:
        peer.reopen()
        synced[peer.name] = (peer.add, None if peer.syncs else peer.path)
    more = [(f"sync{j:06d}", f"Synced fact {j}: the cold pool fills at {j} pm.", v) for j, (_, _, v) in enumerate(new_rows)]
    for name, ms in _synced_adds(synced, more).items():
        results[name]["synced_add_ms"] = ms
    for peer in peers:
        peer.close()
    for name in results:
        say(f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in results[name].items()))
    systems = ["kbtools"] + [c.name for c in chosen]
    return {"entries": n, "systems": systems, "index": index, "rows": _rows(results, systems),
            "notes": {"kbtools": "kb.query(bank, text, query_vector=q) folded, usage counted (no embedding); "
                                 "report_learning(link=False) embeds its text (hashing) in the write",
                      "disk": "kbtools keeps four 384-d vectors per entry (one per search dimension; each distinct "
                              "vector stored once), the full entry rows and the edges; the peers one vector, "
                              "the id and the text",
                      "queries": f"the titles of {_QUERIES} entries drawn at random, embedded with the bank's hashing embedder; "
                                 "truth: exact inner product over the same vectors",
                      "adds": f"{_ADDS} adds, each followed by one query, the title of another entry drawn at random "
                              f"(asked for the first time); then, after the cold and disk rows, {_ADDS} more, each on "
                              "disk when it returns: LanceDB's and Chroma's (which issue no fsync) with the files the "
                              "add created or changed fsynced, and the new files' folders, that time added",
                      "turns": f"the systems take turns: the queries in {_ROUNDS} rounds, each round and each add "
                               f"on every system, the first place rotating; the cold row the median of "
                               f"{_COLD_RUNS} fresh processes each, in turns",
                      "machine": f"{os.cpu_count()} CPUs, load average {load_before} at the start and "
                                 f"{_load_average()} at the end"}}


def _load_average() -> str:
    """The one-minute load average, or "unknown" where the system does not say."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):
        return "unknown"


_OPERATIONS = (  # key, operation, unit, better
    ("steady_ms", "top-8 query, steady, p50", "ms", min),
    ("recall", "recall@8 of that query (exact scan = 1)", "share", max),
    ("add_ms", "add one row as each system commits it, p50 (kbtools and DuckDB fsync; LanceDB and Chroma do not)", "ms", min),
    ("synced_add_ms", "add one row, on disk when it returns, p50 (LanceDB's and Chroma's files fsynced after it)", "ms", min),
    ("first_ms", "first query after each add (a query asked for the first time), p50", "ms", min),
    ("first_s", "cold: import + open + first query, new process", "s", min),
    ("import_s", "of which the library's import and the open", "s", min),
    ("rss_mb", "peak RSS of that process (51 queries)", "MB", min),
    ("disk_mb", "disk after the adds", "MB", min),
    ("load_s", "load the rows and build the index (kbtools: generate and import the bank too)", "s", min),
)


def _rows(results: dict, systems: list[str]) -> list[dict]:
    rows = []
    for key, operation, unit, better in _OPERATIONS:
        values = {s: float(results[s][key]) for s in systems}
        best = better(values[s] for s in systems[1:])
        rows.append({"operation": operation, "unit": unit, "values": values,
                     "kbtools_over_best_peer": round(values["kbtools"] / best, 2) if best else None})
    return rows


def format_peers(report: dict) -> str:
    """The report as one markdown table: operations down, systems across."""
    head = "| at {:,} entries | ".format(report["entries"]) + " | ".join(report["systems"]) + " | kbtools / best peer |"
    lines = [head, "|---" * (len(report["systems"]) + 2) + "|"]
    lines.append("| index | " + " | ".join(report["index"][s] for s in report["systems"]) + " | |")
    for r in report["rows"]:
        cells = " | ".join(f"{r['values'][s]:.3g} {r['unit']}" for s in report["systems"])
        lines.append(f"| {r['operation']} | {cells} | {r['kbtools_over_best_peer'] or ''} |")
    lines.append("")
    lines += [f"{k}: {v}" for k, v in report["notes"].items()]
    return "\n".join(lines)
