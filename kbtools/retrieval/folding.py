"""Folding at retrieval time (seed 000): collapse a ranked pool along trusted edges into an Answer.

The query path, step by step (steps 1 and 8 belong to the caller, the bank's query function):

1. *Fetch* a pool of ~20 candidates, ranked best first, without bumping usage (caller).
2. *Edges among the pool*: the trusted edges (``sources=None`` means :data:`vocab.TRUSTED_SOURCES`;
   fading sources such as ``auto`` count only when ``sources=`` names them) with both ends in the
   pool. A prepared :class:`EdgeLookup` (both ends of every edge in sorted arrays, grown by
   appended edges and masking removed ones, never rebuilt per bank version) makes this a binary
   search for the pool's ids; given a plain edge frame, ``fold`` first narrows it with one
   vectorised polars filter to the rows touching the pool.
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
   A protected result that another result of the answer dominates over one edge (a correction
   ranked second under what it corrects) carries that result as a pointer of kind ``"answer"``
   (``Result.dominated_by``): both stay, and the older one says which replaces it.
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
   has fewer). Members of units past ``k`` do not appear. When a pool folds into fewer than ``k``
   units, :func:`fold_refilled` (what ``kb.query`` calls) folds a deeper pool of the same ranking.
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

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np
import polars as pl

from kbtools.model import vocab
from kbtools.model.config import FOLD_DEFAULTS
from kbtools.model.answer import Answer, Pointer, Result, fast_instance
from kbtools.errors import ValidationError
from kbtools.store.rowindex import packed_ids, packed_query
from kbtools.store.sidecars import CANONICAL_COLUMNS, canonical_edges, edge_ends

__all__ = ["EdgeLookup", "MAX_POOL_GROWTH", "fold", "fold_refilled", "flat", "pool_components"]

#: Defaults of :func:`fold` (the seed's numbers: pool of 20, 8 results, top 2 protected, 3 neighbours).

_EDGE_COLUMNS = ("src", "dst", "type", "source")
_INFO_COLUMNS = ("title", "summary", "kind", "steps")
_RESULT_FIELDS = ("score", *_INFO_COLUMNS)  # a result's fields read from the pool (or the entries)
# An edge row inside the lookup: (src, dst, type, note, source).
_Edge = tuple
# An edge as seen from one of its ends: (other end, "out" | "in", edge).
_Incident = tuple


class EdgeLookup:
    """Edges prepared for folding: sorted arrays of edge ends, read for a pool's ids only.

    Each edge is kept twice, once under each end, in a numpy array sorted by that end's id, so the
    edges touching a pool of 20 are found by binary search (no pass over the bank's edges per
    query). Edges appended since (a link, an add with its connections) join as a further part;
    removed ones (an unlink, a bridge over a deleted entry) are masked by row: neither rebuilds
    what was built (:attr:`builds` counts the builds from a whole edge frame). Only edges whose
    source is in ``sources`` are kept (default: trusted), types are canonical (``related_to`` ->
    ``see_also``), self-loops and repeated ``(src, dst, type)`` rows are dropped.

    ``entries`` (id, title, summary, kind, steps) supply neighbours' display fields and limit the
    neighbours handed over to the ids they hold; any object with a ``rows_for(ids)`` method
    returning ``{id: {field: value}}`` can take their place (:meth:`with_entries`).

    >>> import polars as pl
    >>> e = pl.DataFrame({"src": ["a", "a"], "dst": ["b", "c"], "type": ["cites", "see_also"],
    ...                   "source": ["author", "auto"]})
    >>> lk = EdgeLookup.build(e)
    >>> len(lk), lk.touching(["b"])
    (1, [('a', 'b', 'cites', None, 'author')])
    >>> lk = lk.grown(pl.DataFrame({"src": ["c"], "dst": ["b"], "type": ["corrects"], "source": ["author"]}))
    >>> len(lk), [e[0] for e in lk.touching(["b"])]
    (2, ['a', 'c'])
    >>> len(lk.without([("a", "b", "cites")]))
    1
    """

    #: how many lookups this process built from a whole edge frame (tests and the bench count them)
    builds: ClassVar[int] = 0
    #: parts past which the appended parts are merged into one (the base part is left alone)
    MAX_PARTS: ClassVar[int] = 8

    __slots__ = ("parts", "dead", "sources", "entries", "mark", "_size")

    def __init__(self, parts: tuple[_Part, ...], sources: frozenset[str], entries=None,
                 dead: frozenset[int] = frozenset(), mark=None):
        self.parts, self.sources, self.entries, self.dead, self.mark = parts, sources, entries, dead, mark
        self._size = sum(p.height for p in parts) - len(dead)

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
        source = _FrameEntries(entries) if entries is not None else None
        EdgeLookup.builds += 1
        return cls((_part(canonical_edges(edges, allowed), 0, _aliased(edges)),), allowed, source)

    @classmethod
    def from_ends(cls, ends: dict, *, mark=None) -> EdgeLookup:
        """A lookup over a base edges segment's sidecar
        (:func:`~kbtools.store.sidecars.read_edge_ends`: the trusted edges' ends, memory-mapped):
        nothing is built, a query reads the ends of its pool's ids only."""
        return cls((_part_of(ends, 0, bool(ends["aliased"])),), frozenset(vocab.TRUSTED_SOURCES), mark=mark)

    def changed(self, keys: list[tuple[str, str, str]], live: pl.DataFrame, *, mark=None) -> EdgeLookup:
        """This lookup with the edges of these ``(src, dst, type)`` keys masked and the edges of
        ``live`` added: what rows written after its edges do (each key's latest version; ``live``
        those of them that are not tombstones). For edges without aliased types (an alias makes
        two keys one edge)."""
        out = self.without(keys, mark=mark) if keys else EdgeLookup(self.parts, self.sources, self.entries,
                                                                       self.dead, mark)
        if not live.height:
            return out
        _check_edges(live)
        return out._grown(canonical_edges(live, self.sources), False, mark)  # no alias, as said above

    def __len__(self) -> int:
        return self._size

    @property
    def rows(self) -> list[_Edge]:
        """Every kept edge, in edge-frame order (a whole-lookup read: not for the query path)."""
        return [e for _, e in sorted(self._live_rows(np.concatenate([np.arange(p.offset, p.offset + p.height)
                                                                       for p in self.parts])))]

    def with_entries(self, entries) -> EdgeLookup:
        """The same edges with another source of display fields (a ``rows_for(ids)`` object)."""
        return EdgeLookup(self.parts, self.sources, entries, self.dead, self.mark)

    def grown(self, edges: pl.DataFrame, *, mark=None) -> EdgeLookup:
        """This lookup and the edges of ``edges`` (rows appended to the table since), as a new
        lookup sharing this one's arrays; the appended parts are merged once there are more than
        :data:`MAX_PARTS` of them (a sort of the appended rows only)."""
        _check_edges(edges)
        return self._grown(canonical_edges(edges, self.sources), _aliased(edges), mark)

    def _grown(self, added: pl.DataFrame, aliased: bool, mark) -> EdgeLookup:
        parts = list(self.parts)
        end = parts[-1].offset + parts[-1].height
        if added.height:
            parts.append(_part(added, end, aliased))
        if len(parts) > self.MAX_PARTS:
            tail = pl.concat([p.edges for p in parts[1:]])
            parts = [parts[0], _part(tail, parts[1].offset, any(p.aliased for p in parts[1:]))]
        return EdgeLookup(tuple(parts), self.sources, self.entries, self.dead, mark)

    def without(self, keys: Iterable[tuple[str, str, str]], *, mark=None) -> EdgeLookup:
        """This lookup with the edges of these ``(src, dst, type)`` keys masked (removed)."""
        wanted = {(s, d, vocab.TYPE_ALIASES.get(t, t)) for s, d, t in keys}
        ends = sorted({s for s, _, _ in wanted})
        dead = set(self.dead)
        for row, edge in self._live_rows(self._rows_touching(ends)):
            if edge[:3] in wanted:
                dead.add(int(row))
        return EdgeLookup(self.parts, self.sources, self.entries, frozenset(dead), mark)

    def incident_of(self, ids: Iterable[str]) -> dict[str, list[_Incident]]:
        """Each of ``ids``' incident edges as ``(other end, "out" | "in", edge)``, in neighbour
        order (note-carrying first, then :data:`vocab.NEIGHBOR_TYPE_PRIORITY`, other end, type,
        direction); ids without edges are left out.

        >>> lk = EdgeLookup.build(pl.DataFrame({"src": ["a", "c"], "dst": ["b", "a"], "type": ["cites", "corrects"],
        ...                                     "source": ["author", "author"]}))
        >>> [(o, d) for o, d, _ in lk.incident_of(["a"])["a"]]
        [('c', 'in'), ('b', 'out')]
        """
        wanted = list(dict.fromkeys(ids))
        if not wanted or not self._size:
            return {}
        if self._repeats():  # a type alias may repeat a key across parts: the row-order path
            keep = set(wanted)
            found: dict[str, list[_Incident]] = {}
            for _, edge in self._live_rows(self._rows_touching(wanted)):
                if edge[0] in keep:
                    found.setdefault(edge[0], []).append((edge[1], "out", edge))
                if edge[1] in keep:
                    found.setdefault(edge[1], []).append((edge[0], "in", edge))
            return {i: sorted(found[i], key=_neighbour_key) for i in wanted if i in found}
        return _incident_sorted(self.parts, wanted, self.dead)

    def touching(self, ids: Iterable[str]) -> list[_Edge]:
        """Edge rows with either end in ``ids``, each once, in edge-frame order.

        >>> EdgeLookup.build(pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["cites"],
        ...                                "source": ["judge"]})).touching(["x"])
        []
        """
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        return [edge for _, edge in self._live_rows(self._rows_touching(wanted))]

    # -- inside ---------------------------------------------------------------------------

    def _repeats(self) -> bool:
        """Whether a canonical key may be held twice (an aliased type in a part after the first)."""
        return len(self.parts) > 1 and any(p.aliased for p in self.parts)

    def _rows_touching(self, ids: list[str]) -> np.ndarray:
        """Global rows of the edges with an end in ``ids`` (binary search in each part)."""
        if not ids:
            return np.zeros(0, dtype=np.int64)
        out = []
        for p in self.parts:
            if not len(p.keys):
                continue
            lo, hi = p.keys.find(ids)
            hit = hi > lo
            if hit.any():
                out.extend(p.rows[a:b] for a, b in zip(lo[hit].tolist(), hi[hit].tolist()))
        return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)

    def _live_rows(self, rows: np.ndarray) -> list[tuple[int, _Edge]]:
        """``(row, edge)`` of the live rows among ``rows`` (sorted), repeated keys dropped (the
        first row of a ``(src, dst, type)`` wins, as in the edge frame)."""
        out: list[tuple[int, _Edge]] = []
        seen: set = set()
        dead = self.dead
        for p in self.parts:
            lo, hi = np.searchsorted(rows, [p.offset, p.offset + p.height])
            mine = rows[lo:hi]
            if not len(mine):
                continue
            for row, edge in zip(mine.tolist(), p.edge_rows(mine - p.offset)):
                if row in dead or edge[:3] in seen:
                    continue
                seen.add(edge[:3])
                out.append((row, edge))
        return out


