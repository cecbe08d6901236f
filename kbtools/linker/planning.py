"""Plan the links of new entries: ``plan_links`` for one, ``plan_connect`` for many (seed 001, steps 2-7, section 5).

Semantics shared by both (so that they agree exactly): term statistics are those of the whole
entries frame given; entries are linked in (created_at, id) order; an entry's candidates are the
linkable entries that are not superseded or archived and were either linked already (``linked_at``
set) or created earlier. ``plan_connect`` over ids gives the same links as calling ``plan_links``
for each id in that order and applying each plan (``apply_links``) before the next.

>>> import polars as pl, datetime as dt
>>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
>>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
...     "created_at": [t, t + dt.timedelta(seconds=30)]})
>>> plan_connect(entries, None, None, now=t).add.select("src", "type", "dst").rows()
[('e2', 'resolves', 'e1')]
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import polars as pl

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.linker.evidence import (
    _SENTINEL,
    candidate_pairs,
    pair_evidence,
    relations,
    use_exact_neighbours,
)
from kbtools.linker.rules import KINDS, LINKER_DEFAULTS, LinkerSettings, link_type
from kbtools.linker.terms import TermStats, metadata_of
from kbtools.model.fading import fade
from kbtools.model.schema import SCHEMAS, TIME, conform
from kbtools.model.vocab import DOMINANCE_TYPES, normalize_type

__all__ = ["LinkPlan", "plan_links", "plan_connect", "apply_links", "why_text"]

_FADING = ("auto", "review", "feedback")
_CAPPED = ("auto", "review")
_COPIED = ("feedback", "manual", "author")
_UPDATES_SCHEMA = {"id": pl.String, "status": pl.String, "linked_at": TIME}
_NO_EDGES = pl.DataFrame(schema=SCHEMAS["edges"])  #: frames are immutable: one empty plan frame serves all


@dataclass(frozen=True)
class LinkPlan:
    """What linking would write: ``add`` and ``remove`` (edges-schema rows), ``entry_updates``
    (id, status - null when unchanged -, linked_at) and a ``report`` of counts.

    >>> LinkPlan.empty().add.height
    0
    """

    add: pl.DataFrame
    remove: pl.DataFrame
    entry_updates: pl.DataFrame
    report: dict

    @classmethod
    def empty(cls, report=None) -> "LinkPlan":
        """A plan that changes nothing."""
        return cls(pl.DataFrame(schema=SCHEMAS["edges"]), pl.DataFrame(schema=SCHEMAS["edges"]),
                   pl.DataFrame(schema=_UPDATES_SCHEMA), dict(report or {}))


# ---------------------------------------------------------------- public door


def plan_links(entry_id, entries, edges, triples, *, vectors=None, cosine=None, neighbors=None, stats=None,
               settings: LinkerSettings = LINKER_DEFAULTS, now=None) -> LinkPlan:
    """Links for one entry already in ``entries`` (structural links, best ``max_new`` automatic
    links, degree cap, takeover by a replacing decision).

    ``neighbors``, with ``vectors``: a nearest-neighbour index over the entries' rows (a
    ``faiss.Index`` over ``vectors`` in row order, or any object with ``ntotal`` and
    ``search(x (m, d) float32, k) -> (scores, rows)``, rows -1 when missing), searched instead of
    scanning every vector. It fetches ``4 candidates + 1`` hits, keeps the visible ones (linked
    already or created earlier, neither superseded nor archived) and re-scores them exactly; when
    fewer than ``candidates`` of them score above the lowest hit (plus 1e-4) the entry falls back to
    the exact scan, and an entry that can see under a quarter of the index (few entries linked or
    created before it) is scanned exactly without a search. ``sem`` stays the exact cosine. A flat
    index gives the links of the scan; any index gives ``plan_connect`` the links of ``plan_links``.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
    ...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
    ...     "created_at": [t, t + dt.timedelta(seconds=30)]})
    >>> plan = plan_links("e2", entries, None, None, now=t)
    >>> plan.add.select("type", "source").rows(), plan.report["links"]
    ([('resolves', 'auto')], 1)
    """
    ctx = _Context.open(entries, edges, triples, stats, settings, now, vectors, cosine, neighbors)
    row = ctx.stats.row_of.get(entry_id)
    if row is None:
        raise EntryNotFound(str(entry_id), "plan_links")
    if ctx.stats.kind[row] < 0:
        return LinkPlan.empty({"entry": entry_id, "skipped": "kind is not linked"})
    rows = np.array([row])
    pairs = candidate_pairs(ctx.stats, rows, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked,
                            settings=settings, vectors=vectors, neighbors=neighbors, eligible=ctx.eligible())
    struct = ctx.structural(row)
    ev = pair_evidence(ctx.stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=settings,
                       vectors=vectors, cosine=cosine)
    state = _State(ctx, ctx.edge_index_for(row, pairs["c"][ev["linked"]], struct))  # only those can be linked
    state.link_entry(row, pairs, ev, struct)
    return state.plan({"entry": entry_id, "candidates": int(len(pairs["c"]))})


def plan_connect(entries, edges, triples, *, ids=None, vectors=None, cosine=None, neighbors=None, stats=None,
                 settings: LinkerSettings = LINKER_DEFAULTS, now=None, progress=None, chunk=None) -> LinkPlan:
    """Links for many entries (default: those never linked), vectorised; the same links as
    ``plan_links`` one entry at a time in created_at order (given the same ``neighbors`` index, see
    ``plan_links``). ``progress(done, total)`` is called after each chunk.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
    ...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
    ...     "created_at": [t, t + dt.timedelta(seconds=30)]})
    >>> plan_connect(entries, None, None, ids=[]).report["entries"]
    0
    """
    ctx = _Context.open(entries, edges, triples, stats, settings, now, vectors, cosine, neighbors)
    st = ctx.stats
    if ids is None:
        chosen = np.flatnonzero(~ctx.linked & (st.kind >= 0))
    else:
        missing = [i for i in ids if i not in st.row_of]
        if missing:
            raise EntryNotFound(str(missing[0]), "plan_connect")
        chosen = np.array(sorted({st.row_of[i] for i in ids}), dtype=np.int64)
        chosen = chosen[st.kind[chosen] >= 0]
    chosen = chosen[np.argsort(st.rank[chosen], kind="stable")]
    structs = {int(r): ctx.structural(int(r)) for r in chosen}
    margin = len({t for s in structs.values() for typ, t in s if typ == "supersedes" and t is not None})
    state = _State(ctx, ctx.edge_index())
    eligible = ctx.eligible() if neighbors is not None else None
    n = max(len(st.ids), 1)
    # without an index every entry of a chunk scans the bank densely: (chunk x bank) scores
    size = chunk or (512 if neighbors is not None else max(1, min(512, 4_000_000 // n)))
    total = len(chosen)
    for start in range(0, total, size):
        rows = chosen[start : start + size]
        pairs = candidate_pairs(st, rows, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked,
                                settings=settings, vectors=vectors, neighbors=neighbors, eligible=eligible, margin=margin)
        ev = pair_evidence(st, pairs["m"], pairs["c"], rel=ctx.rel, settings=settings, vectors=vectors, cosine=cosine)
        state.ensure([*rows.tolist(), *pairs["c"][ev["linked"]].tolist(),
                      *(t for r in rows.tolist() for _, t in structs[r] if t is not None)])
        bounds = np.searchsorted(pairs["b"], np.arange(len(rows) + 1))
        for b, row in enumerate(rows.tolist()):
            sl = slice(bounds[b], bounds[b + 1])
            state.link_entry(row, {k: v[sl] for k, v in pairs.items()}, {k: v[sl] for k, v in ev.items()}, structs[row])
        if progress is not None:
            progress(min(start + size, total), total)
    return state.plan({"entries": total})


def apply_links(entries: pl.DataFrame, edges: pl.DataFrame, plan: LinkPlan) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The entries and edges after a plan (in memory; the store applies plans as one transaction).

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
    ...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
    ...     "created_at": [t, t + dt.timedelta(seconds=30)]})
    >>> plan = plan_connect(entries, None, None, now=t)
    >>> new_entries, new_edges = apply_links(entries, None, plan)
    >>> new_edges.height, new_entries["linked_at"].null_count()
    (1, 0)
    """
    key = ["src", "dst", "type"]
    edges = conform(edges if edges is not None else pl.DataFrame(schema=SCHEMAS["edges"]), "edges")
    kept = edges.join(plan.remove.select(key), on=key, how="anti") if plan.remove.height else edges
    kept = kept.join(plan.add.select(key), on=key, how="anti") if plan.add.height else kept
    new_edges = pl.concat([kept, conform(plan.add, "edges")])
    upd = plan.entry_updates
    if upd.height:
        entries = entries.join(upd.rename({"status": "_status", "linked_at": "_linked"}), on="id", how="left")
        status = pl.coalesce("_status", "status") if "status" in entries.columns else pl.col("_status")
        entries = entries.with_columns(
            status.alias("status"),
            pl.coalesce("_linked", "linked_at").alias("linked_at") if "linked_at" in entries.columns else pl.col("_linked").alias("linked_at"),
        ).drop("_status", "_linked")
    return entries, new_edges


