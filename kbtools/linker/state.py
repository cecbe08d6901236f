"""The sequential state of a linking plan (seed 001, steps 5-7): the input edges by entry row
(``EdgeIndex``), each chunk's candidate order (``LinkChoice``) and the links added, evicted and taken
over entry after entry (``LinkState``), returned as a ``LinkPlan``. ``planning`` drives it."""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import polars as pl
import scipy.sparse as sp

from kbtools.errors import ValidationError
from kbtools.linker.evidence import SENTINEL, pair_evidence
from kbtools.linker.rules import GOAL, KINDS, LinkerSettings, link_type
from kbtools.linker.terms import TermStats, row_positions
from kbtools.linker.wording import TEXT_VALUES, evidence_texts
from kbtools.model.fading import fade
from kbtools.model.schema import SCHEMAS, TIME, conform, rows_frame
from kbtools.model.vocab import DOMINANCE_TYPES, normalize_type

__all__ = ["LinkPlan"]

_FADING = ("auto", "review", "feedback")
_CAPPED = ("auto", "review")
_NONE: frozenset = frozenset()
_COPIED = ("feedback", "manual", "author")
_UPDATES_SCHEMA = {"id": pl.String, "status": pl.String, "linked_at": TIME}
_NO_EDGES = pl.DataFrame(schema=SCHEMAS["edges"])  #: frames are immutable: one empty plan frame serves all
_COUNTS = ("links", "structural", "taken_over", "evicted", "capped", "rederived", "missing_structure")


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
        return cls(_NO_EDGES, _NO_EDGES, pl.DataFrame(schema=_UPDATES_SCHEMA), dict(report or {}))


#: Up to this many edges, an edge index reads its columns into Python once; above, row by row.
_EDGES_READ_WHOLE = 200_000
_EDGE_COLUMNS = ["_orig", "src", "dst", "type", "source", "note", "evidence", "weight", "created_by", "created_at", "seen_at"]


def _edge_columns(frame: pl.DataFrame, stats: TermStats):
    """Per edge: its ends' rows in the statistics (-1: none), its canonical type's code, its
    supersedes, capped and part_of flags. A few edges (one entry's neighbourhood) look their ends up
    one by one; many (a connect's whole frame) in one polars pass, which hashes every id of the bank."""
    if frame.height * 16 < len(stats.ids):
        row_of = stats.row_of

        def rows_of(ends: pl.Series) -> np.ndarray:
            return np.fromiter((row_of.get(x, -1) for x in ends.to_list()), np.int64, len(ends))
    else:
        ids = stats.id_series()
        rows = pl.int_range(0, len(ids), dtype=pl.Int64, eager=True)

        def rows_of(ends: pl.Series) -> np.ndarray:
            return ends.cast(pl.String).replace_strict(ids, rows, default=-1, return_dtype=pl.Int64).fill_null(-1).to_numpy()

    types = frame["type"].cast(pl.String).fill_null("")
    names = types.unique(maintain_order=True).to_list()
    canon = sorted({normalize_type(t) for t in names})
    code = np.asarray(types.replace_strict(names, [canon.index(normalize_type(t)) for t in names], return_dtype=pl.Int64)
                      .to_numpy(), dtype=np.int64)
    sup = (types == "supersedes").to_numpy()
    capped = frame["source"].cast(pl.String).is_in(list(_CAPPED)).fill_null(False).to_numpy()
    part = (types == "part_of").to_numpy()
    return rows_of(frame["src"]), rows_of(frame["dst"]), code, len(canon), sup, capped, part