class _Part(NamedTuple):
    """One sorted slab of edge ends over ``height`` kept edges (global rows ``offset`` on):
    ``keys`` (end ids, sorted) and ``rows`` (the global edge row of each end); each edge's fields
    as arrays for gathering a few rows without polars: ``src_at`` / ``dst_at`` (positions of its
    ends in ``keys``), ``type_code`` / ``source_code`` (into ``names``), ``notes``. ``edges``: the
    part's kept edges as a frame, None for a part read from a sidecar (:meth:`frame` makes it)."""

    keys: _IdKeys
    rows: np.ndarray
    edges: pl.DataFrame | None
    offset: int
    src_at: np.ndarray
    dst_at: np.ndarray
    names: list
    type_code: np.ndarray
    source_code: np.ndarray
    notes: Any
    is_out: np.ndarray
    aliased: bool
    height: int

    def edge_rows(self, local: np.ndarray) -> list[_Edge]:
        """The edges at these local rows as ``(src, dst, type, note, source)`` tuples."""
        names = self.names
        return list(zip(self.keys.take(self.src_at[local]), self.keys.take(self.dst_at[local]),
                        [names[c] for c in self.type_code[local].tolist()], self.notes[local].tolist(),
                        [names[c] for c in self.source_code[local].tolist()]))

    def frame(self) -> pl.DataFrame:
        """The part's kept edges (src, dst, type, note, source), in row order."""
        if self.edges is not None:
            return self.edges
        return pl.DataFrame(self.edge_rows(np.arange(self.height)), schema={c: pl.String for c in CANONICAL_COLUMNS},
                            orient="row")