# ---------------------------------------------------------------- context of one call


def _to_us(now) -> int:
    if now is None:
        now = dt.datetime.now(dt.timezone.utc)
    if isinstance(now, dt.datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=dt.timezone.utc)
        return int(round(now.timestamp() * 1_000_000))
    raise ValidationError("now", now, "must be a datetime")


class _Context:
    """The frames of one call, read once: statistics, relations, masks, edges with row numbers."""

    @classmethod
    def open(cls, entries, edges, triples, stats, settings, now, vectors, cosine, neighbors=None):
        self = cls()
        if not isinstance(entries, pl.DataFrame):
            raise ValidationError("entries", type(entries).__name__, "must be a polars DataFrame")
        if stats is None:
            known = _known_entities(triples)
            stats = TermStats.build(entries, known_entities=known, settings=settings)
        else:
            stats.check_aligned(entries)
        if vectors is not None:
            vectors = np.asarray(vectors)
            if vectors.ndim != 2 or vectors.shape[0] != entries.height:
                raise ValidationError("vectors", getattr(vectors, "shape", None),
                                      f"must be an (n, d) array aligned with the {entries.height} entries")
        if vectors is not None and cosine is not None:
            raise ValidationError("cosine", "both", "give vectors or cosine, not both")
        if neighbors is not None:
            _check_neighbors(neighbors, vectors, entries.height)
        self.stats, self.settings, self.now_us = stats, settings, _to_us(now)
        self.neighbors = neighbors
        self.rel = _cached_relations(stats, triples)
        self.superseded, self.open_, self.linked = _entry_flags(stats, entries)
        self.metadata = entries["metadata"] if "metadata" in entries.columns else None
        self.ids = stats.ids
        if edges is None:
            edges = pl.DataFrame(schema=SCHEMAS["edges"])
        if not isinstance(edges, pl.DataFrame):
            raise ValidationError("edges", type(edges).__name__, "must be a polars DataFrame")
        self.edges_input = edges
        return self

    def eligible(self) -> np.ndarray | None:
        """Linkable and not archived (superseded or not), per row; None without a neighbour index."""
        if self.neighbors is None:
            return None
        held = self.stats._cache.get("eligible")
        if held is None or held[0] is not self.open_:  # the flags are kept per entries frame
            held = self.stats._cache["eligible"] = (self.open_, (self.open_ | self.superseded) & (self.stats.kind >= 0))
        return held[1]

    def edge_index(self) -> "_EdgeIndex":
        """The index of the whole edges frame, kept on the statistics for the last frame seen."""
        cache = self.stats._cache
        held = cache.get("edges")
        if held is None or held[0] is not self.edges_input:
            held = (self.edges_input, _EdgeIndex(self.edges_input.with_row_index("_orig"), self.stats.row_of))
            cache["edges"] = held
        return held[1]

    def edge_index_for(self, row: int, candidates: np.ndarray, struct) -> "_EdgeIndex":
        """The edges one entry's linking can read: the whole frame's index when this frame was seen
        before (a bank linking entry after entry), else those touching the entry, its candidates,
        its targets, the decisions that replaced it and the neighbours of a decision it replaces."""
        cache = self.stats._cache
        held = cache.get("edges")
        if (held is not None and held[0] is self.edges_input) or cache.get("edges_seen") is self.edges_input:
            return self.edge_index()
        cache["edges_seen"] = self.edges_input
        frame = self.edges_input.with_row_index("_orig")
        relevant = {row, *candidates.tolist(), *(t for _, t in struct if t is not None), *self.replacers(row, frame)}
        ids = [self.ids[r] for r in relevant]
        touching = frame.filter(pl.col("src").is_in(ids) | pl.col("dst").is_in(ids))
        old = [self.ids[t] for typ, t in struct if typ == "supersedes" and t is not None]
        if old:
            near = touching.filter(pl.col("src").is_in(old) | pl.col("dst").is_in(old))
            more = ids + list(set(near["src"].to_list()) | set(near["dst"].to_list()))
            touching = frame.filter(pl.col("src").is_in(more) | pl.col("dst").is_in(more))
        return _EdgeIndex(touching, self.stats.row_of)

    def structural(self, row: int) -> list[tuple[str, int | None]]:
        """(type, target row or None when missing) named by the entry's own metadata."""
        kind = KINDS[self.stats.kind[row]] if self.stats.kind[row] >= 0 else None
        if self.metadata is None or kind not in ("goal", "decision", "insight"):
            return []
        meta = metadata_of(self.metadata[row])
        wanted: list[tuple[str, object]] = []
        if kind == "goal" and meta.get("parent"):
            wanted.append(("part_of", meta["parent"]))
        if kind == "decision" and meta.get("supersedes"):
            wanted.append(("supersedes", meta["supersedes"]))
        if kind == "insight" and isinstance(meta.get("evidence"), list):
            wanted += [("derived_from", e) for e in meta["evidence"]]
        out = []
        for typ, target in wanted:
            t = self.stats.row_of.get(str(target))
            out.append((typ, t if t != row else None))
        return out

    def replacers(self, row: int, frame: pl.DataFrame) -> list[int]:
        """The chain of decisions that replaced this one (supersedes edges), newest last."""
        if not self.superseded[row]:
            return []
        sup = frame.filter(pl.col("type") == "supersedes").select("dst", "src").rows()
        by = dict(sup)
        chain, cur = [], self.ids[row]
        while cur in by and len(chain) < 1000:
            cur = by[cur]
            if cur not in self.stats.row_of or self.stats.row_of[cur] in chain:
                break
            chain.append(self.stats.row_of[cur])
        return chain


