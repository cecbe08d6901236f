"""The write-time linker on a bank: connect (the job), linking new entries as they are reported,
explain, decay, reinforcement and feedback. Thin: it gathers the bank's frames and vectors, calls
the pure planners in ``kbtools.linker`` and ``kbtools.linker.fading``, and applies their plans as audited
transactions.

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.explain(bank, "a1b2c3d4", "b2c3d4e5").signals  # doctest: +SKIP
{'share': 0.156, 'sem': 1.0, 'bridge': 0.0, 'time': 1.0, 'cue': 1.0}
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np
import polars as pl

from kbtools.linker.fading import plan_decay, plan_reinforce
from kbtools.errors import EdgeRuleError, EntryNotFound, ValidationError
from kbtools.linker import LINKER_DEFAULTS, LINKER_LEXICAL, LinkerSettings, LinkScore, TermStats, plan_connect, plan_links
from kbtools.linker import explain as _explain
from kbtools.model.schema import SCHEMAS
from kbtools.store.bank import Bank, utcnow
from kbtools.ops.writes import apply_plan
from kbtools.progress import Progress, progress_callback

__all__ = [
    "linker_settings",
    "connect_bank",
    "link_new_entries",
    "explain",
    "decay_bank",
    "reinforce",
    "feedback",
    "bench_linking",
]


def linker_settings(bank: Bank) -> LinkerSettings:
    """The linker's settings for this bank: the lexical weight of meaning (omega 0.25) when its
    vectors come from a lexical embedder, the defaults otherwise; ``linker`` settings in the bank
    override both."""
    base = LINKER_LEXICAL if (bank.embedder_name or "").startswith("hashing") else LINKER_DEFAULTS
    over = bank.settings.get("linker") or {}
    return base.with_(**over) if over else base


def _stats(bank: Bank, settings: LinkerSettings) -> TermStats:
    """The linker's term statistics for the bank, cached; when entries were only appended since
    (same triples, no text or kind changed), the previous statistics are extended, not rebuilt."""
    name = f"termstats:{hash(settings)}"
    known = tuple(sorted(set(bank.triples["subject"].to_list()) | set(bank.triples["object"].to_list())))
    entries = bank.entries
    content = entries.select(pl.struct("id", "kind", "title", "summary", "content").hash()).to_series()

    def build() -> tuple:
        hit = bank._derived.get(name)
        if hit is not None:
            old_stats, old_known, old_content = hit[1]
            n = len(old_content)
            if old_known == known and n <= len(content) and content.head(n).equals(old_content):
                try:
                    return old_stats.extend(entries), known, content
                except ValidationError:
                    pass
        return TermStats.build(entries, known_entities=known, settings=settings), known, content

    return bank.derived(name, build, on=("entries", "triples"))[0]


def _vectors(bank: Bank) -> np.ndarray | None:
    """Content-dimension vectors aligned with the entries' rows (zero rows where missing)."""
    ids, data = bank.vectors()
    if len(ids) == 0:
        return None

    def build() -> np.ndarray:
        pos = pl.DataFrame({"id": ids.tolist(), "_pos": np.arange(len(ids))})
        order = bank.entries.select("id").join(pos, on="id", how="left")["_pos"].to_numpy()
        out = np.zeros((bank.entries.height, data.shape[2]), dtype=np.float32)
        have = ~np.isnan(order.astype(float))
        out[have] = np.asarray(data)[order[have].astype(np.int64), 0, :]
        return out

    return bank.derived("linker-vectors", build, on=("entries", "vectors"))


#: Below this many entries the linker's neighbour index is exact (flat); above it, HNSW.
NEIGHBOURS_FLAT_BELOW = 20_000
_HNSW_M, _HNSW_EF_CONSTRUCTION, _HNSW_EF_SEARCH = 32, 80, 64


def _faiss(threads: int = 1):
    import faiss

    faiss.omp_set_num_threads(threads)
    return faiss