def _aliased(edges: pl.DataFrame) -> bool:
    """Whether a frame holds a type that an alias renames (two rows may then share a key)."""
    return bool(edges.height) and bool(edges["type"].cast(pl.String).is_in(list(vocab.TYPE_ALIASES)).any())


def _part(kept: pl.DataFrame, offset: int, aliased: bool = True) -> _Part:
    """Both ends of every edge of ``kept``, sorted by end id (one integer sort where ids pack:
    :func:`~kbtools.store.sidecars.edge_ends`, what a base segment's sidecar holds); the few
    edges of an id are put in neighbour order when read (:meth:`EdgeLookup.incident_of`)."""
    return _part_of(edge_ends(kept.rechunk()), offset, aliased, kept)


def _part_of(ends: dict, offset: int, aliased: bool, kept: pl.DataFrame | None = None) -> _Part:
    """A part over the arrays of :func:`~kbtools.store.sidecars.edge_ends` (or a sidecar's)."""
    rows = ends["rows"] if not offset else ends["rows"] + offset
    return _Part(_IdKeys._of(ends["keys"], ends["packed"]), rows, kept, offset, ends["src_at"], ends["dst_at"],
                 ends["names"], ends["type_code"], ends["source_code"], ends["notes"], ends["is_out"], aliased,
                 len(ends["src_at"]))