def _check_neighbors(neighbors, vectors, n: int) -> None:
    if vectors is None:
        raise ValidationError("neighbors", "without vectors", "a neighbour index needs the vectors it was built from")
    if not callable(getattr(neighbors, "search", None)) or not hasattr(neighbors, "ntotal"):
        raise ValidationError("neighbors", type(neighbors).__name__, "must have ntotal and search(x, k) -> (scores, rows)")
    if int(neighbors.ntotal) != n:
        raise ValidationError("neighbors", f"{int(neighbors.ntotal)} rows", f"must index the {n} entries' rows in order")
    d = getattr(neighbors, "d", None)
    if d is not None and int(d) != vectors.shape[1]:
        raise ValidationError("neighbors", f"dimension {int(d)}", f"must match the vectors' {vectors.shape[1]}")


def _entry_flags(stats: TermStats, entries: pl.DataFrame):
    """superseded, open (neither superseded nor archived) and linked, per row; kept for the last frame."""
    held = stats._cache.get("flags")
    if held is not None and held[0] is entries:
        return held[1]
    status = pl.col("status") if "status" in entries.columns else pl.repeat(None, pl.len(), dtype=pl.String)
    linked = pl.col("linked_at").is_not_null() if "linked_at" in entries.columns else pl.repeat(False, pl.len())
    flags = entries.select(
        status.eq("superseded").fill_null(False).alias("s"), status.eq("archived").fill_null(False).alias("a"),
        linked.alias("l"),
    )
    superseded = flags["s"].to_numpy().astype(bool)
    out = (superseded, ~(superseded | flags["a"].to_numpy().astype(bool)), flags["l"].to_numpy().astype(bool))
    stats._cache["flags"] = (entries, out)
    return out


