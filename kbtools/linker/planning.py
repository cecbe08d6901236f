"""Plan the links of new entries: ``plan_links`` for one, ``plan_connect`` for many (seed 001, steps 2-7, section 5).

Semantics shared by both (so that they agree exactly): term statistics, and each entry's list of
its best candidates in the whole frame (``LinkerSettings.both_ends``, ``evidence.whole_lists``),
are those of the whole entries frame given; entries are linked in (created_at, id) order; an entry's candidates are the
linkable entries that are not superseded or archived and were either linked already (``linked_at``
set) or created earlier. ``plan_connect`` over ids gives the same links as calling ``plan_links``
for each id in that order and applying each plan (``apply_links``) before the next. A connect of
fewer than :data:`BOTH_ENDS_FROM` of the frame's entries reads each entry's own lists only.

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

import numpy as np
import polars as pl

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.linker.evidence import candidate_pairs, pair_evidence, relations, whole_lists
from kbtools.linker.rules import DECISION, KINDS, LINKER_DEFAULTS, LinkerSettings
from kbtools.linker.state import LinkPlan, LinkChoice, EdgeIndex, LinkState
from kbtools.linker.terms import TermStats, gc_paused, metadata_of
from kbtools.linker.wording import why_text
from kbtools.model.frames import among, rows_where
from kbtools.model.schema import SCHEMAS, conform

__all__ = ["LinkPlan", "plan_links", "plan_connect", "apply_links", "why_text"]

#: A connect reads the frame's lists (``LinkerSettings.both_ends``) when it links at least this share
#: of the bank's entries (a first connect, a relink); a smaller one reads each entry's own lists.
BOTH_ENDS_FROM = 0.25
#: Entries a connect links per chunk with a neighbour index
CHUNK_ROWS = 512


# ---------------------------------------------------------------- public door


def plan_links(entry_id, entries, edges, triples, *, vectors=None, cosine=None, neighbors=None, stats=None,
               settings: LinkerSettings = LINKER_DEFAULTS, now=None, edge_rows=None) -> LinkPlan:
    """Links for one entry already in ``entries`` (structural links, best ``max_new`` automatic
    links, degree cap, takeover by a replacing decision).

    ``neighbors``, with ``vectors``: a nearest-neighbour index over the entries' rows (a
    ``faiss.Index``, or any object with ``ntotal`` and ``search(x, k) -> (scores, rows)``).
    ``edge_rows(ids)``: the positions in ``edges`` of the rows with an end among ``ids`` (a store's
    index of the edges); None: ``edges`` is scanned for them.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
    ...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
    ...     "created_at": [t, t + dt.timedelta(seconds=30)]})
    >>> plan = plan_links("e2", entries, None, None, now=t)
    >>> plan.add.select("type", "source").rows(), plan.report["links"]
    ([('resolves', 'auto')], 1)
    """
    ctx = PlanContext.open(entries, edges, triples, stats, settings, now, vectors, cosine, neighbors)
    ctx.edge_rows = edge_rows
    row = ctx.stats.row_of.get(entry_id)
    if row is None:
        raise EntryNotFound(str(entry_id), "plan_links")
    if ctx.stats.kind[row] < 0:
        return LinkPlan.empty({"entry": entry_id, "skipped": "kind is not linked"})
    rows = np.array([row])
    pairs = candidate_pairs(ctx.stats, rows, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked,
                            settings=settings, vectors=vectors, neighbors=neighbors, eligible=ctx.eligible(),
                            cosine=cosine)
    struct = ctx.structural(row)
    ev = pair_evidence(ctx.stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=settings,
                       vectors=vectors, cosine=cosine, known_cos=pairs.get("cos"))
    state = LinkState(ctx, ctx.edge_index_for(row, pairs["c"][ev["linked"]], struct))  # only those can be linked
    state.link_entry(row, pairs, ev, struct, choice=LinkChoice(pairs, ev, ctx.stats, settings, state.index, 1))
    return state.plan({"entry": entry_id, "candidates": int(len(pairs["c"]))})


def plan_connect(entries, edges, triples, *, ids=None, vectors=None, cosine=None, neighbors=None, stats=None,
                 settings: LinkerSettings = LINKER_DEFAULTS, now=None, progress=None, chunk=None,
                 total: int | None = None) -> LinkPlan:
    """Links for many entries (default: those never linked), vectorised; the same links as
    ``plan_links`` one entry at a time in created_at order. ``progress(done, total)`` is called
    after each chunk. ``total``: the entries of the whole connect when ``ids`` is one of its parts
    (a job that commits in parts): whether the frame's lists are read (``BOTH_ENDS_FROM``) is decided
    on it, so that the parts plan what one call over all of them plans.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["e1", "e2"], "kind": ["event", "event"], "session_id": ["s1", "s1"],
    ...     "content": ["Line 3 keeps faulting with error E-217.", "Found it: the encoder cable on line 3 was loose."],
    ...     "created_at": [t, t + dt.timedelta(seconds=30)]})
    >>> plan_connect(entries, None, None, ids=[]).report["entries"]
    0
    """
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise ValidationError("total", total, "the entries of the whole connect, a whole number of 0 or more")
    ctx = PlanContext.open(entries, edges, triples, stats, settings, now, vectors, cosine, neighbors)
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
    # the decisions' structural links first: the entries they supersede widen every candidate list
    # (``margin``); the others' are read as each entry is linked
    structs = {r: ctx.structural(r) for r in chosen[st.kind[chosen] == DECISION].tolist()}
    margin = len({t for s in structs.values() for typ, t in s if typ == "supersedes" and t is not None})
    if settings.both_ends and (len(chosen) if total is None else total) < BOTH_ENDS_FROM * len(st.ids):
        # a small connect on a big bank (the night's new entries): each entry's own lists, as a
        # write reads them; the frame's lists are a pass over the whole bank
        settings = settings.with_(both_ends=False)
    eligible = ctx.eligible()
    if settings.both_ends:  # the frame's lists, made once here
        whole_lists(st, rel=ctx.rel, eligible=eligible, settings=settings, vectors=vectors, cosine=cosine,
                    neighbors=neighbors)
    n = max(len(st.ids), 1)
    # without an index every entry of a chunk scans the bank densely: (chunk x bank) scores
    size = chunk or (CHUNK_ROWS if neighbors is not None else max(1, min(CHUNK_ROWS, 4_000_000 // n)))
    count = len(chosen)
    state = LinkState(ctx, ctx.edge_index())
    # the link state makes a few small objects per link and no cycles: the collector would walk the
    # bank's objects again and again
    with gc_paused():
        for start in range(0, count, size):
            rows = chosen[start : start + size]
            pairs = candidate_pairs(st, rows, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked, settings=settings,
                                    vectors=vectors, neighbors=neighbors, eligible=eligible, margin=margin,
                                    cosine=cosine)
            ev = pair_evidence(st, pairs["m"], pairs["c"], rel=ctx.rel, settings=settings, vectors=vectors,
                               cosine=cosine, known_cos=pairs.get("cos"))
            choice = LinkChoice(pairs, ev, st, settings, state.index, len(rows))
            state.measure_full(rows.tolist() + choice.c)
            bounds = np.searchsorted(pairs["b"], np.arange(len(rows) + 1)).tolist()
            for b, row in enumerate(rows.tolist()):
                struct = structs[row] if row in structs else ctx.structural(row)
                state.link_entry(row, pairs, ev, struct, bounds[b], bounds[b + 1], choice, b)
            if progress is not None:
                progress(start + len(rows), count)
        plan = state.plan({"entries": count})  # the records' evidence is written here: no collector either
        del state  # its records freed before the collector runs again: it would walk them all
    return plan


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


class PlanContext:
    """The frames of one call, read once: statistics, relations, masks, edges with row numbers."""

    edge_rows = None  # ids -> positions of the edges touching them (see ``plan_links``)

    @classmethod
    def open(cls, entries, edges, triples, stats, settings, now, vectors, cosine, neighbors=None):
        self = cls()
        if not isinstance(entries, pl.DataFrame):
            raise ValidationError("entries", type(entries).__name__, "must be a polars DataFrame")
        if stats is None:
            known = triple_entities(triples)
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
        self.vectors, self.cosine = vectors, cosine
        self.rel = cached_relations(stats, triples)
        self.superseded, self.open_, self.linked = _entry_flags(stats, entries)
        self.metadata = entries["metadata"] if "metadata" in entries.columns else None
        if edges is None:
            edges = pl.DataFrame(schema=SCHEMAS["edges"])
        if not isinstance(edges, pl.DataFrame):
            raise ValidationError("edges", type(edges).__name__, "must be a polars DataFrame")
        self.edges_input = edges
        return self

    def eligible(self) -> np.ndarray:
        """Linkable and not archived (superseded or not), per row."""
        held = self.stats._cache.get("eligible")
        if held is None or held[0] is not self.open_:  # the flags are kept per entries frame
            held = self.stats._cache["eligible"] = (self.open_, (self.open_ | self.superseded) & (self.stats.kind >= 0))
        return held[1]

    def edge_index(self) -> "EdgeIndex":
        """The index of the whole edges frame, kept on the statistics for the last frame seen."""
        cache = self.stats._cache
        held = cache.get("edges")
        if held is None or held[0] is not self.edges_input:
            held = (self.edges_input, EdgeIndex(self.edges_input.with_row_index("_orig"), self.stats))
            cache["edges"] = held
        return held[1]

    def edge_index_for(self, row: int, candidates: np.ndarray, struct) -> "EdgeIndex":
        """The edges one entry's linking can read: the whole frame's index when this frame was seen
        before (a bank linking entry after entry), else those touching the entry, its candidates,
        its targets, the decisions that replaced it and the neighbours of a decision it replaces."""
        cache = self.stats._cache
        held = cache.get("edges")
        if (held is not None and held[0] is self.edges_input) or cache.get("edges_seen") is self.edges_input:
            return self.edge_index()
        cache["edges_seen"] = self.edges_input
        frame = self.edges_input
        relevant = {row, *candidates.tolist(), *(t for _, t in struct if t is not None), *self.replacers(row, frame)}
        ids = [self.stats.ids[r] for r in relevant]
        touching = self.edges_touching(ids)
        old = [self.stats.ids[t] for typ, t in struct if typ == "supersedes" and t is not None]
        if old:
            near = touching.filter(among("src", old) | among("dst", old))
            touching = self.edges_touching(ids + list(set(near["src"].to_list()) | set(near["dst"].to_list())))
        return EdgeIndex(touching, self.stats)

    def edges_touching(self, ids: list[str]) -> pl.DataFrame:
        """The input edges with an end among ``ids``, with their row numbers (``_orig``)."""
        if self.edge_rows is None:
            return rows_where(self.edges_input, among("src", ids) | among("dst", ids), index="_orig")
        at = pl.Series("_orig", self.edge_rows(ids), dtype=pl.UInt32)
        return self.edges_input.select(pl.all().gather(at)).with_columns(at)

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
        chain, cur = [], self.stats.ids[row]
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


def cached_relations(stats: TermStats, triples):
    """Relations of the bank's entity terms, kept on the statistics for the last triples seen (the
    same frame, or equal rows: a bank reads its triples anew on every call)."""
    cache = stats._relations
    if cache and (cache[0] is triples or _same_triples(cache[0], triples)):
        cache[0] = triples
        return cache[1]
    rel = relations(stats, triples)
    cache[:] = [triples, rel]
    return rel


def _same_triples(a, b) -> bool:
    rows = [0 if t is None else t.height for t in (a, b)]
    if rows == [0, 0]:
        return True
    return a is not None and b is not None and a.columns == b.columns and a.equals(b)


def triple_entities(triples) -> tuple[str, ...]:
    if triples is None or triples.height == 0:
        return ()
    return tuple(set(triples["subject"].drop_nulls().to_list()) | set(triples["object"].drop_nulls().to_list()))