class EdgeIndex:
    """Edges (with their row number in the input, ``_orig``) by entry row (its row in the
    statistics ``stats``): an adjacency over rows (CSR) to load the edges near an entry when
    it is first read, and who replaced whom."""

    def __init__(self, frame: pl.DataFrame, stats: TermStats):
        schema = SCHEMAS["edges"]

        def column(name: str) -> pl.Expr:  # the schema's dtype (null when missing), times in epoch microseconds
            expr = pl.col(name).cast(schema[name]) if name in frame.columns else pl.lit(None, dtype=schema[name]).alias(name)
            return expr.dt.epoch("us") if name in ("created_at", "seen_at") else expr

        self.frame = frame.select(pl.col("_orig"), *(column(c) for c in _EDGE_COLUMNS[1:]))
        self._cols = None
        n = len(stats.ids)
        src, dst, code, n_types, sup_flag, capped_flag, part_flag = _edge_columns(self.frame, stats)
        known = np.flatnonzero((src >= 0) & (dst >= 0))
        # the last edge per key (src, dst, canonical type), sorted by the pair of rows (their counts too)
        n_pairs = max(n, 1)
        if 2.0 * n_pairs * n_pairs * max(n_types, 1) >= 2.0**62:
            raise ValidationError("edges", f"{n} entries", "too many rows for the edge index's int64 keys")
        lo, hi = np.minimum(src[known], dst[known]), np.maximum(src[known], dst[known])
        key = ((lo * n_pairs + hi) * 2 + (src[known] > dst[known])) * n_types + code[known]
        order = np.argsort(key, kind="stable")  # equal keys in input order: the last is kept
        ordered = key[order]
        last = np.append(ordered[1:] != ordered[:-1], True) if ordered.size else np.zeros(0, bool)
        if not last.all():
            known = np.sort(known[order[last]])
        pairs = ordered[last] // (2 * n_types) if ordered.size else ordered  # sorted pair keys, one per edge
        end_rows = np.concatenate([src[known], dst[known]])
        # the edges of each row, in input order: a counting sort by row (a sparse matrix's conversion)
        by_row = sp.csr_matrix((np.ones(len(end_rows), np.int8), (end_rows, np.arange(len(end_rows)))),
                               shape=(n, max(len(end_rows), 1)))
        self.edge_of = np.concatenate([known, known])[by_row.indices]
        self.start = by_row.indptr.astype(np.int64)
        part = known[part_flag[known]]
        #: per row, the entry it is part_of (-1: none): a section's document
        self.whole = np.full(n, -1, np.int64)
        self.whole[src[part]] = dst[part]
        #: per row, the document head a link to it brings along (-1: none; a goal's parent is not one);
        #: None when no row is a section of a document
        head = np.where(stats.kind != GOAL, self.whole, -1)
        self.head = head.tolist() if (head >= 0).any() else None
        sup = known[sup_flag[known]]
        self.replaced_by = dict(zip(dst[sup].tolist(), src[sup].tolist()))
        # what the state asks of edges it has not loaded: each row's capped links (a list), each pair's edges
        capped = known[capped_flag[known]]
        loops = src[capped] == dst[capped]
        self.degrees = np.bincount(np.concatenate([src[capped], dst[capped][~loops]]), minlength=n).tolist()
        starts = np.flatnonzero(np.append(True, pairs[1:] != pairs[:-1])) if pairs.size else np.zeros(0, np.int64)
        self.pair_keys = pairs[starts]
        self.pair_edges = np.diff(np.append(starts, pairs.size))
        self.n = n_pairs

    def pair_counts_of(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """How many input edges join rows a[i] and b[i] (either way, any type), per i."""
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        if self.pair_keys.size == 0 or b.size == 0:
            return np.zeros(b.size, np.int64)
        keys = np.minimum(a, b) * self.n + np.maximum(a, b)
        at = np.minimum(np.searchsorted(self.pair_keys, keys), self.pair_keys.size - 1)
        return np.where(self.pair_keys[at] == keys, self.pair_edges[at], 0)

    def same_whole(self, kind: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per i, whether rows a[i] and b[i] are parts of one entry by input part_of edges (a link
        would repeat the document); not goals, whose part_of the linking makes from metadata."""
        whole = self.whole[a]
        return (whole >= 0) & (whole == self.whole[b]) & (kind[a] != GOAL) & (kind[b] != GOAL)

    def pair_count(self, a: int, b: int) -> int:
        """How many input edges join rows a and b (either way, any type)."""
        return int(self.pair_counts_of(np.array([a]), np.array([b]))[0])

    def rows(self, edges) -> list[tuple]:
        """The rows of these edges (positions in ``frame``) as tuples of ``_EDGE_COLUMNS``, from
        columns read into Python once (a polars gather per entry waits on its thread pool)."""
        edges = np.asarray(edges, np.int64)
        if self.frame.height > _EDGES_READ_WHOLE:  # a big bank: gather the rows asked for
            return self.frame[edges].rows()
        if self._cols is None:
            self._cols = [np.array(self.frame[c].to_list() + [None], dtype=object)[:-1] for c in _EDGE_COLUMNS]
        return list(zip(*(col[edges].tolist() for col in self._cols)))

    def edges_near(self, rows) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        if rows.size == 0:
            return np.zeros(0, np.int64)
        return np.unique(self.edge_of[row_positions(self.start, rows)[1]])


class LinkChoice:
    """The automatic-link candidates of a chunk's rows past the gate (each source's first ``candidates``,
    either end's whole-frame list), each row's in the order tried, with the input edges of each pair."""

    def __init__(self, pairs: dict, ev: dict, stats: TermStats, settings: LinkerSettings, index: "EdgeIndex", n_rows: int,
                 end: int | None = None):
        b, c, k, rank = pairs["b"], pairs["c"], settings.candidates, stats.rank
        ends = pairs["m"] if end is None else np.full(len(c), end)
        # a source's positions in a row run 0, 1, 2, ...: its first k
        listed = (pairs["pos_index"] < k) | (pairs["pos_nn"] < k) | (pairs["pos_session"] < settings.session_candidates) \
            | (pairs["pos_own"] != SENTINEL) | (pairs["pos_rev"] != SENTINEL)
        ok = np.flatnonzero(listed & ev["linked"] & ~index.same_whole(stats.kind, ends, c))
        # by the better of the pair's places in either end's whole-frame list (SENTINEL in neither), as a
        # batch takes each entry's best, then each entry's second, ...; then by affinity, the newer entry
        both = np.minimum(pairs["pos_own"][ok], pairs["pos_rev"][ok])
        self.pairs = ok[np.lexsort((-rank[c[ok]], -ev["affinity"][ok], both, b[ok]))]
        #: what a record and its evidence text read of each pair's evidence (arrays over ``pairs``)
        self.text_values = {k: ev[k][self.pairs] for k in TEXT_VALUES}
        #: per row its pairs' bounds; per pair its candidate, input edges, score and type key (lists)
        self.bounds = np.searchsorted(b[self.pairs], np.arange(n_rows + 1)).tolist()
        self.c = c[self.pairs].tolist()
        self.base = index.pair_counts_of(ends[self.pairs], c[self.pairs]).tolist()
        self.score = self.text_values["score"].tolist()
        self.affinity = ev["affinity"][self.pairs].tolist()
        self.type_key = _type_keys(stats, {k: ev[k][self.pairs] for k in _TYPE_INPUTS}).tolist()


class LinkState:
    """Edges near the entries being linked, as dictionaries, updated link by link; ``ctx``: the
    call's ``planning.PlanContext``. Input edges are loaded (``ensure``) only for rows whose edges
    are read one by one (a full end, a takeover, structure, a relink); whether a pair is joined
    and a row's degree come from the ``EdgeIndex`` counts plus this plan's changes."""

    def __init__(self, ctx, index: EdgeIndex):
        self.ctx, self.st, self.s = ctx, ctx.stats, ctx.settings
        self.index = index
        self.edges: dict[tuple, dict] = {}
        #: per row, the keys of its capped (automatic and review) records and of its others
        self.touching: dict[int, set] = defaultdict(set)
        self.capped: dict[int, set] = defaultdict(set)
        self.added: dict[tuple, dict] = {}
        self.removed: dict[tuple, int] = {}
        self.superseded: set[int] = set(np.flatnonzero(ctx.superseded).tolist())
        self.fresh_superseded: set[int] = set()  #: superseded by this plan (they were candidates before)
        self.replaced_by: dict[int, int] = dict(index.replaced_by)  #: per superseded row, the row replacing it
        self.updates: dict[int, str | None] = {}
        self.counts = defaultdict(int)
        self.linked_rows: set[int] = set()
        self.pair_delta: dict[tuple, int] = defaultdict(int)  #: edges joining a pair, added minus removed
        self.degree_delta: dict[int, int] = defaultdict(int)  #: capped links of a row, added minus removed
        self.loaded_rows: set[int] = set()
        self.loaded_edges: set[int] = set()
        self._unwritten: list[dict] = []  #: automatic records planned here, their evidence text not yet written

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
    def _put(self, rec) -> None:
        key = (rec["src"], rec["dst"], rec["type"])
        self.edges[key] = rec
        held = self.capped if rec["source"] in _CAPPED else self.touching
        held[rec["src"]].add(key)
        held[rec["dst"]].add(key)

    def _touching(self, row) -> set:
        """The keys of every record touching the row (``touching`` and ``capped``)."""
        return self.touching.get(row, _NONE) | self.capped.get(row, _NONE)

    def _count(self, rec, step: int) -> None:
        src, dst = rec["src"], rec["dst"]
        self.pair_delta[(src, dst) if src < dst else (dst, src)] += step
        if rec["source"] in _CAPPED:
            self.degree_delta[src] += step
            if dst != src:
                self.degree_delta[dst] += step

    def degree(self, row: int) -> int:
        """The automatic (capped) links the row holds now."""
        return self.index.degrees[row] + self.degree_delta.get(row, 0)

    def add(self, rec, base: int | None = None):
        """Add (or replace) a record; ``base``: the input edges of its pair, when known."""
        key = (rec["src"], rec["dst"], rec["type"])
        if key not in self.edges and (self.index.pair_count(rec["src"], rec["dst"]) if base is None else base):
            self.ensure([rec["src"], rec["dst"]])  # an input edge of this key may not be loaded yet
        if key in self.edges:
            self.remove(key)
        self._put(rec)
        self._count(rec, 1)
        self.added[key] = rec

    def remove(self, key):
        rec = self.edges.pop(key)
        rec["gone"] = True  # no longer planned: its evidence text is not written (a record is never added again)
        held = self.capped if rec["source"] in _CAPPED else self.touching
        for end in (rec["src"], rec["dst"]):
            held[end].discard(key)
        self._count(rec, -1)
        if rec["orig"] is not None:
            self.removed[key] = rec["orig"]
        else:  # planned here
            self.added.pop(key, None)

    def joined(self, a, b) -> bool:
        return self.pair_delta.get(_pair(a, b), 0) + self.index.pair_count(a, b) > 0

    def faded(self, rec) -> float:
        """The record's weight faded to the plan's ``now``."""
        if rec["source"] not in _FADING:
            return rec["weight"]
        days = max(0.0, (self.ctx.now_us - (rec["seen_us"] or self.ctx.now_us)) / 86_400e6)
        return fade(rec["weight"], days, half_life_days=self.s.half_life_days)

    def strength(self, rec) -> float:
        """A capped link's strength for the degree cap: its pair's affinity (scores saturate) times its fading."""
        held = rec.get("strength")
        if held is None:
            self._measure([rec])
            held = rec["strength"]
        return held

    def _measure(self, recs) -> None:
        """Each input link's ``strength``, its pair's affinity computed now (one batch)."""
        ms = np.array([r["src"] for r in recs], np.int64)
        cs = np.array([r["dst"] for r in recs], np.int64)
        affinity = pair_evidence(self.st, ms, cs, rel=self.ctx.rel, settings=self.s, vectors=self.ctx.vectors,
                                 cosine=self.ctx.cosine)["affinity"]
        for rec, value in zip(recs, affinity.tolist()):
            rec["strength"] = value * (self.faded(rec) / rec["weight"] if rec["weight"] > 0 else 0.0)

    def measure_full(self, rows) -> None:
        """Load the stored links of those of ``rows`` whose ends are full and measure them in one batch
        (what ``add_capped`` compares a new link with): a chunk's at once, not one end at a time."""
        cap, degrees = self.s.max_degree, self.index.degrees
        full = [r for r in set(rows) if degrees[r] >= cap]
        if not full:
            return
        self.ensure(full)
        recs = {id(rec): rec for r in full for rec in (self.edges[key] for key in self.capped[r]) if "strength" not in rec}
        if recs:
            self._measure(list(recs.values()))

    def _weakest(self, row):
        """The key of the row's weakest capped link (``strength``, then key)."""
        if self.index.degrees[row]:  # its input links, to compare them with those planned here
            self.ensure([row])
        edges = self.edges
        unmeasured = [edges[key] for key in self.capped[row] if "strength" not in edges[key]]
        if unmeasured:
            self._measure(unmeasured)
        return min(self.capped[row], key=lambda key: (edges[key]["strength"], key))

    def add_capped(self, rec, base: int | None = None) -> bool:
        """Add an automatic link unless it would be the weakest at a full end; evict the weakest."""
        cap, degrees, delta, src, dst = self.s.max_degree, self.index.degrees, self.degree_delta, rec["src"], rec["dst"]
        if degrees[src] + delta.get(src, 0) >= cap or degrees[dst] + delta.get(dst, 0) >= cap:
            full = [end for end in (src, dst) if degrees[end] + delta.get(end, 0) >= cap]
            strength = self.strength(rec)
            weakest = {}
            for end in full:
                weakest[end] = self._weakest(end)
                if self.edges[weakest[end]]["strength"] >= strength:
                    self.counts["capped"] += 1
                    rec["gone"] = True  # never planned (its text is not written)
                    return False
            for end in full:
                while self.degree(end) >= cap:
                    key = weakest.pop(end, None)  # still the weakest unless the other end's eviction removed it
                    self.remove(key if key in self.edges else self._weakest(end))
                    self.counts["evicted"] += 1
        self.add(rec, base)
        return True

    def _new(self, src, dst, typ, source, weight, evidence, seen_us=None):
        """A record planned now; ``evidence``: a dictionary (None: its text is written later)."""
        now = self.ctx.now_us
        return {"src": src, "dst": dst, "type": typ, "source": source, "note": None,
                "evidence": None if evidence is None else json.dumps(evidence), "weight": float(weight),
                "created_by": "linker", "created_us": now, "seen_us": now if seen_us is None else seen_us,
                "orig": None, "taken": evidence is not None and "from" in evidence}

    # -- one entry
    def link_entry(self, m: int, pairs: dict, ev: dict, struct, lo: int = 0, hi: int | None = None,
                   choice: LinkChoice | None = None, b: int = 0) -> None:
        """Link entry row ``m`` to its candidates ``pairs``/``ev`` [lo:hi], row ``b`` of ``choice``."""
        hi = len(pairs["c"]) if hi is None else hi
        if self.ctx.linked[m]:
            self.ensure([m])
            for key in [k for k in self.capped[m] if self.edges[k]["source"] == "auto" and not self.edges[k]["taken"]]:
                self.remove(key)
                self.counts["rederived"] += 1
        takeovers = self._structural(m, struct)
        end, origin = m, None
        if m in self.superseded:
            end = self._newest(m)
            origin = self.st.ids[m]
        if end is not None:
            if choice is not None and end == m and not (self.fresh_superseded and self._fresh_among(pairs["c"][lo:hi], takeovers)):
                self._chosen_links(m, choice, b)
            else:
                self._auto_links(m, end, origin, pairs, ev, set(takeovers), lo, hi)
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
        if struct:
            self.ensure([m, *(t for _, t in struct if t is not None)])
        for typ, t in struct:
            if t is None:
                self.counts["missing_structure"] += 1
                continue
            if (m, t, typ) in self.edges:
                continue
            for key in [k for k in self._touching(m) if t in (k[0], k[1]) and self.edges[k]["source"] in _FADING]:
                self.remove(key)
            why = {"part_of": "a goal's parent", "supersedes": "the decision it replaces",
                   "derived_from": "an insight's evidence"}[typ]
            self.add(self._new(m, t, typ, "structure", 1.0, {"why": why, "signals": {}}))
            self.counts["structural"] += 1
            if typ == "supersedes":
                self.superseded.add(t)
                if not self.ctx.superseded[t]:
                    self.fresh_superseded.add(t)
                self.replaced_by[t] = m
                self.updates[t] = "superseded"
                takeovers.append(t)
        return takeovers

    def _fresh_among(self, candidates: np.ndarray, own) -> bool:
        """Whether one of these candidates was superseded during this plan by another entry."""
        fresh = self.fresh_superseded
        return bool(fresh) and any(x in fresh and x not in own for x in candidates.tolist())

    def _chosen_links(self, m, choice: LinkChoice, b: int, end=None, origin=None):
        """The automatic links of entry m, row ``b`` of ``choice``, made in the name of ``end`` (m
        itself, or the decision replacing it, whose id ``origin`` names m)."""
        end = m if end is None else end
        superseded, delta, cs, base, most = self.superseded, self.pair_delta, choice.c, choice.base, self.s.max_new
        lo, hi = choice.bounds[b], choice.bounds[b + 1]
        heads = self.index.head if self.s.document_heads else None
        tried = []  # read before any is added
        for p in range(lo, hi):
            c = cs[p]
            if c != end and c not in superseded and base[p] + delta.get((end, c) if end < c else (c, end), 0) <= 0:
                if heads is not None and heads[c] >= 0:  # a section of another document: its head may come along
                    tried = self._tried_with_heads(end, choice, lo, hi, heads)
                    break
                tried.append(p)
                if len(tried) == most:
                    break
        if not tried:
            return
        # the common link (new key, no input edge, neither end full) inline, repeating what
        # ``_auto_record`` and ``add_capped`` do (a whole-bank connect plans 450,000 links)
        cap, degrees, degree_delta, edges, now = self.s.max_degree, self.index.degrees, self.degree_delta, self.edges, \
            self.ctx.now_us
        unwritten, added, capped, types = self._unwritten, self.added, self.capped, choice.type_key
        linked = 0
        for p in tried:
            c = cs[p]
            typ, m_is_src = type_of_key(types[p])
            src, dst = (end, c) if m_is_src else (c, end)
            key = (src, dst, typ)
            if (base[p] or key in edges or degrees[src] + degree_delta.get(src, 0) >= cap
                    or degrees[dst] + degree_delta.get(dst, 0) >= cap or not _INLINE_LINKS):
                rec = self._auto_record(m, end, origin, choice, p)
                rec["strength"] = choice.affinity[p]
                linked += self.add_capped(rec, base[p])
                continue
            rec = {"src": src, "dst": dst, "type": typ, "source": "auto", "note": None, "evidence": None,
                   "weight": float(choice.score[p]), "created_by": "linker", "created_us": now, "seen_us": now,
                   "orig": None, "taken": origin is not None, "words": (m, c, choice, p, origin),
                   "strength": choice.affinity[p]}
            unwritten.append(rec)
            edges[key] = added[key] = rec
            capped[src].add(key)
            capped[dst].add(key)
            delta[(src, dst) if src < dst else (dst, src)] += 1
            degree_delta[src] += 1
            if dst != src:
                degree_delta[dst] += 1
            linked += 1
        self.counts["links"] += linked

    def _tried_with_heads(self, end, choice: LinkChoice, lo: int, hi: int, heads: list) -> list[int]:
        """The pairs ``lo:hi`` of ``choice`` that ``end`` links, in order: up to ``max_new`` free
        candidates, and right after a section of another document that document's head when the head
        is a free candidate of the same list (beyond ``max_new``: the head names what the section is
        part of; the degree cap still holds)."""
        superseded, delta, cs, base = self.superseded, self.pair_delta, choice.c, choice.base

        def free(p: int) -> bool:
            c = cs[p]
            return c != end and c not in superseded and base[p] + delta.get((end, c) if end < c else (c, end), 0) <= 0

        place = None
        tried, chosen, heads_taken = [], set(), 0
        for p in range(lo, hi):
            c = cs[p]
            if c in chosen or not free(p):
                continue
            tried.append(p)
            chosen.add(c)
            d = heads[c]
            if d >= 0 and d not in chosen:
                if place is None:
                    place = {cs[q]: q for q in range(hi - 1, lo - 1, -1)}  # each candidate's first pair
                q = place.get(d)
                if q is not None and free(q):
                    tried.append(q)
                    chosen.add(d)
                    heads_taken += 1
            if len(tried) - heads_taken >= self.s.max_new:
                break
        return tried

    def _auto_links(self, m, end, origin, pairs, ev, own, lo, hi):
        """``_chosen_links`` from entry m's candidates ``lo:hi``, those superseded earlier in this plan
        giving their places to the next, except those m supersedes itself (``own``)."""
        pairs = {k: v[lo:hi] for k, v in pairs.items()}
        pairs["b"] = np.zeros(hi - lo, np.int64)
        if self.fresh_superseded:
            fresh = np.array([x in self.fresh_superseded and x not in own for x in pairs["c"].tolist()], bool)
            for name in ("pos_index", "pos_nn", "pos_session"):  # each source's places renumbered without them
                pos = pairs[name]
                live = np.flatnonzero((pos != SENTINEL) & ~fresh)
                pairs[name] = np.full(len(pos), SENTINEL, np.int64)
                pairs[name][live[np.argsort(pos[live], kind="stable")]] = np.arange(len(live))
        ev = {k: v[lo:hi] for k, v in ev.items()}
        self._chosen_links(m, LinkChoice(pairs, ev, self.st, self.s, self.index, 1, end=end), 0, end, origin)

    def _auto_record(self, m, end, origin, choice: LinkChoice, p: int):
        """The automatic link of entry m (as ``end``) to pair ``p`` of ``choice``; its text is written later."""
        c = choice.c[p]
        typ, m_is_src = type_of_key(choice.type_key[p])
        src, dst = (end, c) if m_is_src else (c, end)
        rec = self._new(src, dst, typ, "auto", float(choice.score[p]), None)
        rec["taken"] = origin is not None  # only a taken-over link's evidence says "from"
        rec["words"] = (m, c, choice, p, origin)
        self._unwritten.append(rec)
        return rec

    def _write(self, batch: list[dict]) -> None:
        """Write these automatic links' evidence texts (``wording.evidence_texts``)."""
        if batch:
            words = [rec.pop("words") for rec in batch]
            m, c, values = _text_inputs(words)
            texts = evidence_texts(self.st, self.ctx.rel, m, c, values, [w[4] for w in words])
            for rec, text in zip(batch, texts):
                rec["evidence"] = text

    def _take_over(self, old, new):
        self.ensure([old, new])
        self.ensure([x for k in self._touching(old) for x in k[:2]])
        keys = sorted(self._touching(old), key=lambda k: (-self.faded(self.edges[k]), k))
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
            if "words" in rec:  # an automatic link planned here: its text is written now
                self._write([rec])
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
        self._write([rec for rec in self._unwritten if "words" in rec and "gone" not in rec])
        self._unwritten.clear()
        add = _planned_edges(list(self.added.values()), self.st.ids)
        orig = sorted(self.removed.values())
        remove = conform(self.ctx.edges_input[orig], "edges") if orig else _NO_EDGES
        now, ids = self.ctx.now_us, self.st.ids  # status None when unchanged; linked_at now for an entry linked here
        updates = rows_frame([(ids[r], status, now if r in self.linked_rows else None) for r, status in self.updates.items()],
                             _UPDATES_SCHEMA)
        counts = {name: int(self.counts[name]) for name in _COUNTS}
        return LinkPlan(add=add, remove=remove, entry_updates=updates,
                        report={**report, **counts, "added": add.height, "removed": remove.height})


def _planned_edges(records: list[dict], ids) -> pl.DataFrame:
    """Edges-schema frame of planned records (rows numbered by ``ids``, times in epoch microseconds).

    >>> recs = [dict(src=0, dst=1, type="see_also", source="auto", note=None, evidence="{}", weight=0.5,
    ...     created_by="linker", created_us=1_700_000_000_000_000, seen_us=None)] * 3
    >>> frame = _planned_edges(recs, ("a", "b"))
    >>> frame.columns[:3], frame["dst"].to_list(), frame["created_at"].dt.year()[0]
    (['src', 'dst', 'type'], ['b', 'b', 'b'], 2023)
    """
    if not records:
        return _NO_EDGES
    return rows_frame([(ids[r["src"]], ids[r["dst"]], *(r[key] for key in _RECORD_COLUMNS)) for r in records],
                      SCHEMAS["edges"])


#: A record's keys of the edges schema's columns after src and dst, in order (times in microseconds)
_RECORD_COLUMNS = tuple({"created_at": "created_us", "seen_at": "seen_us"}.get(c, c) for c in SCHEMAS["edges"])[2:]


_TYPE_FLAGS = ("fix_a", "problem_a", "progress_a", "fix_b", "problem_b", "progress_b", "a_later", "same_session",
               "bridge_only")


def _type_keys(stats: TermStats, ev: dict) -> np.ndarray:
    """``link_type``'s arguments for each pair as one integer: two kind codes and nine flags."""
    ms, cs = ev["m"], ev["c"]

    def cues(rows):  # fix, problem, progress: three bits
        return (stats.fix[rows] * 4 + stats.problem[rows] * 2 + stats.progress[rows]).astype(np.int64)

    key = (stats.kind[ms].astype(np.int64) << 8) | stats.kind[cs].astype(np.int64)
    key = (((key << 3) | cues(ms)) << 3) | cues(cs)
    for flag in (ev["later"], ev["time"] > 0, ev["bridge_only"]):
        key = (key << 1) | np.asarray(flag, bool)
    return key


@functools.lru_cache(maxsize=4096)
def type_of_key(key: int) -> tuple[str, bool]:
    """``link_type`` of a ``_type_keys`` key, remembered: a bank's links repeat a few combinations."""
    flags = {}
    for name in reversed(_TYPE_FLAGS):
        flags[name], key = bool(key & 1), key >> 1
    return link_type(KINDS[key >> 8], KINDS[key & 0xFF], **flags)


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


#: Whether ``_chosen_links`` makes an entry's common links inline (False: all through ``add_capped``)
_INLINE_LINKS = True
_TYPE_INPUTS = ("m", "c", "later", "time", "bridge_only")


def _text_inputs(words: list[tuple]) -> tuple[np.ndarray, np.ndarray, dict]:
    """The entries, candidates and ``TEXT_VALUES`` of records' words: one gather per ``LinkChoice`` run."""
    n = len(words)
    ms, cs, choices, ats, _ = zip(*words) if n else ((),) * 5
    m, c = np.fromiter(ms, np.int64, n), np.fromiter(cs, np.int64, n)
    values = {k: np.empty(n) for k in TEXT_VALUES}
    held = np.empty(n, dtype=object)
    held[:] = choices
    starts = np.flatnonzero(np.concatenate([[True], held[1:] != held[:-1]])).tolist() if n else []
    for lo, hi in zip(starts, [*starts[1:], n]):
        at = np.fromiter(ats[lo:hi], np.int64, hi - lo)
        for k in TEXT_VALUES:
            values[k][lo:hi] = choices[lo].text_values[k][at]
    return m, c, values