#: Up to this many edges, an edge index reads its columns into Python once; above, row by row.
_EDGES_READ_WHOLE = 200_000
_EDGE_COLUMNS = ["_orig", "src", "dst", "type", "source", "note", "evidence", "weight", "created_by", "created_at", "seen_at"]


class _EdgeIndex:
    """Edges (with their row number in the input, ``_orig``) by entry row: an adjacency over rows
    (CSR) to load the edges near an entry when it is first read, and who replaced whom."""

    def __init__(self, frame: pl.DataFrame, row_of: dict):
        frame = conform(frame, "edges").with_columns(frame["_orig"], pl.col("created_at", "seen_at").dt.epoch("us"))
        self.frame = frame.select(_EDGE_COLUMNS)
        self._cols = None
        n = len(row_of)
        if frame.height <= 20_000:  # a few edges: the dictionary beats hashing every id of the bank
            src = np.array([row_of.get(x, -1) for x in frame["src"].to_list()], dtype=np.int64)
            dst = np.array([row_of.get(x, -1) for x in frame["dst"].to_list()], dtype=np.int64)
        else:
            ids, rows = pl.Series(list(row_of), dtype=pl.String), pl.arange(0, n, eager=True)
            ends = frame.select(pl.col(c).replace_strict(ids, rows, default=-1, return_dtype=pl.Int64) for c in ("src", "dst"))
            src, dst = ends["src"].to_numpy(), ends["dst"].to_numpy()
        known = np.flatnonzero((src >= 0) & (dst >= 0))
        end_rows = np.concatenate([src[known], dst[known]])
        order = np.argsort(end_rows, kind="stable")
        self.edge_of = np.concatenate([known, known])[order]
        self.start = np.searchsorted(end_rows[order], np.arange(n + 1))
        sup = known[(frame["type"].to_numpy()[known] == "supersedes")] if known.size else known
        self.replaced_by = dict(zip(dst[sup].tolist(), src[sup].tolist()))

    def rows(self, edges) -> list[tuple]:
        """The rows of these edges (positions in ``frame``) as tuples of ``_EDGE_COLUMNS``; the
        columns are read into Python once per index (a polars gather per entry costs a thread-pool
        round trip, milliseconds on a busy machine)."""
        edges = np.asarray(edges, np.int64)
        if self.frame.height > _EDGES_READ_WHOLE:  # a big bank: gather the rows asked for (the plan
            picked = self.frame[edges]  # of a chunk asks once for most of what it reads)
            return list(zip(*(picked[c].to_list() for c in _EDGE_COLUMNS)))
        if self._cols is None:
            self._cols = [np.array(self.frame[c].to_list() + [None], dtype=object)[:-1] for c in _EDGE_COLUMNS]
        return list(zip(*(col[edges].tolist() for col in self._cols)))

    def edges_near(self, rows) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        if rows.size == 0:
            return np.zeros(0, np.int64)
        lo, hi = self.start[rows], self.start[rows + 1]
        lengths = hi - lo
        pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths - lo, lengths)
        return np.unique(self.edge_of[pos])


