"""Folding at retrieval time (seed 000): collapse a ranked pool along trusted edges into an Answer.

The query path, step by step (steps 1 and 8 belong to the caller, the bank's query function):

1. *Fetch* a pool of ~20 candidates, ranked best first, without bumping usage (caller).
2. *Edges among the pool*: the trusted edges (``sources=None`` means :data:`vocab.TRUSTED_SOURCES`;
   fading sources such as ``auto`` count only when ``sources=`` names them) with both ends in the
   pool. A prepared :class:`EdgeLookup` (id -> incident edge rows, built once per bank version)
   makes this a dictionary read; given a plain edge frame, ``fold`` first narrows it with one
   vectorised polars filter to the rows touching the pool and builds a lookup of those.
3. *Groups*: connected components of the pool by union-find, edges taken as undirected.
4. *Representatives*: the top ``protect`` ranks (at most ``k``) always represent themselves. In a
   group without a protected member, start from its best-ranked member; while the current member
   is dominated by a member of the group, move to its best-ranked dominator. Dominance:
   ``B supersedes/corrects/clarifies A`` -> B (the source) dominates A; ``B part_of/split_from/
   derived_from A`` -> A (the target, the parent) dominates B. If the walk comes back to a member
   it has visited (a dominance cycle), the best-ranked member of that cycle represents. The
   representative takes the group's best rank position (``Result.rank``; it keeps its own
   ``score``, and ``Result.pool_rank`` is its own rank in the pool).
   *Several protected members in one group*: none folds into another; each becomes its own result
   (a "unit"), and every other member joins the protected member it is fewest hops from inside the
   group, ties going to the better-ranked protected member. Each unit is then folded on its own.
5. *Pointers*: every other member of a unit becomes a :class:`~kbtools.model.answer.Pointer` on its
   representative. The path is the breadth-first shortest path from the representative inside the
   unit (neighbours visited in rank order, so the path is deterministic). ``via`` is the member's
   predecessor on that path when the path is longer than one edge (None for a direct edge), and
   ``relation``, ``note`` and ``direction`` describe the edge between that predecessor (``via``,
   else the representative) and the member: ``direction="out"`` when the predecessor is the edge's
   source, ``"in"`` when it is the target. Where two entries share several edges the pointer shows
   one: dominance types first, then note-carrying, then :data:`vocab.NEIGHBOR_TYPE_PRIORITY`,
   then type name. Pointers are ordered by hops, then pool rank.
6. *Refill*: units in best-rank order; the answer holds the first ``k`` (fewer only when the pool
   has fewer). Members of units past ``k`` do not appear.
7. *Neighbours*: up to ``neighbors`` per result, in answer order: entries sharing a trusted edge with
   the result that were not in the pool at all; note-carrying edges first, then
   :data:`vocab.NEIGHBOR_TYPE_PRIORITY` (``corrects``/``conflicts_with`` first, other types next,
   ``see_also`` last), then neighbour id, type and direction. An id is handed over once per answer.
   When ``entries`` are known, only ids present in them are handed over (pass active entries only
   to keep archived ones out), and they supply neighbour titles and summaries.
8. *Usage*: the caller bumps usage for ``answer.ids()`` only; folding never writes.

>>> import polars as pl
>>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
>>> edges = pl.DataFrame({"src": ["c"], "dst": ["b"], "type": ["corrects"],
...                       "note": ["its caveat is stale"], "source": ["author"]})
>>> print(fold(pool, edges, protect=1).text())
1. a
2. c
  ↳ folded: b corrects (out) — its caveat is stale
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from kbtools.model import vocab
from kbtools.model.config import FOLD_DEFAULTS
from kbtools.model.answer import Answer, Pointer, Result, fast_instance
from kbtools.errors import ValidationError

__all__ = ["EdgeLookup", "fold", "flat", "pool_components"]

#: Defaults of :func:`fold` (the seed's numbers: pool of 20, 8 results, top 2 protected, 3 neighbours).

_EDGE_COLUMNS = ("src", "dst", "type", "source")
_INFO_COLUMNS = ("title", "summary", "kind", "steps")
# An edge row inside the lookup: (src, dst, type, note, source).
_Edge = tuple
# An edge as seen from one of its ends: (other end, "out" | "in", edge).
_Incident = tuple


@dataclass(frozen=True, eq=False)
class EdgeLookup:
    """Edges prepared for folding: each id's incident edge rows, optionally entries' display fields.

    Build once per bank version and pass it as ``edges`` to :func:`fold` / :func:`flat` /
    :func:`collapse`. Only edges whose source is in ``sources`` are kept (default: trusted),
    types are canonical (``related_to`` -> ``see_also``), self-loops and repeated
    ``(src, dst, type)`` rows are dropped.

    >>> import polars as pl
    >>> e = pl.DataFrame({"src": ["a", "a"], "dst": ["b", "c"], "type": ["cites", "see_also"],
    ...                   "source": ["author", "auto"]})
    >>> lk = EdgeLookup.build(e)
    >>> len(lk), lk.touching(["b"])
    (1, [('a', 'b', 'cites', None, 'author')])
    """

    rows: list[_Edge]
    incident: dict[str, list[_Incident]]
    sources: frozenset[str]
    entries: dict[str, dict[str, Any]] | None = field(default=None)

    @classmethod
    def build(cls, edges: pl.DataFrame, *, sources: Iterable[str] | None = None,
              entries: pl.DataFrame | None = None) -> EdgeLookup:
        """Prepare ``edges`` (and optionally ``entries``: id, title, summary, kind, steps) for folding.

        >>> EdgeLookup.build(pl.DataFrame({"src": [], "dst": [], "type": [], "source": []},
        ...                               schema={c: pl.String for c in ("src", "dst", "type", "source")})).rows
        []
        """
        allowed = _check_sources(sources)
        _check_edges(edges)
        info = _entry_info(entries) if entries is not None else None
        return _build_lookup(edges, allowed, info)

    def __len__(self) -> int:
        return len(self.rows)

    def touching(self, ids: Iterable[str]) -> list[_Edge]:
        """Edge rows with either end in ``ids``, each once, in edge-frame order.

        >>> EdgeLookup.build(pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["cites"],
        ...                                "source": ["judge"]})).touching(["x"])
        []
        """
        found = {edge for entry_id in ids for _, _, edge in self.incident.get(entry_id, ())}
        return [edge for edge in self.rows if edge in found] if found else []


def fold(pool: pl.DataFrame, edges: pl.DataFrame | EdgeLookup, *, k: int = FOLD_DEFAULTS.k,
         protect: int = FOLD_DEFAULTS.protect, neighbors: int = FOLD_DEFAULTS.neighbors, entries: pl.DataFrame | None = None, sources: Iterable[str] | None = None,
         query: str | None = None) -> Answer:
    """Fold a ranked pool along trusted edges into ``k`` results with pointers and neighbours.

    ``pool``: ``id``, ``score`` (rows best first), optional ``title``, ``summary``, ``kind``,
    ``steps``. ``edges``: an edge frame (``src``, ``dst``, ``type``, ``source``, optional ``note``)
    or an :class:`EdgeLookup`. The module docstring states the algorithm.

    >>> pool = pl.DataFrame({"id": ["a", "b", "c", "d"], "score": [0.9, 0.8, 0.7, 0.6]})
    >>> edges = pl.DataFrame({"src": ["d", "a"], "dst": ["c", "z"], "type": ["part_of", "cites"],
    ...                       "note": [None, "how to start"], "source": ["author", "author"]})
    >>> ans = fold(pool, edges, k=3)
    >>> ans.ids(), [p.id for p in ans.results[2].related], ans.results[0].neighbors[0].id
    (['a', 'b', 'c'], ['d'], 'z')
    """
    ids, internal, around, info = _prepare(pool, edges, k=k, protect=protect, neighbors=neighbors,
                                           entries=entries, sources=sources)
    graph = _PoolGraph(ids, internal)
    units = _units(graph, min(protect, k))[:k]
    near = _pick_neighbors([ids[u.rep] for u in units], ids, around, info, neighbors)
    results = [_result(rank, u.rep, ids, info, _pointers(u, graph, ids, info), near.get(ids[u.rep]))
               for rank, u in enumerate(units, 1)]
    return Answer(query, results, folded=True, method="fold")


def flat(pool: pl.DataFrame, edges: pl.DataFrame | EdgeLookup | None = None, *, k: int = 8,
         neighbors: int = 0, entries: pl.DataFrame | None = None, sources: Iterable[str] | None = None,
         query: str | None = None) -> Answer:
    """The unfolded answer: the top ``k`` of the pool, no pointers; neighbours only if asked.

    >>> flat(pl.DataFrame({"id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]}), k=2).ids()
    ['a', 'b']
    """
    if edges is None and neighbors:
        raise ValidationError("neighbors", neighbors, "flat needs edges to attach neighbours")
    ids, _, around, info = _prepare(pool, edges, k=k, protect=0, neighbors=neighbors,
                                     entries=entries, sources=sources)
    top = ids[:k]
    near = _pick_neighbors(top, ids, around, info, neighbors)
    results = [_result(rank, i, ids, info, None, near.get(ids[i])) for rank, i in enumerate(range(len(top)), 1)]
    return Answer(query, results, folded=False, method="flat")


def pool_components(pool: pl.DataFrame, edges: pl.DataFrame | EdgeLookup, *,
                    sources: Iterable[str] | None = None) -> list[list[str]]:
    """The groups folding starts from: connected components of the pool along the trusted edges
    among its members, each best rank first, groups in the order of their best member.

    >>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> e = pl.DataFrame({"src": ["c"], "dst": ["a"], "type": ["corrects"], "source": ["author"]})
    >>> pool_components(pool, e)
    [['a', 'c'], ['b']]
    """
    ids, internal, _, _ = _prepare(pool, edges, k=pool.height, protect=0, neighbors=0, entries=None, sources=sources)
    return [[ids[i] for i in group] for group in _components(_PoolGraph(ids, internal))]


# --------------------------------------------------------------------------------------------
# validation and preparation


def _check_count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValidationError(name, value, "must be an integer >= 0")


def _check_sources(sources) -> frozenset[str]:
    if sources is None:
        return vocab.TRUSTED_SOURCES
    if isinstance(sources, str):
        sources = [sources]
    allowed = frozenset(sources)
    unknown = sorted(allowed - vocab.EDGE_SOURCES)
    if unknown:
        raise ValidationError("sources", unknown[0], "must be edge sources: " + ", ".join(sorted(vocab.EDGE_SOURCES)))
    return allowed


def _check_pool(pool) -> None:
    if not isinstance(pool, pl.DataFrame):
        raise ValidationError("pool", type(pool).__name__, "must be a polars DataFrame with columns id, score")
    for column in ("id", "score"):
        if column not in pool.columns:
            raise ValidationError("pool", list(pool.columns), f"needs a column {column!r}")
    if pool.schema["id"] != pl.String:
        raise ValidationError("id", str(pool.schema["id"]), "pool ids must be strings (8 hex characters)")


def _pool_ids(pool) -> list[str]:
    """The pool's ids, checked: a frame with id and score, ids present and unique."""
    _check_pool(pool)
    ids = pool["id"].to_list()
    if None in ids:
        raise ValidationError("id", None, "pool ids must not be null", row=ids.index(None))
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        row = next(i for i, x in enumerate(ids) if x in seen or seen.add(x))
        raise ValidationError("id", ids[row], "pool ids must be unique", row=row)
    return ids


def _check_edges(edges) -> None:
    if not isinstance(edges, pl.DataFrame):
        raise ValidationError("edges", type(edges).__name__, "must be a polars DataFrame or an EdgeLookup")
    missing = [c for c in _EDGE_COLUMNS if c not in edges.columns]
    if missing:
        raise ValidationError("edges", list(edges.columns), f"needs columns {', '.join(missing)}")


def _prepare(pool, edges, *, k, protect, neighbors, entries, sources):
    """Validate at the door; return (ids, edges among the pool, edges around each id, display info)."""
    ids = _pool_ids(pool)
    for name, value in (("k", k), ("protect", protect), ("neighbors", neighbors)):
        _check_count(name, value)
    allowed = _check_sources(sources)
    if entries is not None and not (isinstance(entries, pl.DataFrame) and "id" in entries.columns):
        raise ValidationError("entries", type(entries).__name__, "must be a polars DataFrame with a column 'id'")
    if edges is None:
        incident: dict[str, list[_Incident]] = {}
        lookup_info, keep = None, None
    elif isinstance(edges, EdgeLookup):
        if not allowed <= edges.sources:
            raise ValidationError("sources", sorted(allowed - edges.sources),
                                  "not kept by this EdgeLookup; build it with these sources")
        incident, lookup_info = edges.incident, edges.entries
        keep = allowed if allowed != edges.sources else None
    else:
        _check_edges(edges)
        near = edges.filter(pl.col("src").is_in(ids) | pl.col("dst").is_in(ids)) if ids else edges.clear()
        incident, lookup_info, keep = _build_lookup(near, allowed, None).incident, None, None
    internal = _internal_edges(incident, ids, keep)
    near_ids = _outside_ids(incident, ids) if neighbors and entries is not None else ()
    info = _Info(pool, _entry_info(entries, [*ids, *near_ids]) if entries is not None else lookup_info)
    return ids, internal, _Around(incident, keep), info


class _Around(NamedTuple):
    """Each id's incident edges in neighbour order, and the sources to keep (None: all kept)."""

    incident: dict[str, list[_Incident]]
    keep: frozenset[str] | None


def _internal_edges(incident, ids, keep) -> list[_Edge]:
    """Edges with both ends in the pool, each once (seen from its source)."""
    in_pool = set(ids)
    internal: list[_Edge] = []
    for entry_id in ids:
        found = incident.get(entry_id)
        if found:
            internal.extend(e for other, direction, e in found
                            if direction == "out" and other in in_pool and (keep is None or e[4] in keep))
    return internal


def _outside_ids(incident, ids) -> set[str]:
    in_pool = set(ids)
    return {other for entry_id in ids for other, _, _ in incident.get(entry_id, ()) if other not in in_pool}


def _build_lookup(edges: pl.DataFrame, allowed: frozenset[str], info) -> EdgeLookup:
    """Keep allowed edges; index each id's incident edges in neighbour order (one polars sort)."""
    note = pl.col("note").cast(pl.String) if "note" in edges.columns else pl.lit(None, pl.String)
    kept = (
        edges.lazy()
        .select(pl.col("src").cast(pl.String), pl.col("dst").cast(pl.String),
                pl.col("type").cast(pl.String).replace(vocab.TYPE_ALIASES), note.alias("note"),
                pl.col("source").cast(pl.String))
        .filter(pl.col("source").is_in(list(allowed)) & (pl.col("src") != pl.col("dst")))
        .unique(subset=["src", "dst", "type"], keep="first", maintain_order=True)
        .collect()
    )
    rows = kept.rows()
    indexed = kept.with_row_index("row")
    no_note = pl.col("note").str.strip_chars().str.len_chars().fill_null(0) == 0
    priority = pl.col("type").replace_strict(vocab.NEIGHBOR_TYPE_PRIORITY, default=1, return_dtype=pl.Int64)
    ends = (
        pl.concat([
            indexed.select(pl.col("src").alias("id"), pl.col("dst").alias("other"),
                           pl.lit("out").alias("direction"), "row", "type", "note"),
            indexed.select(pl.col("dst").alias("id"), pl.col("src").alias("other"),
                           pl.lit("in").alias("direction"), "row", "type", "note"),
        ])
        .with_columns(no_note.alias("no_note"), priority.alias("priority"))
        .sort("id", "no_note", "priority", "other", "type", "direction")
        .group_by("id", maintain_order=True)
        .agg("other", "direction", "row")
    )
    incident = {
        entry_id: [(o, d, rows[r]) for o, d, r in zip(others, directions, at)]
        for entry_id, others, directions, at in ends.iter_rows()
    }
    return EdgeLookup(rows, incident, allowed, info)


def _entry_info(entries: pl.DataFrame, ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    if "id" not in entries.columns:
        raise ValidationError("entries", list(entries.columns), "needs a column 'id'")
    cols = ["id", *[c for c in _INFO_COLUMNS if c in entries.columns]]
    frame = entries.select(cols)
    if ids is not None:
        frame = frame.filter(pl.col("id").is_in(list(ids)))
    return {row["id"]: row for row in frame.iter_rows(named=True)}


class _Info:
    """Display fields: the pool's own columns first, the entries' for anything missing."""

    __slots__ = ("pool_rows", "entries")

    def __init__(self, pool: pl.DataFrame, entries: dict[str, dict[str, Any]] | None):
        self.entries = entries
        cols = {c: pool[c].to_list() for c in ("score", *_INFO_COLUMNS) if c in pool.columns}
        self.pool_rows = cols

    def pool_field(self, i: int, entry_id: str, name: str):
        column = self.pool_rows.get(name)
        value = column[i] if column is not None else None
        if value is None and self.entries is not None:
            value = self.entries.get(entry_id, {}).get(name)
        return value

    def entry_field(self, entry_id: str, name: str):
        return None if self.entries is None else self.entries.get(entry_id, {}).get(name)

    def known(self, entry_id: str) -> bool:
        return self.entries is None or entry_id in self.entries


# --------------------------------------------------------------------------------------------
# the kernel: members are pool indices (0 = best rank); an edge is (src, dst, type, note, source)


@dataclass(frozen=True)
class _Unit:
    rep: int
    members: tuple[int, ...]  # sorted by rank, rep included


class _PoolGraph:
    """The pool's internal edges as index adjacency, one display edge per pair, dominators."""

    __slots__ = ("n", "pairs", "adj", "pair_edge", "dominators")

    def __init__(self, ids: list[str], internal: list[_Edge]):
        pos = {entry_id: i for i, entry_id in enumerate(ids)}
        self.n = len(ids)
        self.pairs: list[tuple[int, int]] = []
        self.pair_edge: dict[tuple[int, int], _Edge] = {}
        self.dominators: dict[int, list[int]] = {}
        neighbours: dict[int, set[int]] = {}
        for edge in internal:
            a, b = pos[edge[0]], pos[edge[1]]
            self.pairs.append((a, b))
            key = (a, b) if a < b else (b, a)
            shown = self.pair_edge.get(key)
            if shown is None or _pointer_key(edge) < _pointer_key(shown):
                self.pair_edge[key] = edge
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
            if edge[2] in vocab.SOURCE_WINS:
                self.dominators.setdefault(b, []).append(a)
            elif edge[2] in vocab.TARGET_WINS:
                self.dominators.setdefault(a, []).append(b)
        self.adj = {i: sorted(js) for i, js in neighbours.items()}

    def edge(self, a: int, b: int) -> _Edge:
        return self.pair_edge[(a, b) if a < b else (b, a)]

    def hops(self, start: int, allowed: set[int] | None = None) -> tuple[dict[int, int], dict[int, int]]:
        """Breadth-first distances and predecessors from ``start`` (neighbours in rank order)."""
        dist, prev, frontier = {start: 0}, {}, [start]
        while frontier:
            nxt = []
            for i in frontier:
                for j in self.adj.get(i, ()):
                    if j not in dist and (allowed is None or j in allowed):
                        dist[j], prev[j] = dist[i] + 1, i
                        nxt.append(j)
            frontier = nxt
        return dist, prev


def _pointer_key(edge: _Edge) -> tuple:
    """Which of several edges between two pool members a pointer shows (lowest first)."""
    has_note = bool(edge[3] and edge[3].strip())
    return (edge[2] not in vocab.DOMINANCE_TYPES, not has_note,
            vocab.NEIGHBOR_TYPE_PRIORITY.get(edge[2], 1), edge[2], edge[0], edge[1])


def _components(graph: _PoolGraph) -> list[list[int]]:
    """Connected components (union-find, undirected), each sorted by rank, ordered by best rank."""
    parent = list(range(graph.n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in graph.pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(graph.n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _representative(members: list[int], graph: _PoolGraph) -> int:
    """Follow dominators from the best-ranked member; a dominance cycle yields its best rank."""
    current, walked, seen = members[0], [], set()
    while current not in seen:
        dominators = graph.dominators.get(current)
        if not dominators:
            return current
        walked.append(current)
        seen.add(current)
        current = min(dominators)
    return min(walked[walked.index(current):])


def _units(graph: _PoolGraph, protected: int) -> list[_Unit]:
    """Groups split at protected members, each with its representative, in best-rank order."""
    units: list[_Unit] = []
    for members in _components(graph):
        heads = [m for m in members if m < protected]
        if len(heads) <= 1:
            rep = heads[0] if heads else _representative(members, graph)
            units.append(_Unit(rep, tuple(members)))
            continue
        distances = [graph.hops(head)[0] for head in heads]
        share: dict[int, list[int]] = {head: [] for head in heads}
        for m in members:
            best = min(range(len(heads)), key=lambda h: (distances[h][m], heads[h]))
            share[heads[best]].append(m)
        units.extend(_Unit(head, tuple(share[head])) for head in heads)
    return sorted(units, key=lambda u: u.members[0])


def _pointers(unit: _Unit, graph: _PoolGraph, ids: list[str], info: _Info) -> list[Pointer]:
    """Every non-representative member of a unit as a folded pointer (hops, then rank, order)."""
    if len(unit.members) == 1:
        return []
    dist, prev = graph.hops(unit.rep, set(unit.members))
    out = []
    for m in sorted((m for m in unit.members if m != unit.rep), key=lambda m: (dist[m], m)):
        before = prev[m]
        src, _, type_, note, source = graph.edge(before, m)
        out.append(fast_instance(Pointer, dict(
            id=ids[m], relation=type_, direction="out" if src == ids[before] else "in", note=note,
            summary=info.pool_field(m, ids[m], "summary"), via=ids[before] if dist[m] > 1 else None,
            kind="folded", source=source, title=info.pool_field(m, ids[m], "title"),
        )))
    return out


def _result(rank: int, i: int, ids: list[str], info: _Info, related: list[Pointer] | None = None,
            neighbors: list[Pointer] | None = None) -> Result:
    entry_id = ids[i]
    steps = info.pool_field(i, entry_id, "steps")
    return fast_instance(Result, dict(
        id=entry_id, rank=rank, score=info.pool_field(i, entry_id, "score"), kind="result",
        title=info.pool_field(i, entry_id, "title"), summary=info.pool_field(i, entry_id, "summary"),
        related=related or [], neighbors=neighbors or [], steps=list(steps) if steps else None,
        entry_kind=info.pool_field(i, entry_id, "kind"), pool_rank=i + 1,
    ))


def _pick_neighbors(shown: list[str], ids: list[str], around: _Around, info: _Info,
                    limit: int) -> dict[str, list[Pointer]]:
    """Up to ``limit`` outside-the-pool neighbours per shown id (in order), none repeated.

    Each id's incident edges are already in neighbour order (see :func:`_build_lookup`)."""
    if not limit:
        return {}
    used: set[str] = set(ids)
    keep = around.keep
    rows = info.entries
    picked_for: dict[str, list[Pointer]] = {}
    for entry_id in shown:
        picked = []
        for other, direction, edge in around.incident.get(entry_id, ()):
            if other in used or (keep is not None and edge[4] not in keep):
                continue
            row = None if rows is None else rows.get(other)  # one probe of a bank-sized dict
            if rows is not None and row is None:
                continue
            used.add(other)
            picked.append(fast_instance(Pointer, dict(
                id=other, relation=edge[2], direction=direction, note=edge[3],
                summary=None if row is None else row.get("summary"), via=None, kind="neighbor", source=edge[4],
                title=None if row is None else row.get("title"),
            )))
            if len(picked) == limit:
                break
        if picked:
            picked_for[entry_id] = picked
    return picked_for