def _incident_sorted(parts, wanted: list[str], dead) -> dict[str, list[_Incident]]:
    """:meth:`EdgeLookup.incident_of` where no key repeats across parts: the ends of ``wanted``
    gathered from every part with a few array operations, put in neighbour order by one
    ``lexsort`` (the order :func:`_neighbour_key` gives, each id's edges together), and only then
    made into tuples."""
    got = [g for g in (_gathered(p, wanted) for p in parts if len(p.keys)) if g is not None]
    if not got:
        return {}
    if len(got) == 1:
        owner, rows, out, other_key, type_rank, priority, others, types, notes, sources = got[0]
    else:  # type names ranked over all parts; other ends compared as integers only where all pack
        owner, rows, out, priority = (np.concatenate([g[i] for g in got]) for i in (0, 1, 2, 5))
        others, types, notes, sources = ([x for g in got for x in g[i]] for i in (6, 7, 8, 9))
        other_key = (np.concatenate([g[3] for g in got]) if all(g[3].dtype == np.uint64 for g in got)
                     else np.asarray(others, dtype=str))
        rank = {t: i for i, t in enumerate(sorted(set(types)))}
        type_rank = np.array([rank[t] for t in types], dtype=np.int64)
    bare = np.array([not (n and n.strip()) for n in notes], dtype=bool)
    order = np.lexsort((out, type_rank, other_key, priority, bare, owner))
    if dead:
        order = order[~np.isin(rows[order], np.fromiter(dead, dtype=np.int64, count=len(dead)))]
    ends = [(wanted[w], d) for w, d in zip(owner[order].tolist(), out[order].tolist())]
    incident = [(others[j], "out", (me, others[j], types[j], notes[j], sources[j])) if d else
                (others[j], "in", (others[j], me, types[j], notes[j], sources[j]))
                for j, (me, d) in zip(order.tolist(), ends)]
    found: dict[str, list[_Incident]] = {}
    start = 0
    for entry_id, count in zip(wanted, np.bincount(owner[order], minlength=len(wanted)).tolist()):
        if count:  # each id's edges lie together, ids in the order asked
            found[entry_id] = incident[start:start + count]
            start += count
    return found


def _gathered(p: _Part, wanted: list[str]):
    """The ends of ``wanted`` in part ``p`` as columns (None when it holds none): which of
    ``wanted`` (its index), global row, outgoing or not, the keys that order the other ends, the
    type's rank in the part's names (their order), its neighbour priority; then as lists the
    other ends, types, notes and sources."""
    lo, hi = p.keys.find(wanted)
    count = hi - lo
    total = int(count.sum())
    if not total:
        return None
    owner = np.repeat(np.arange(len(wanted)), count)
    at = np.arange(total) + np.repeat(lo - (np.cumsum(count) - count), count)  # lo[i] .. hi[i] - 1, each i in turn
    rows = p.rows[at]
    local = rows - p.offset
    out = p.is_out[at]
    other_at = np.where(out, p.dst_at[local], p.src_at[local])
    names = p.names
    type_code = p.type_code[local]
    priority = np.array([vocab.NEIGHBOR_TYPE_PRIORITY.get(n, 1) for n in names], dtype=np.int64)[type_code]
    other_key = p.keys.values[other_at]
    return (owner, rows, out, other_key, type_code, priority, p.keys.decoded(other_key),
            [names[c] for c in type_code.tolist()], p.notes[local].tolist(),
            [names[c] for c in p.source_code[local].tolist()])