def _cached_relations(stats: TermStats, triples):
    """Relations of the bank's entity terms, kept on the statistics for the last triples frame seen."""
    cache = stats._relations
    if cache and cache[0] is triples:
        return cache[1]
    rel = relations(stats, triples)
    cache[:] = [triples, rel]
    return rel


def _known_entities(triples) -> tuple[str, ...]:
    if triples is None or triples.height == 0:
        return ()
    return tuple(set(triples["subject"].drop_nulls().to_list()) | set(triples["object"].drop_nulls().to_list()))


# ---------------------------------------------------------------- the sequential state


class _State:
    """Edges near the entries being linked, as dictionaries, updated link by link."""

    def __init__(self, ctx: _Context, index: _EdgeIndex):
        self.ctx, self.st, self.s = ctx, ctx.stats, ctx.settings
        self.index = index
        self.edges: dict[tuple, dict] = {}
        self.touching: dict[int, set] = defaultdict(set)
        self.capped: dict[int, set] = defaultdict(set)
        self.added: dict[tuple, dict] = {}
        self.removed: dict[tuple, int] = {}
        held = self.st._cache.get("superseded rows")  # the flags are kept per entries frame
        if held is None or held[0] is not ctx.superseded:
            held = self.st._cache["superseded rows"] = (ctx.superseded, np.flatnonzero(ctx.superseded).tolist())
        self.superseded = set(held[1])
        self.replaced_by: dict[int, int] = dict(index.replaced_by)
        self.updates: dict[int, str | None] = {}
        self.counts = defaultdict(int)
        self.linked_rows: set[int] = set()
        self.pair_count: dict[tuple, int] = defaultdict(int)
        self.loaded_rows: set[int] = set()
        self.loaded_edges: set[int] = set()

    def ensure(self, rows) -> None:
        """Load the input edges touching these rows (once: an edge removed later stays removed)."""
        fresh = [r for r in set(rows) if r not in self.loaded_rows]
        if not fresh:
            return
        self.loaded_rows.update(fresh)
        near = [e for e in self.index.edges_near(fresh).tolist() if e not in self.loaded_edges]
        if not near:
            return
        self.loaded_edges.update(near)
        row_of = self.st.row_of
        for orig, src, dst, typ, source, note, evid, weight, by, created, seen in self.index.rows(near):
            rec = dict(src=row_of[src], dst=row_of[dst], type=normalize_type(typ), source=source, note=note,
                       evidence=evid, weight=1.0 if weight is None else weight, created_by=by, created_us=created,
                       seen_us=seen if seen is not None else created, orig=orig,
                       taken=bool(evid) and '"from"' in evid)
            self._put(rec)

    # -- bookkeeping
    def _put(self, rec):
        key = (rec["src"], rec["dst"], rec["type"])
        self.edges[key] = rec
        self.touching[rec["src"]].add(key)
        self.touching[rec["dst"]].add(key)
        self.pair_count[_pair(rec["src"], rec["dst"])] += 1
        if rec["source"] in _CAPPED:
            self.capped[rec["src"]].add(key)
            self.capped[rec["dst"]].add(key)
        return key

    def add(self, rec):
        key = (rec["src"], rec["dst"], rec["type"])
        if key in self.edges:
            self.remove(key)
        self._put(rec)
        self.added[key] = rec

    def remove(self, key):
        rec = self.edges.pop(key)
        for end in (rec["src"], rec["dst"]):
            self.touching[end].discard(key)
            self.capped[end].discard(key)
        self.pair_count[_pair(rec["src"], rec["dst"])] -= 1
        if rec["orig"] is not None:
            self.removed[key] = rec["orig"]
        else:
            self.added.pop(key, None)

    def joined(self, a, b) -> bool:
        return self.pair_count.get(_pair(a, b), 0) > 0

    def faded(self, rec) -> float:
        if rec["source"] not in _FADING:
            return rec["weight"]
        days = max(0.0, (self.ctx.now_us - (rec["seen_us"] or self.ctx.now_us)) / 86_400e6)
        return fade(rec["weight"], days, half_life_days=self.s.half_life_days)

    def _weakest(self, row):
        return min(self.capped[row], key=lambda k: (self.faded(self.edges[k]), k))

    def add_capped(self, rec) -> bool:
        """Add an automatic link unless it would be the weakest at a full end; evict the weakest."""
        strength = self.faded(rec)
        for end in (rec["src"], rec["dst"]):
            if len(self.capped[end]) >= self.s.max_degree and self.faded(self.edges[self._weakest(end)]) >= strength:
                self.counts["capped"] += 1
                return False
        for end in (rec["src"], rec["dst"]):
            while len(self.capped[end]) >= self.s.max_degree:
                self.remove(self._weakest(end))
                self.counts["evicted"] += 1
        self.add(rec)
        return True

    def _new(self, src, dst, typ, source, weight, evidence, seen_us=None):
        now = self.ctx.now_us
        return dict(src=src, dst=dst, type=typ, source=source, note=None, evidence=json.dumps(evidence),
                    weight=float(weight), created_by="linker", created_us=now,
                    seen_us=now if seen_us is None else seen_us, orig=None, taken="from" in evidence)

    # -- one entry
    def link_entry(self, m: int, pairs: dict, ev: dict, struct) -> None:
        # the edges of candidates that pass the gate (the others are never read)
        self.ensure([m, *pairs["c"][ev["linked"]].tolist(), *(t for _, t in struct if t is not None)])
        if self.ctx.linked[m]:
            for key in [k for k in self.capped[m] if self.edges[k]["source"] == "auto" and not self.edges[k]["taken"]]:
                self.remove(key)
                self.counts["rederived"] += 1
        takeovers = self._structural(m, struct)
        end, origin = m, None
        if m in self.superseded:
            end = self._newest(m)
            origin = self.st.ids[m]
        if end is not None:
            self.ensure([end])
            self._auto_links(m, end, origin, pairs, ev, set(takeovers))
        for old in takeovers:
            self._take_over(old, m)
        self.updates.setdefault(m, None)
        self.linked_rows.add(m)

    def _newest(self, row):
        seen = {row}
        while row in self.replaced_by and self.replaced_by[row] not in seen:
            row = self.replaced_by[row]
            seen.add(row)
        return row if row not in self.superseded else None

    def _structural(self, m, struct) -> list[int]:
        takeovers = []
        for typ, t in struct:
            if t is None:
                self.counts["missing_structure"] += 1
                continue
            if (m, t, typ) in self.edges:
                continue
            for key in [k for k in self.touching[m] if t in (k[0], k[1]) and self.edges[k]["source"] in _FADING]:
                self.remove(key)
            why = {"part_of": "a goal's parent", "supersedes": "the decision it replaces",
                   "derived_from": "an insight's evidence"}[typ]
            self.add(self._new(m, t, typ, "structure", 1.0, {"why": why, "signals": {}}))
            self.counts["structural"] += 1
            if typ == "supersedes":
                self.superseded.add(t)
                self.replaced_by[t] = m
                self.updates[t] = "superseded"
                takeovers.append(t)
        return takeovers

    def _auto_links(self, m, end, origin, pairs, ev, own):
        # entries superseded earlier in this run give their place in a candidate list to the next;
        # those this entry supersedes itself keep it (they were candidates when it was written)
        c = pairs["c"]
        fresh = np.array([x in self.superseded and not self.ctx.superseded[x] and x not in own for x in c.tolist()], dtype=bool)
        chosen = np.zeros(len(c), bool)
        nn = "nn"
        if "nn_floor" in pairs and use_exact_neighbours(ev["cos"], pairs["nn_floor"], (pairs["pos_nn"] != _SENTINEL) & ~fresh,
                                                        self.s.candidates):
            nn = "nnx"  # the index list may miss some of the best: the exact scan's list
            self.counts["nn_exact"] += 1
        for name, limit in (("index", self.s.candidates), (nn, self.s.candidates), ("session", self.s.session_candidates)):
            pos = pairs[f"pos_{name}"]
            live = np.flatnonzero((pos != _SENTINEL) & ~fresh)
            chosen[live[np.argsort(pos[live], kind="stable")][:limit]] = True
        ok = chosen & ev["linked"]
        idx = [i for i in np.flatnonzero(ok).tolist() if c[i] != end and c[i] not in self.superseded and not self.joined(end, c[i])]
        idx.sort(key=lambda i: (-ev["score"][i], -self.st.rank[c[i]]))
        for i in idx[: self.s.max_new]:
            rec = self._auto_record(m, end, origin, int(c[i]), {k: v[i] for k, v in ev.items()})
            if self.add_capped(rec):
                self.counts["links"] += 1

    def _auto_record(self, m, end, origin, c, e):
        st = self.st
        typ, m_is_src = link_type(
            KINDS[st.kind[m]], KINDS[st.kind[c]],
            fix_a=st.fix[m], problem_a=st.problem[m], progress_a=st.progress[m],
            fix_b=st.fix[c], problem_b=st.problem[c], progress_b=st.progress[c],
            a_later=bool(e["later"]), same_session=bool(e["time"] > 0), bridge_only=bool(e["bridge_only"]),
        )
        evidence = {
            "why": why_text(st, self.ctx.rel, m, c, e),
            "signals": {k: round(float(e[k]), 3) for k in ("share", "sem", "bridge", "time", "cue")},
            "score": round(float(e["score"]), 3),
        }
        if origin is not None:
            evidence["from"] = origin
        src, dst = (end, c) if m_is_src else (c, end)
        return self._new(src, dst, typ, "auto", float(e["score"]), evidence)

    def _take_over(self, old, new):
        self.ensure([old, new])
        self.ensure([x for k in self.touching[old] for x in k[:2]])
        keys = sorted(self.touching[old], key=lambda k: (-self.faded(self.edges[k]), k))
        for key in keys:
            rec = self.edges.get(key)
            if rec is None or rec["type"] == "supersedes" and rec["src"] == new:
                continue
            other = rec["dst"] if rec["src"] == old else rec["src"]
            moving = rec["source"] in _CAPPED
            if other == new:
                if rec["source"] in _FADING:
                    self.remove(key)
                continue
            if not moving and (rec["source"] not in _COPIED or rec["type"] in DOMINANCE_TYPES):
                continue
            if moving:
                self.remove(key)
            if self.joined(new, other):
                continue
            evidence = {"why": f"taken over from the decision it replaced ({self.st.ids[old]})", "from": self.st.ids[old]}
            if rec["evidence"]:
                try:
                    evidence["signals"] = json.loads(rec["evidence"]).get("signals", {})
                except (TypeError, ValueError, AttributeError):
                    pass
            weight = rec["weight"] * self.s.takeover if rec["source"] in _FADING else rec["weight"]
            src, dst = (new, other) if rec["src"] == old else (other, new)
            copy = self._new(src, dst, rec["type"], rec["source"], weight, evidence, seen_us=rec["seen_us"])
            if moving:
                if self.add_capped(copy):
                    self.counts["taken_over"] += 1
            else:
                self.add(copy)
                self.counts["taken_over"] += 1

    # -- the result
    def plan(self, report: dict) -> LinkPlan:
        add_rows = [
            {"src": self.st.ids[r["src"]], "dst": self.st.ids[r["dst"]], "type": r["type"], "source": r["source"],
             "note": r["note"], "evidence": r["evidence"], "weight": r["weight"], "created_by": r["created_by"],
             "created_at": r["created_us"], "seen_at": r["seen_us"]}
            for r in self.added.values()
        ]
        add = _edge_frame(add_rows)
        orig = sorted(self.removed.values())
        remove = conform(self.ctx.edges_input[orig], "edges") if orig else _NO_EDGES
        now = self.ctx.now_us
        updates = pl.DataFrame([(self.st.ids[r], status, now if r in self.linked_rows else None)
                                for r, status in self.updates.items()], schema=_UPDATES_SCHEMA, orient="row")
        report = dict(report)
        report.update({"links": int(self.counts["links"]), "structural": int(self.counts["structural"]),
                       "taken_over": int(self.counts["taken_over"]), "evicted": int(self.counts["evicted"]),
                       "capped": int(self.counts["capped"]), "rederived": int(self.counts["rederived"]),
                       "missing_structure": int(self.counts["missing_structure"]),
                       "added": add.height, "removed": remove.height})
        if self.ctx.neighbors is not None:
            report["nn_exact"] = int(self.counts["nn_exact"])  # entries that fell back to the exact scan
        return LinkPlan(add=add, remove=remove, entry_updates=updates, report=report)