def _new_neighbour_index(vectors: np.ndarray):
    """A flat inner-product index (exact) for a small bank, HNSW (M 32, efSearch 64) for a large one."""
    faiss = _faiss(1)
    d = vectors.shape[1]
    if len(vectors) < NEIGHBOURS_FLAT_BELOW:
        return faiss.IndexFlatIP(d)
    index = faiss.IndexHNSWFlat(d, _HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = _HNSW_EF_SEARCH
    return index


def _neighbours(bank: Bank, vectors: np.ndarray | None):
    """The faiss index over the linker's content vectors in row order (what ``plan_links`` and
    ``plan_connect`` take as ``neighbors``), cached per bank; when entries were only appended since
    (earlier rows and their vectors unchanged), the previous index grows by the new rows. A flat
    index that grows past ``NEIGHBOURS_FLAT_BELOW`` entries is rebuilt as HNSW."""
    if vectors is None or len(vectors) == 0:
        return None
    name = "linker-neighbours"

    def build():
        hit = bank._derived.get(name)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if hit is not None:
            index, old = hit[1]
            n = len(old)
            outgrown = isinstance(index, _faiss(1).IndexFlatIP) and len(vecs) >= NEIGHBOURS_FLAT_BELOW
            if not outgrown and n <= len(vecs) and np.array_equal(vecs[:n], old):
                if len(vecs) > n:
                    index.add(vecs[n:])
                return index, vecs
        index = _new_neighbour_index(vecs)
        threads = 1 if len(vecs) < NEIGHBOURS_FLAT_BELOW else max(1, min(8, os.cpu_count() or 1))
        _faiss(threads)
        try:
            index.add(vecs)
        finally:
            _faiss(1)
        return index, vecs

    return bank.derived(name, build, on=("entries", "vectors"))[0]


def _apply(bank: Bank, plan, *, actor: str, reason: str) -> dict:
    if plan.add.height == 0 and plan.remove.height == 0 and plan.entry_updates.height == 0:
        return {"added": 0, "removed": 0}
    updates = plan.entry_updates
    return apply_plan(bank, add=plan.add, remove=plan.remove.select("src", "dst", "type"), entry_updates=updates,
                      actor=actor, reason=reason, action="edge.link")


def connect_bank(bank: Bank, *, rebuild: bool = False, limit: int | None = None, dry_run: bool = False,
                 chunk: int = 500, actor: str = "connect", progress: Progress = False) -> dict:
    """Link every entry the linker has not seen (or all with ``rebuild``), at most ``limit``, in
    created_at order; each chunk is one transaction that also sets its entries' ``linked_at``, so
    a killed run loses nothing and a rerun continues. Returns entries, links made, links dropped,
    links per entry and duration. ``progress=True`` shows a ``tqdm.auto`` bar per chunk."""
    progress = progress_callback(progress, "connect")
    started = time.perf_counter()
    settings = linker_settings(bank)
    entries = bank.entries
    order = entries.sort("created_at", "id")
    todo = order if rebuild else order.filter(pl.col("linked_at").is_null())
    todo = todo.filter(~pl.col("kind").is_in(["step", "artifact", "role"]))
    ids = todo["id"].to_list()[: limit if limit is not None else None]
    made = dropped = 0
    plans = []
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        for attempt in range(2):  # a concurrent writer can invalidate a plan: plan again once
            vectors = _vectors(bank)
            plan = plan_connect(bank.entries, bank.edges, bank.triples, ids=part, vectors=vectors,
                                neighbors=_neighbours(bank, vectors), stats=_stats(bank, settings), settings=settings,
                                now=utcnow())
            if dry_run:
                break
            try:
                _apply(bank, plan, actor=actor, reason="connect: write-time linker")
                break
            except EdgeRuleError:
                if attempt:
                    raise
                bank.reload()
        made += plan.add.filter(pl.col("source") == "auto").height
        dropped += plan.remove.height
        if dry_run:
            plans.append(plan.add.select("src", "type", "dst", "weight", "evidence").head(50))
        if progress:
            progress(min(start + chunk, len(ids)), len(ids))
    auto = bank.edges.filter(pl.col("source") == "auto")
    degree = pl.concat([auto["src"], auto["dst"]]).value_counts() if auto.height else None
    report = {
        "entries": len(ids), "links_made": made, "links_dropped": dropped, "dry_run": dry_run,
        "auto_links_in_bank": auto.height,
        "links_per_entry_mean": round(2 * auto.height / max(entries.height, 1), 3),
        "links_per_entry_max": int(degree["count"].max()) if degree is not None else 0,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if dry_run and plans:
        report["plan"] = pl.concat(plans).head(50).to_dicts()
    return report


def link_new_entries(bank: Bank, ids: Sequence[str], *, actor: str) -> dict:
    """Run the linker on entries just written (report_learning calls this when auto-linking is on).
    Entries are embedded first when the bank has vectors, so meaning counts too."""
    if bank.embedder_name:
        from kbtools.retrieval.search import embed_bank

        embed_bank(bank)
    settings = linker_settings(bank)
    made = 0
    for eid in ids:
        vectors = _vectors(bank)
        neighbors = _neighbours(bank, vectors)
        _faiss(1)  # one entry: a single-threaded search (threads wake up slower than it runs)
        plan = plan_links(eid, bank.entries, bank.edges, bank.triples, vectors=vectors, neighbors=neighbors,
                          stats=_stats(bank, settings), settings=settings, now=utcnow())
        _apply(bank, plan, actor="linker", reason=f"linked at write by {actor}")
        made += plan.add.height
    return {"links_made": made}


def explain(bank: Bank, a: str, b: str, *, cosine: float | None = None,
            settings: LinkerSettings | None = None) -> LinkScore:
    """Why two entries are (or are not) linked: score, linked, type, why, and the signals share,
    sem, bridge, time and cue, scored from scratch as if ``a`` were the new entry (seed 001,
    section 4). ``cosine`` overrides the pair's cosine (else the bank's vectors give it, or 0);
    ``settings`` overrides the linker's (e.g. ``LINKER_LEXICAL`` for a lexical embedder).

    >>> import kbtools as kb, tempfile, pathlib
    >>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
    >>> p = kb.report_learning(bank, content="Line 3 keeps faulting with error E-217.", kind="event", session_id="s1", actor="x")
    >>> f = kb.report_learning(bank, content="Found it: the encoder cable on line 3 was loose.", kind="event", session_id="s1", actor="x")
    >>> kb.explain(bank, f, p, cosine=0.301).type
    'resolves'
    """
    for i in (a, b):
        if bank.entries.filter(pl.col("id") == i).height == 0:
            raise EntryNotFound(i, "explain")
    settings = settings or linker_settings(bank)
    if cosine is not None:
        value = float(cosine)
        return _explain(a, b, bank.entries, bank.edges, bank.triples, cosine=lambda ms, cs: np.full(len(ms), value),
                        stats=_stats(bank, settings), settings=settings)
    return _explain(a, b, bank.entries, bank.edges, bank.triples, vectors=_vectors(bank),
                    stats=_stats(bank, settings), settings=settings)


def decay_bank(bank: Bank, *, dry_run: bool = False, now=None, actor: str = "decay") -> dict:
    """Prune fading links whose faded weight is under 0.1 and links to missing entries; report the
    faded weights (fading is computed when links are read, so a rerun changes nothing more)."""
    settings = linker_settings(bank)
    now = now or utcnow()
    plan = plan_decay(bank.edges, bank.entries["id"], now=now, half_life_days=settings.half_life_days,
                      min_weight=settings.min_weight)
    report = dict(plan.report)
    report.update({"pruned": 0 if dry_run else plan.remove.height, "dry_run": dry_run})
    if plan.remove.height and not dry_run:
        apply_plan(bank, remove=plan.remove.select("src", "dst", "type"), actor=actor,
                   reason="decay: faded under the minimum weight or pointing at a deleted entry")
    if dry_run:
        report["plan"] = plan.remove.head(50).to_dicts()
    return report


def reinforce(bank: Bank, ids: Sequence[str], *, actor: str = "feedback") -> dict:
    """Hebbian reinforcement of the fading links among ``ids`` (entries used together successfully):
    w <- w + 0.2 (1 - w) from the faded weight, seen = now."""
    ids = list(ids)
    for i in ids:
        if bank.entries.filter(pl.col("id") == i).height == 0:
            raise EntryNotFound(i, "reinforce")
    updated = plan_reinforce(bank.edges, ids, now=utcnow())
    if updated.height:
        apply_plan(bank, add=updated, actor=actor, reason="reinforced: used together successfully", replace=True,
                   action="edge.reinforce")
    return {"reinforced": updated.height}


def feedback(bank: Bank, fix_id: str, problem_ids: Sequence[str], *, actor: str = "feedback") -> dict:
    """A fix that worked: ``fix resolves problem`` links (weight 0.8, source feedback) to each
    problem; an automatic link between the pair gives way; a trusted one is left as it is."""
    problem_ids = [p for p in problem_ids if p != fix_id]
    if not problem_ids:
        raise ValidationError("problem_ids", problem_ids, "name at least one problem other than the fix")
    for i in (fix_id, *problem_ids):
        if bank.entries.filter(pl.col("id") == i).height == 0:
            raise EntryNotFound(i, "feedback")
    edges = bank.edges
    add, remove = [], []
    for p in problem_ids:
        pair = edges.filter(((pl.col("src") == fix_id) & (pl.col("dst") == p)) | ((pl.col("src") == p) & (pl.col("dst") == fix_id)))
        if pair.filter(pl.col("type") == "resolves").filter(pl.col("source") != "auto").height:
            continue
        remove += pair.filter(pl.col("source").is_in(["auto", "review"])).select("src", "dst", "type").to_dicts()
        add.append({"src": fix_id, "dst": p, "type": "resolves", "source": "feedback", "weight": 0.8, "note": None,
                    "evidence": {"why": "a fix that worked"}})
    if add:
        apply_plan(bank, add=add, remove=remove, actor=actor, reason="feedback: the fix worked")
    return {"links": len(add), "replaced": len(remove)}


def bench_linking(bank: Bank, n: int):
    """Rows for ``kb bench``: write-time linking of one new entry and connect throughput on
    synthetic banks of 2k and 20k entries (and the bank at hand)."""
    from kbtools.demo import synthetic_bank

    rows = []
    sizes = [2_000, 20_000] if n < 50_000 else [n]
    for size in sizes:
        demo = synthetic_bank(entries=size, seed=11)
        ents = demo.entries.with_columns(pl.lit(None).cast(SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
        t = time.perf_counter()
        stats = TermStats.build(ents)
        build_ms = (time.perf_counter() - t) * 1000
        tag = f"linker {size // 1000}k"
        rows.append((tag, "term statistics build", build_ms, "ms", {}))
        newest = ents.sort("created_at")["id"].tail(20).to_list()
        lat = []
        for eid in newest:
            t = time.perf_counter()
            plan_links(eid, ents, demo.edges, demo.triples, stats=stats)
            lat.append((time.perf_counter() - t) * 1000)
        rows.append((tag, "link one new entry, p50", float(np.median(lat)), "ms",
                     {"budget": 5.0 if size >= 100_000 else None, "note": "the seed's linker: ~20 ms at 2k on SQLite"}))
        rows.append(_bench_with_vectors(tag, ents, demo, stats, newest, size))
        if size <= 20_000:
            t = time.perf_counter()
            plan = plan_connect(ents, demo.edges, demo.triples, stats=stats)
            secs = time.perf_counter() - t
            auto = plan.add.filter(pl.col("source") == "auto")
            deg = pl.concat([auto["src"], auto["dst"]]).value_counts()["count"] if auto.height else pl.Series([0])
            rows.append((tag, "connect throughput", size / secs, "entries/s",
                         {"note": f"{auto.height} links in {secs:.1f} s; links per entry mean {2 * auto.height / size:.2f}, "
                                  f"max {int(deg.max())}; the seed: 2,000 memories -> 10,000 links in 66 s"}))
    return rows


def _bench_with_vectors(tag, ents, demo, stats, newest, size):
    """Linking one new entry with random unit 384-d vectors and the neighbour index (flat or HNSW)."""
    vectors = np.random.default_rng(0).normal(size=(size, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = _new_neighbour_index(vectors)
    _faiss(max(1, min(8, os.cpu_count() or 1)))
    index.add(vectors)
    _faiss(1)
    lat = []
    for eid in newest:
        t = time.perf_counter()
        plan_links(eid, ents, demo.edges, demo.triples, vectors=vectors, neighbors=index, stats=stats)
        lat.append((time.perf_counter() - t) * 1000)
    kind = "flat" if size < NEIGHBOURS_FLAT_BELOW else "HNSW"
    return (tag, "link one new entry with vectors, p50", float(np.median(lat)), "ms",
            {"budget": 5.0 if size >= 100_000 else None, "note": f"384-d, {kind} neighbour index"})