def _neighbour_key(incident: _Incident) -> tuple:
    """Neighbour order of one incident edge: note-carrying first, type priority, other end, type,
    direction."""
    other, direction, edge = incident
    note = edge[3]
    return (not (note and note.strip()), vocab.NEIGHBOR_TYPE_PRIORITY.get(edge[2], 1), other, edge[2], direction)


class _IdKeys:
    """Sorted ids for binary search. Ids that are all ASCII of at most 8 bytes (a bank's 8-hex
    ids) are packed into big-endian ``uint64`` (integer order is then string order, and a search
    compares integers, not strings); other ids stay strings."""

    __slots__ = ("values", "packed")

    def __init__(self, ids: pl.Series):
        packed = packed_ids(ids)
        self.packed = packed is not None
        self.values = packed if packed is not None else (
            ids.to_numpy().astype(str) if len(ids) else np.zeros(0, dtype="<U8"))

    @classmethod
    def _of(cls, values: np.ndarray, packed: bool) -> "_IdKeys":
        out = cls.__new__(cls)
        out.values, out.packed = values, packed
        return out

    def taken(self, positions: np.ndarray) -> "_IdKeys":
        """These keys at ``positions`` (in that order)."""
        return _IdKeys._of(self.values[positions], self.packed)

    def __len__(self) -> int:
        return len(self.values)

    def find(self, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: the positions ``lo[i]:hi[i]`` hold ``ids[i]`` (empty when absent)."""
        if not self.packed:
            q = np.asarray(ids, dtype=str)
            return np.searchsorted(self.values, q, "left"), np.searchsorted(self.values, q, "right")
        q, fits = packed_query(ids)
        lo = np.searchsorted(self.values, q, "left")
        return lo, np.where(fits, np.searchsorted(self.values, q, "right"), lo)

    def take(self, positions: np.ndarray) -> list[str]:
        """The ids at these positions."""
        return self.decoded(self.values[positions])

    def decoded(self, got: np.ndarray) -> list[str]:
        """Keys taken from :attr:`values` as ids."""
        if not self.packed:
            return got.tolist()
        text = got.astype(">u8").tobytes().decode("ascii")  # 8 bytes an id, zero-padded
        if "\0" not in text:
            return [text[i:i + 8] for i in range(0, len(text), 8)]
        return [text[i:i + 8].rstrip("\0") for i in range(0, len(text), 8)]


class _FrameEntries:
    """Display fields of an entries frame, sorted by id once (arrays, so that the few rows a fold
    asks for are gathered without a pass over the frame)."""

    __slots__ = ("keys", "names", "columns")

    def __init__(self, entries: pl.DataFrame):
        if not isinstance(entries, pl.DataFrame) or "id" not in entries.columns:
            raise ValidationError("entries", type(entries).__name__, "must be a polars DataFrame with a column 'id'")
        cols = [c for c in _INFO_COLUMNS if c in entries.columns]
        frame = entries.select("id", *cols).filter(pl.col("id").is_not_null())
        frame = frame.unique("id", keep="first", maintain_order=True).sort("id")
        self.keys = _IdKeys(frame["id"])
        self.names = ["id", *cols]
        self.columns = [frame[c].to_numpy().astype(object, copy=False) if frame.schema[c] != pl.List(pl.String)
                        else np.array(frame[c].to_list() + [None], dtype=object)[:-1] for c in self.names]

    def rows_for(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(dict.fromkeys(ids))
        if not wanted or not len(self.keys):
            return {}
        lo, hi = self.keys.find(wanted)
        hit = lo[hi > lo]
        names = self.names
        return {row[0]: dict(zip(names, row)) for row in zip(*(c[hit].tolist() for c in self.columns))}


def fold(pool: pl.DataFrame | Mapping[str, list], edges: pl.DataFrame | EdgeLookup, *, k: int = FOLD_DEFAULTS.k,
         protect: int = FOLD_DEFAULTS.protect, neighbors: int = FOLD_DEFAULTS.neighbors, entries: pl.DataFrame | None = None, sources: Iterable[str] | None = None,
         query: str | None = None) -> Answer:
    """Fold a ranked pool along trusted edges into ``k`` results with pointers and neighbours.

    ``pool``: ``id``, ``score`` (rows best first), optional ``title``, ``summary``, ``kind``,
    ``steps``: a frame, or a mapping of these columns to lists (no frame built on the query
    path, see :func:`~kbtools.retrieval.search.ranked_columns`). ``edges``: an edge frame (``src``, ``dst``, ``type``, ``source``, optional ``note``)
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
    above = _dominated_by(units, graph, ids, info)
    results = [_result(rank, u.rep, ids, info, _pointers(u, graph, ids, info), near.get(ids[u.rep]),
                       above.get(u.rep)) for rank, u in enumerate(units, 1)]
    return Answer(query, results, folded=True, method="fold")


#: How much deeper than its pool a folded answer may fetch to fill its ``k`` slots (:func:`fold_refilled`)
MAX_POOL_GROWTH = 8


def fold_refilled(fetch: Callable[[int], pl.DataFrame | Mapping[str, list]], edges: pl.DataFrame | EdgeLookup, *,
                  pool: int, k: int = FOLD_DEFAULTS.k, protect: int = FOLD_DEFAULTS.protect,
                  neighbors: int = FOLD_DEFAULTS.neighbors, entries: pl.DataFrame | None = None,
                  sources: Iterable[str] | None = None, query: str | None = None) -> Answer:
    """:func:`fold` of the ranked pool ``fetch(size)`` gives (its best ``size`` candidates), its
    freed slots refilled: when the pool folds into fewer than ``k`` results and the ranking had
    more to give (it filled the pool), a pool twice as deep is fetched and folded, up to
    :data:`MAX_POOL_GROWTH` times ``pool``. A bank of documents in sections (``part_of``) folds a
    pool of 20 into a few documents; the answer still holds ``k`` when the bank has them.

    >>> ranking = pl.DataFrame({"id": [f"s{i}" for i in range(30)], "score": [1 - i / 100 for i in range(30)]})
    >>> parts = pl.DataFrame({"src": [f"s{i}" for i in range(1, 20)], "dst": ["s0"] * 19, "type": ["part_of"] * 19,
    ...                       "source": ["structure"] * 19})
    >>> len(fold(ranking.head(20), parts, k=8).results), len(fold_refilled(ranking.head, parts, pool=20, k=8).results)
    (2, 8)
    """
    size = max(pool, k)
    most = MAX_POOL_GROWTH * size
    while True:
        ranked = fetch(size)
        answer = fold(ranked, edges, k=k, protect=protect, neighbors=neighbors, entries=entries, sources=sources,
                      query=query)
        held = ranked.height if isinstance(ranked, pl.DataFrame) else len(ranked["id"])
        if len(answer.results) >= k or held < size or size >= most:
            return answer
        size = min(2 * size, most)


def flat(pool: pl.DataFrame | Mapping[str, list], edges: pl.DataFrame | EdgeLookup | None = None, *, k: int = 8,
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


def pool_components(pool: pl.DataFrame | Mapping[str, list], edges: pl.DataFrame | EdgeLookup, *,
                    sources: Iterable[str] | None = None) -> list[list[str]]:
    """The groups folding starts from: connected components of the pool along the trusted edges
    among its members, each best rank first, groups in the order of their best member.

    >>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> e = pl.DataFrame({"src": ["c"], "dst": ["a"], "type": ["corrects"], "source": ["author"]})
    >>> pool_components(pool, e)
    [['a', 'c'], ['b']]
    """
    ids, internal, _, _ = _prepare(pool, edges, k=0, protect=0, neighbors=0, entries=None, sources=sources)
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


def _pool_columns(pool) -> dict[str, list]:
    """The pool's id, score and display columns as lists: from a frame, or from a mapping of
    column names to equally long sequences (what the query path hands over)."""
    if isinstance(pool, pl.DataFrame):
        names = pool.columns
    elif isinstance(pool, Mapping):
        names = list(pool)
    else:
        raise ValidationError("pool", type(pool).__name__,
                              "must be a polars DataFrame (or a mapping of columns to lists) with columns id, score")
    for column in ("id", "score"):
        if column not in names:
            raise ValidationError("pool", list(names), f"needs a column {column!r}")
    if isinstance(pool, pl.DataFrame):
        series = {s.name: s for s in pool.get_columns()}
        if series["id"].dtype != pl.String:
            raise ValidationError("id", str(series["id"].dtype), "pool ids must be strings (8 hex characters)")
        return {c: series[c].to_list() for c in ("id", "score", *_INFO_COLUMNS) if c in series}
    columns = {c: list(pool[c]) for c in ("id", "score", *_INFO_COLUMNS) if c in names}
    height = len(columns["id"])
    for name, values in columns.items():
        if len(values) != height:
            raise ValidationError("pool", name, f"every column holds one value per id ({height}), not {len(values)}")
    wrong = next((i for i in columns["id"] if i is not None and not isinstance(i, str)), None)
    if wrong is not None:
        raise ValidationError("id", wrong, "pool ids must be strings (8 hex characters)")
    return columns


def _pool_ids(columns: dict[str, list]) -> list[str]:
    """The pool's ids, checked: present and unique."""
    ids = columns["id"]
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
    columns = _pool_columns(pool)
    ids = _pool_ids(columns)
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
        incident, lookup_info = edges.incident_of(ids), edges.entries
        keep = allowed if allowed != edges.sources else None
    else:
        _check_edges(edges)
        near = edges.filter(pl.col("src").is_in(ids) | pl.col("dst").is_in(ids)) if ids else edges.clear()
        incident = EdgeLookup((_part(canonical_edges(near, allowed), 0, False),), allowed).incident_of(ids)
        lookup_info, keep = None, None
    internal = _internal_edges(incident, ids, keep)
    source = _ListedEntries(entries) if entries is not None else lookup_info
    info = _Info(columns, source)
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


def _entry_info(entries: pl.DataFrame, ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    if "id" not in entries.columns:
        raise ValidationError("entries", list(entries.columns), "needs a column 'id'")
    cols = ["id", *[c for c in _INFO_COLUMNS if c in entries.columns]]
    frame = entries.select(cols)
    if ids is not None:
        frame = frame.filter(pl.col("id").is_in(list(ids)))
    return {row["id"]: row for row in frame.iter_rows(named=True)}


class _ListedEntries:
    """Display fields read from an entries frame given to :func:`fold` (one filter per read)."""

    __slots__ = ("frame",)

    def __init__(self, entries: pl.DataFrame):
        self.frame = entries

    def rows_for(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return _entry_info(self.frame, ids)


class _Info:
    """Display fields: the pool's own columns first, the entries' for anything missing. Entries'
    rows are read from ``source`` (a ``rows_for(ids)`` object) when first needed, for the ids
    needed only: the pool's ids with a field missing, and the candidates for neighbours (the pool's
    wait for the first read, so that one read serves both)."""

    __slots__ = ("pool_rows", "source", "entries", "pending")

    def __init__(self, columns: dict[str, list], source):
        self.source = source
        self.pool_rows = {c: columns[c] for c in ("score", *_INFO_COLUMNS) if c in columns}
        self.entries: dict[str, dict[str, Any]] | None = None if source is None else {}
        self.pending: list[str] = []
        if source is not None:  # a pool with a steps column says which members have none
            ids = columns["id"]
            wanted = [self.pool_rows.get(c) for c in _INFO_COLUMNS if c != "steps" or c not in self.pool_rows]
            if any(column is None for column in wanted):
                self.pending = list(ids)
            elif any(None in column for column in wanted):
                missing = {n for column in wanted if None in column for n, v in enumerate(column) if v is None}
                self.pending = [ids[n] for n in sorted(missing)]

    def fetch(self, ids: Iterable[str]) -> None:
        """Read the entries' rows of those of ``ids`` (and of the pool's members waiting) not read yet."""
        if self.source is None:
            return
        if self.pending:
            ids, self.pending = [*self.pending, *ids], []
        todo = [i for i in ids if i not in self.entries]
        if todo:
            found = self.source.rows_for(todo)
            for i in todo:
                self.entries[i] = found.get(i)

    def pool_field(self, i: int, entry_id: str, name: str):
        if self.pending:
            self.fetch(())
        column = self.pool_rows.get(name)
        value = column[i] if column is not None else None
        if value is None and self.entries is not None and (name != "steps" or column is None):
            value = (self.entries.get(entry_id) or {}).get(name)
        return value

    def fields(self, i: int, entry_id: str) -> list:
        """:meth:`pool_field` of score, title, summary, kind and steps at once."""
        if self.pending:
            self.fetch(())
        out = []
        row = None
        for name in _RESULT_FIELDS:
            column = self.pool_rows.get(name)
            value = column[i] if column is not None else None
            if value is None and self.entries is not None and (name != "steps" or column is None):
                if row is None:
                    row = self.entries.get(entry_id) or {}
                value = row.get(name)
            out.append(value)
        return out


# --------------------------------------------------------------------------------------------
# the kernel: members are pool indices (0 = best rank); an edge is (src, dst, type, note, source)


class _Unit(NamedTuple):
    rep: int
    members: tuple[int, ...]  # sorted by rank, rep included


class _PoolGraph:
    """The pool's internal edges as index adjacency, one display edge per pair, dominators."""

    __slots__ = ("n", "adj", "pair_edge", "dominators")

    def __init__(self, ids: list[str], internal: list[_Edge]):
        pos = {entry_id: i for i, entry_id in enumerate(ids)}
        self.n = len(ids)
        self.pair_edge: dict[tuple[int, int], _Edge] = {}
        self.dominators: dict[int, list[int]] = {}
        neighbours: dict[int, set[int]] = {}
        for edge in internal:
            a, b = pos[edge[0]], pos[edge[1]]
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
    """Connected components (undirected), each sorted by rank, ordered by best rank: members
    without an edge are their own; the others are walked from their best-ranked member."""
    adj = graph.adj
    seen: set[int] = set()
    groups = []
    for i in range(graph.n):
        if i in seen:
            continue
        if i not in adj:
            groups.append([i])
            continue
        seen.add(i)
        group, todo = [i], [i]
        while todo:
            for j in adj[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    group.append(j)
                    todo.append(j)
        group.sort()
        groups.append(group)
    return groups


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


def _dominated_by(units: list[_Unit], graph: _PoolGraph, ids: list[str], info: _Info) -> dict[int, list[Pointer]]:
    """Per representative, the other representatives that dominate it over one edge, as pointers of
    kind ``"answer"``: where two protected results are one group (a correction and what it
    corrects), neither folds into the other, and the replaced one says which result replaces it."""
    if not graph.dominators:
        return {}
    reps = {u.rep for u in units}
    out: dict[int, list[Pointer]] = {}
    for r in sorted(reps):
        for g in sorted(set(graph.dominators.get(r, ())) & reps - {r}):
            src, _, type_, note, source = graph.edge(r, g)
            out.setdefault(r, []).append(fast_instance(Pointer, dict(
                id=ids[g], relation=type_, direction="out" if src == ids[r] else "in", note=note,
                summary=info.pool_field(g, ids[g], "summary"), via=None, kind="answer", source=source,
                title=info.pool_field(g, ids[g], "title"),
            )))
    return out


def _result(rank: int, i: int, ids: list[str], info: _Info, related: list[Pointer] | None = None,
            neighbors: list[Pointer] | None = None, dominated_by: list[Pointer] | None = None) -> Result:
    entry_id = ids[i]
    score, title, summary, kind, steps = info.fields(i, entry_id)
    return fast_instance(Result, dict(
        id=entry_id, rank=rank, score=score, kind="result", title=title, summary=summary,
        related=related or [], neighbors=neighbors or [], steps=list(steps) if steps else None,
        entry_kind=kind, pool_rank=i + 1, dominated_by=dominated_by or [],
    ))


def _pick_neighbors(shown: list[str], ids: list[str], around: _Around, info: _Info,
                    limit: int) -> dict[str, list[Pointer]]:
    """Up to ``limit`` outside-the-pool neighbours per shown id (in order), none repeated.

    Each id's incident edges are already in neighbour order (see :meth:`EdgeLookup.incident_of`)."""
    if not limit:
        return {}
    used: set[str] = set(ids)
    keep = around.keep
    if info.entries is not None:  # one read for each shown id's first candidates; more one by one
        first = []
        for entry_id in shown:
            fresh = [o for o, _, edge in around.incident.get(entry_id, ())
                     if o not in used and (keep is None or edge[4] in keep)]
            first.extend(fresh[:limit + 1])
        info.fetch(first)
    rows = info.entries
    picked_for: dict[str, list[Pointer]] = {}
    for entry_id in shown:
        picked = []
        for other, direction, edge in around.incident.get(entry_id, ()):
            if other in used or (keep is not None and edge[4] not in keep):
                continue
            if rows is not None and other not in rows:
                info.fetch([other])
            row = None if rows is None else rows.get(other)
            if rows is not None and row is None:  # not an entry the source knows: not handed over
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