def _edge_frame(rows: list[dict]) -> pl.DataFrame:
    """Edges-schema frame of planned edges (times in epoch microseconds, read as such by the
    schema's microsecond datetimes), built from row tuples in one call (no lazy query: one planned
    entry must not wait on polars' thread pool; a Series per column costs five times more).

    >>> _edge_frame([dict(src="a", dst="b", type="see_also", source="auto", note=None, evidence="{}",
    ...     weight=0.5, created_by="linker", created_at=1_700_000_000_000_000, seen_at=None)])["created_at"].dt.year()[0]
    2023
    """
    schema = SCHEMAS["edges"]
    if not rows:
        return _NO_EDGES
    return pl.DataFrame([tuple(r[name] for name in schema) for r in rows], schema=schema, orient="row")


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def why_text(stats: TermStats, rel, m: int, c: int, e: dict) -> str:
    """The evidence of a pair in words: "shared: line 3; similar meaning (0.30); ..."."""
    parts = []
    if e["shared_n"] > 0:
        am, ac = stats.anchors[m], stats.anchors[c]
        labels = dict(zip(am.terms, am.labels))
        other = set(ac.terms)
        shared = [t for t in am.terms if t in other]
        entity_words = {w for t in shared if t.startswith("e:") for w in t[2:].split()}
        shown = [t for t in shared if t.startswith("e:") or labels[t].lower() not in entity_words]
        shown.sort(key=lambda t: (-stats.w[stats.term_index[t]], labels[t].lower()))
        parts.append("shared: " + ", ".join(labels[t].lower() if t.startswith("t:") else t[2:] for t in shown[:3]))
    if e["sem"] > 0:
        parts.append(f"similar meaning ({e['cos']:.2f})")
    if e["bridge"] > 0:
        parts.append("via " + _bridge_label(stats, rel, m, c))
    if e["cue"] > 0:
        parts.append("a problem and its fix")
    if e["time"] > 0:
        minutes = int(abs(int(stats.time_us[m]) - int(stats.time_us[c])) // 60_000_000)
        parts.append(f"same session, {minutes} min apart")
    return "; ".join(parts)


def _bridge_label(stats, rel, m, c) -> str:
    em = {stats.term_index[t] for t in stats.anchors[m].terms if t.startswith("e:")}
    ec = {stats.term_index[t] for t in stats.anchors[c].terms if t.startswith("e:")}
    found = sorted((x, y) for x in em - ec for y in ec - em if (x, y) in rel.label)
    found.sort(key=lambda p: (bool(stats.hub[p[0]] or stats.hub[p[1]]), p))
    return rel.label[found[0]] if found else "the entity graph"
