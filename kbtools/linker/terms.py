"""Term statistics of a bank: n, df, smoothed BM25 IDF, hubs and postings as sparse matrices.

idf(t) = ln(1 + (n + 20 - df + 0.5) / (df + 0.5)), 0 when n >= 20 and df / n > 0.5; an entity's
weight w(t) is 1.5 idf(t). Rows of every matrix are aligned with the rows of the entries frame it
was built from (entries of a kind the linker does not link have empty rows and do not count in n).
The statistics also keep the immutable per-entry facts the linker reads (kind, time, session, cue
words), so that linking one entry costs no pass over the bank.

>>> import polars as pl, datetime as dt
>>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
>>> bank = pl.DataFrame({"id": ["a1", "b2"], "kind": ["fact", "fact"], "content": ["green tea", "black tea"],
...                      "created_at": [t, t]})
>>> stats = TermStats.build(bank)
>>> stats.n, round(float(stats.weights(["t:tea"])[0]), 3), round(float(stats.weights(["t:green"])[0]), 3)
(2, 2.219, 2.73)
"""

from __future__ import annotations

import gc
import json
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, islice

import numpy as np
import polars as pl
import scipy.sparse as sp

from kbtools.errors import ValidationError
from kbtools.linker.anchors import ASSET_NOUNS, Anchor, AnchorRows, anchors_of
from kbtools.linker.rules import FIX_RE, LINKER_DEFAULTS, PROBLEM_RE, PROGRESS_RE, LinkerSettings, kind_code
from kbtools.words import stem

#: Values other modules keep in a statistics object's ``_cache``, by key, with how ``extend`` grows
#: them (``grow(old, extended, held) -> held``, what the extended statistics would compute afresh)
CACHE_GROWERS: dict = {}

__all__ = ["TermStats", "CACHE_GROWERS", "entry_text", "idf", "authors_of", "STATS_COLUMNS", "ANCHOR_COLUMNS", "PART_COLUMNS", "anchor_keys",
           "fill_anchors", "gc_paused"]

_TEXT_COLUMNS = ("title", "summary", "content", "useful_for")
#: Every column the statistics read: rows equal on these give equal statistics
STATS_COLUMNS = ("id", "kind", *_TEXT_COLUMNS, "steps", "systems", "metadata", "created_at", "session_id")


def idf(df, n: int, *, virtual: int = 20) -> np.ndarray:
    """Smoothed BM25 IDF with ``virtual`` memories; 0 for a term in most of a grown bank.

    >>> [round(float(x), 3) for x in idf(np.array([1, 4]), 9)]
    [2.996, 1.897]
    """
    df = np.asarray(df, dtype=np.float64)
    out = np.log1p((n + virtual - df + 0.5) / (df + 0.5))
    if n >= 20:
        out = np.where(df / max(n, 1) > 0.5, 0.0, out)
    return out


def entry_text(row: dict) -> str:
    """The text the linker reads for one entry: title, summary, content, useful_for and steps.

    >>> entry_text({"title": "Green tea", "content": "Green tea", "steps": ["Boil water"]})
    'Green tea\\nBoil water'
    """
    return _join_text(*(row.get(col) for col in _TEXT_COLUMNS), row.get("steps"))


def _join_text(title, summary, content, useful_for, steps) -> str:
    parts: list[str] = []
    for value in (title, summary, content, useful_for):
        if value and value.strip() and value.strip() not in parts:
            parts.append(value.strip())
    for step in steps or ():
        if step and step.strip():
            parts.append(step.strip())
    return "\n".join(parts)


@dataclass(frozen=True, eq=False)
class TermStats:
    """Term statistics and per-entry facts of a bank, built once and read by every linking call:
    ``postings`` (CSR, rows = entries aligned with the frame, columns = ``vocab``, 1.0 where the
    entry has the term).

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> s = TermStats.build(pl.DataFrame({"id": ["a"], "kind": ["fact"], "content": ["Line 3 is down"],
    ...                                   "created_at": [t]}))
    >>> s.vocab, s.df.tolist()
    (('e:line 3', 't:line'), [1, 1])
    """

    ids: tuple[str, ...]
    row_of: dict
    n: int
    vocab: tuple[str, ...]
    term_index: dict
    df: np.ndarray
    idf: np.ndarray
    w: np.ndarray
    is_entity: np.ndarray
    hub: np.ndarray
    capped: np.ndarray
    postings: sp.csr_matrix
    anchors: tuple[Anchor, ...] | AnchorRows  #: per entry (made on reading from a bank's cache)
    kind: np.ndarray  #: linker kind code per entry, -1 = not linked
    rank: np.ndarray  #: position in (created_at, id) order
    time_us: np.ndarray
    session: np.ndarray  #: session code per entry, -1 = none
    fix: np.ndarray
    problem: np.ndarray
    progress: np.ndarray
    #: per stored posting (CSR order): whether the term is strong for that entry (not a place/machine
    #: of it; hubs are masked by ``strong_flag``)
    strong_base: np.ndarray = field(default=None, repr=False)
    #: entry rows grouped by session code: rows ``session_rows[session_start[s]:session_start[s + 1]]``
    session_rows: np.ndarray = field(default=None, repr=False)
    session_start: np.ndarray = field(default=None, repr=False)
    known_entities: tuple[str, ...] = ()
    settings: LinkerSettings = field(default=LINKER_DEFAULTS)
    #: per entry, its authors (``metadata`` Author/author/authors), as CSR rows over
    #: ``bag_index["author"]`` columns (the affinity's follow-up term)
    bags: dict = field(default_factory=dict, repr=False)
    bag_index: dict = field(default_factory=dict, repr=False)
    _relations: list = field(default_factory=list, repr=False)  #: cache: [triples frame, Relations]
    _cache: dict = field(default_factory=dict, repr=False)  #: per-frame caches of the planners
    #: the transposed postings as (base, rows, tail): terms x entries for the rows before ``rows``, and
    #: for the rows after (None when there are none), so that an append does not insert into every term
    _transposed: tuple = field(default=None, repr=False)
    #: the growable arrays the postings and strong flags are views of (see ``GrowingBuffer``)
    _buffers: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, entries: pl.DataFrame, *, known_entities=(), settings: LinkerSettings = LINKER_DEFAULTS,
              anchors=None):
        """Statistics of an entries frame; ``known_entities`` are matched case-insensitively.
        ``anchors``: per row, its anchors kept from an earlier build (:func:`anchor_keys`) or None."""
        _check_entries(entries)
        known = _known_keys(known_entities)
        with gc_paused():
            columns, kinds, anchors, texts = _read_entries(entries, known, settings, anchors)
            term_index: dict[str, int] = {}
            indptr, indices, strong_base = _postings_of(anchors, term_index)
            bag_index = {"author": {}}
            facts, cues, bags = _entry_facts(entries), text_cues(texts), _bags(columns, kinds, bag_index, None)
            return cls._finish(tuple(entries["id"].to_list()), term_index, indptr, indices, strong_base, kinds,
                               tuple(anchors), facts, cues, known, settings, bags, bag_index)

    @classmethod
    def _finish(cls, ids, term_index, indptr, indices, strong_base, kinds, anchors, facts, cues, known, settings,
                bags, bag_index, grown: dict | None = None):
        """The statistics from the postings and per-entry facts; ``grown``: what :meth:`extend` computed."""
        grown = grown or {}
        n_rows, n_terms = len(ids), len(term_index)
        buffers = grown.get("buffers")
        if buffers is None:  # a build: the arrays become the start of growable buffers
            kind = _index_dtype(len(indices))
            buffers = {"indptr": GrowingBuffer(np.asarray(indptr, kind)), "indices": GrowingBuffer(np.asarray(indices, kind)),
                       "strong_base": GrowingBuffer(np.asarray(strong_base, bool))}
            indptr, indices, strong_base = (buffers[k].view(len(a)) for k, a in
                                            (("indptr", indptr), ("indices", indices), ("strong_base", strong_base)))
        postings = sp.csr_matrix((_ones(len(indices)), indices, indptr), shape=(n_rows, n_terms), copy=False)
        n = int((kinds >= 0).sum())
        df = grown["df"] if "df" in grown else np.bincount(indices, minlength=n_terms).astype(np.int64)
        vocab = tuple(term_index)
        is_entity = grown["is_entity"] if "is_entity" in grown else np.fromiter(
            (t.startswith("e:") for t in vocab), dtype=bool, count=n_terms)
        idf_ = idf(df, n, virtual=settings.virtual)
        w = np.where(is_entity, 1.5 * idf_, idf_)
        hub = df >= max(4.0, 0.15 * n)
        capped = df > max(50.0, 0.2 * n)
        order = grown["session_rows"] if "session_rows" in grown else np.argsort(facts["session"], kind="stable")
        counts = np.bincount(facts["session"] + 1, minlength=1) if n_rows else np.zeros(1, np.int64)
        session_start = np.concatenate([[0], np.cumsum(counts[1:])]).astype(np.int64) + (counts[0] if n_rows else 0)
        return cls(
            ids=ids, row_of=grown["row_of"] if "row_of" in grown else {i: k for k, i in enumerate(ids)}, n=n,
            vocab=vocab, term_index=term_index, df=df, idf=idf_, w=w, is_entity=is_entity, hub=hub, capped=capped,
            postings=postings, anchors=anchors, kind=kinds, strong_base=strong_base,
            session_rows=order.astype(np.int64), session_start=session_start,
            known_entities=known, settings=settings, bags=bags, bag_index=bag_index, **facts, **cues,
            _transposed=grown["transposed"] if "transposed" in grown else (postings.T.tocsr(), n_rows, None),
            _buffers=buffers,
        )

    def parts(self) -> dict:
        """What :meth:`from_parts` needs besides the entries and anchors, as numpy arrays and lists of strings."""
        out = {"vocab": list(self.vocab), "indptr": np.asarray(self.postings.indptr, np.int64),
               "indices": np.asarray(self.postings.indices, np.int64),
               "strong_base": np.asarray(self.strong_base, bool)}
        for name in ("fix", "problem", "progress"):
            out[name] = np.asarray(getattr(self, name), bool)
        for name, bag in self.bags.items():
            out[f"bag:{name}:indptr"] = np.asarray(bag.indptr, np.int64)
            out[f"bag:{name}:indices"] = np.asarray(bag.indices, np.int64)
            out[f"bag:{name}:labels"] = list(self.bag_index[name])
        return out

    @classmethod
    def from_parts(cls, entries: pl.DataFrame, parts: dict, anchors, *, known_entities=(),
                   settings: LinkerSettings = LINKER_DEFAULTS) -> "TermStats":
        """The statistics :meth:`build` gives for ``entries``, from the :meth:`parts` of statistics
        built from the same rows (same kinds, texts, systems and metadata, in the same order) and
        their anchors: nothing is read from the texts again.

        >>> import polars as pl, datetime as dt
        >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        >>> frame = pl.DataFrame({"id": ["a1", "b2"], "kind": ["fact", "fact"], "content": ["green tea", "black tea"],
        ...                       "created_at": [t, t]})
        >>> s = TermStats.build(frame)
        >>> back = TermStats.from_parts(frame, s.parts(), s.anchors)
        >>> back.vocab == s.vocab and back.weights(["t:tea"]).tolist() == s.weights(["t:tea"]).tolist()
        True
        """
        _check_entries(entries)
        n = entries.height
        known = _known_keys(known_entities)
        indptr, indices = np.asarray(parts["indptr"], np.int64), np.asarray(parts["indices"], np.int64)
        if len(anchors) != n or len(indptr) != n + 1 or int(indptr[-1]) != len(indices) \
                or len(parts["strong_base"]) != len(indices):
            raise ValidationError("parts", n, "must be the parts of statistics of these rows")
        codes = {k: kind_code(k) for k in set(entries["kind"].to_list())}
        kinds = np.array([codes[k] for k in entries["kind"].to_list()], dtype=np.int64)
        term_index = {t: i for i, t in enumerate(parts["vocab"])}
        labels, bptr = parts["bag:author:labels"], np.asarray(parts["bag:author:indptr"], np.int64)
        bcols = np.asarray(parts["bag:author:indices"], np.int64)
        bag_index = {"author": {x: i for i, x in enumerate(labels)}}
        bags = {"author": sp.csr_matrix((np.ones(len(bcols)), bcols, bptr), shape=(len(bptr) - 1, max(len(labels), 1)))}
        cues = {name: np.asarray(parts[name], bool) for name in ("fix", "problem", "progress")}
        with gc_paused():
            return cls._finish(tuple(entries["id"].to_list()), term_index, indptr, indices,
                               np.asarray(parts["strong_base"], bool), kinds,
                               anchors if isinstance(anchors, AnchorRows) else tuple(anchors), _entry_facts(entries),
                               cues, known, settings, bags, bag_index)

    def extend(self, entries: pl.DataFrame) -> "TermStats":
        """The statistics of ``entries``: the rows these were built from (same ids, same order),
        then new ones, whose texts alone are read. Equals ``TermStats.build(entries)`` with the same
        known entities and settings (rebuild when the triples name new entities).

        >>> import polars as pl, datetime as dt
        >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        >>> bank = pl.DataFrame({"id": ["a1", "b2"], "kind": ["fact", "fact"], "content": ["green tea", "black tea"],
        ...                      "created_at": [t, t]})
        >>> s = TermStats.build(bank.head(1)).extend(bank)
        >>> s.n, round(float(s.weights(["t:tea"])[0]), 3)
        (2, 2.219)
        """
        old = len(self.ids)
        if entries.height < old or not entries["id"].head(old).equals(self.id_series(), check_names=False):
            raise ValidationError("entries", entries.height, "must start with the rows these statistics were built "
                                  "from, in the same order; rebuild them with TermStats.build(entries)")
        _check_entries(entries.slice(old))  # the first rows were checked when these statistics were built
        clash = next((i for i in entries["id"].slice(old).to_list() if i in self.row_of), None)
        if clash is not None:
            raise ValidationError("id", clash, "entry ids must be unique")
        if entries.height == old:
            return self
        new = entries.slice(old)
        with gc_paused():
            columns, kinds, anchors, texts = _read_entries(new, self.known_entities, self.settings)
        term_index = dict(self.term_index)
        nnz = int(self.postings.indptr[-1])
        new_indptr, new_indices, new_strong = _postings_of(anchors, term_index, nnz)
        new_indptr = np.asarray(new_indptr[1:], np.int64)
        new_indices = np.asarray(new_indices, np.int64)
        # the postings grow at the end of their buffers (these statistics keep their own views)
        buffers = dict(self._buffers)
        indptr = _grow(buffers, "indptr", old + 1, new_indptr)
        indices = _grow(buffers, "indices", nnz, new_indices)
        strong_base = _grow(buffers, "strong_base", nnz, new_strong)
        cues = {k: np.concatenate([getattr(self, k), v]) for k, v in text_cues(texts).items()}
        new_ids = new["id"].to_list()
        ids = self.ids + tuple(new_ids)
        bag_index = {k: dict(v) for k, v in self.bag_index.items()}
        bags = _bags(columns, kinds, bag_index, self.bags)
        # what the whole bank needs, grown by the new rows only (a linked add extends every write)
        n_terms = len(term_index)
        new_rows = np.repeat(np.arange(old, entries.height, dtype=np.int64),
                             np.diff(np.concatenate([[self.postings.indptr[-1]], new_indptr])))
        row_of = dict(self.row_of)
        row_of.update(zip(new_ids, range(old, entries.height)))
        added_terms = [t.startswith("e:") for t in list(term_index)[len(self.term_index):]]
        grown = {
            "row_of": row_of,
            "df": np.concatenate([self.df, np.zeros(n_terms - len(self.df), np.int64)])
            + np.bincount(new_indices, minlength=n_terms),
            "is_entity": np.concatenate([self.is_entity, np.array(added_terms, dtype=bool)]),
            "transposed": self._grown_transposed(new_rows, new_indices, indptr, indices, n_terms, entries.height),
            "buffers": buffers,
        }
        facts, sessions = self._grown_facts(entries, new)
        if sessions is not None:  # ranks and session codes kept: the new rows join their sessions' ends
            grown["session_rows"] = _joined_sessions(self.session_rows, facts["session"], old)
        out = type(self)._finish(ids, term_index, indptr, indices, strong_base, np.concatenate([self.kind, kinds]),
                                 self.anchors + tuple(anchors), facts, cues, self.known_entities, self.settings,
                                 bags, bag_index, grown)
        if sessions is not None:
            out._cache["sessions"] = sessions
        out._cache["ids"] = entries["id"]  # the frame's column, not a new series of every id
        for key, grow in CACHE_GROWERS.items():  # a linked add extends the statistics every write
            held = self._cache.get(key)
            if held is not None:
                out._cache[key] = grow(self, out, held)
        return out

    def _grown_facts(self, entries: pl.DataFrame, new: pl.DataFrame) -> tuple[dict, np.ndarray | None]:
        """``_entry_facts(entries)`` grown by the new rows, and the sorted session names (None when
        a new row does not come last in (created_at, id) order: all read again). Session codes are
        dense ranks, so a new session among the known ones moves the later codes up."""
        old = len(self.ids)
        fresh = _entry_facts(new)
        if old:
            last = int(np.argmax(self.rank))
            t_last, id_last = int(self.time_us[last]), self.ids[last]
            if not all((t, i) > (t_last, id_last) for t, i in zip(fresh["time_us"].tolist(), new["id"].to_list())):
                return _entry_facts(entries), None
        known = self._cache.get("sessions")
        if known is None:
            known = _session_names(entries.head(old))
        names = _session_names(new)
        at = np.searchsorted(known, names)
        unseen = names[(at >= len(known)) | (known[np.minimum(at, max(len(known) - 1, 0))] != names)] \
            if known.size else names
        merged = (np.insert(known.astype(np.result_type(known, unseen)), np.searchsorted(known, unseen), unseen)
                  if unseen.size else known)  # the wider string type: numpy would cut longer names
        old_codes = self.session
        if unseen.size and known.size and unseen[0] <= known[-1]:  # both sorted: a new session among the known
            remap = np.searchsorted(merged, known)  # ranks are dense: the known ones move up
            old_codes = np.where(self.session >= 0, remap[np.maximum(self.session, 0)], -1)
        codes = np.full(new.height, -1, np.int64)
        if "session_id" in new.columns:
            have = np.flatnonzero(new["session_id"].is_not_null().to_numpy())
            if have.size:
                values = new["session_id"].cast(pl.String).to_numpy()[have].astype(str)
                codes[have] = np.searchsorted(merged, values)
        return ({"rank": np.concatenate([self.rank, old + fresh["rank"]]),
                 "time_us": np.concatenate([self.time_us, fresh["time_us"]]),
                 "session": np.concatenate([old_codes, codes])}, merged)

    @property
    def strong_flag(self) -> np.ndarray:
        """Per stored posting, whether its term is strong for its entry and not a hub."""
        held = self._cache.get("strong_flag")
        if held is None:
            held = self._cache["strong_flag"] = self.strong_base & ~self.hub[self.postings.indices]
        return held

    @property
    def total(self) -> np.ndarray:
        """W(S(e)) per entry: the summed weights of its terms."""
        held = self._cache.get("total")
        if held is None:  # as a CSR row sum adds them
            held = self._cache["total"] = segment_sums(self.w[self.postings.indices], np.diff(self.postings.indptr))
        return held

    def totals(self, rows) -> np.ndarray:
        """``total[rows]``; for a few rows (a write's) their own sums, not every entry's."""
        rows = np.asarray(rows, np.int64)
        if "total" in self._cache or len(rows) * 64 >= len(self.ids):
            return self.total[rows]
        indptr = self.postings.indptr
        lengths = indptr[rows + 1] - indptr[rows]
        at = np.repeat(indptr[rows] - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        return segment_sums(self.w[self.postings.indices[at]], lengths)

    def transposed_parts(self) -> tuple[sp.csr_matrix, ...]:
        """``postings_t`` as matrices that sum to it: the last full transpose and the rows appended since."""
        held = self._cache.get("transposed parts")
        if held is None:
            base, _, tail = self._transposed
            shape = (len(self.vocab), len(self.ids))
            held = (_padded(base, shape),) if tail is None else (_padded(base, shape), tail)
            self._cache["transposed parts"] = held
        return held

    @property
    def postings_t(self) -> sp.csr_matrix:
        """The postings transposed (CSR, terms x entries); the linker reads ``transposed_parts``."""
        return self.postings.T.tocsr()

    def _grown_transposed(self, new_rows: np.ndarray, new_cols: np.ndarray, indptr, indices, n_terms: int,
                          n_rows: int) -> tuple:
        """The transposed postings extended to ``n_rows``: the base and a tail grown by the new
        postings while the rows since the base are few, else one new base."""
        base, rows, tail = self._transposed
        if n_rows - rows > max(_TAIL_ROWS, n_rows // 32):  # every posting of the rows after the base
            after = np.repeat(np.arange(rows, n_rows, dtype=np.int64), np.diff(indptr[rows:]).astype(np.int64))
            cols = np.asarray(indices[int(indptr[rows]):], np.int64)
            return _transposed_with(base, after, cols, n_terms, n_rows), n_rows, None
        if tail is None:
            tail = sp.csr_matrix((len(self.vocab), n_rows), dtype=np.float64)
        return base, rows, _transposed_with(tail, new_rows, new_cols, n_terms, n_rows)

    def id_series(self) -> pl.Series:
        """The entries' ids in row order as a polars Series (made once, then kept)."""
        cached = self._cache.get("ids")
        if cached is None:
            cached = self._cache["ids"] = pl.Series("id", self.ids, dtype=pl.String)
        return cached

    def weights(self, terms) -> np.ndarray:
        """w(t) of each term; a term the bank does not hold weighs as if df were 0.

        >>> import polars as pl, datetime as dt
        >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        >>> s = TermStats.build(pl.DataFrame({"id": ["a"], "kind": ["fact"], "content": ["E-217"],
        ...                                   "created_at": [t]}))
        >>> [round(float(x), 2) for x in s.weights(["e:e-217", "t:unknown"])]
        [4.03, 3.78]
        """
        unseen = float(idf(np.array([0]), self.n, virtual=self.settings.virtual)[0])
        return np.array([self.w[k] if (k := self.term_index.get(t)) is not None else
                         unseen * (1.5 if t.startswith("e:") else 1.0) for t in terms], dtype=np.float64)

    def check_aligned(self, entries: pl.DataFrame) -> None:
        """Raise ValidationError unless these statistics were built from this frame's rows."""
        if self._cache.get("aligned") is entries:
            return
        if entries.height != len(self.ids) or not entries["id"].equals(self.id_series(), check_names=False):
            raise ValidationError(
                "stats", f"{len(self.ids)} entries", f"were built from another entries frame ({entries.height} rows); "
                "rebuild them with TermStats.build(entries)",
            )
        self._cache["aligned"] = entries


@lru_cache(maxsize=1 << 18)
def _is_asset(key: str) -> bool:
    head = key.split(" ", 1)
    return len(head) == 2 and head[0] in ASSET_NOUNS and (len(head[1]) == 1 or any(ch.isdigit() for ch in head[1]))


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector paused while a bank's per-entry objects (no cycles) are
    made; they then join the oldest generation at once (``gc.freeze``, ``gc.unfreeze``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _read_entries(entries: pl.DataFrame, known: tuple[str, ...], settings: LinkerSettings = LINKER_DEFAULTS,
                  given=None):
    """Columns (lists), kind codes, anchors and texts of an entries frame; ``given``: anchors known per row."""
    n = entries.height
    columns = {c: entries[c].to_list() if c in entries.columns else [None] * n
               for c in ("kind", *_TEXT_COLUMNS, "steps", "systems", "metadata")}
    codes = {k: kind_code(k) for k in set(columns["kind"])}
    kinds = np.array([codes[k] for k in columns["kind"]], dtype=np.int64)
    texts, knowns = [], []
    for code, title, summary, content, useful_for, steps, systems in zip(
        kinds.tolist(), *(columns[c] for c in _TEXT_COLUMNS), columns["steps"], columns["systems"],
    ):
        texts.append(_join_text(title, summary, content, useful_for, steps) if code >= 0 else "")
        knowns.append(known + tuple(s.lower() for s in systems if s) if systems else known)
    if given is None:
        return columns, kinds, anchors_of(texts, knowns), texts
    if len(given) != n:
        raise ValidationError("anchors", len(given), f"must hold one entry per row ({n})")
    todo = [k for k, a in enumerate(given) if a is None]
    read = iter(anchors_of([texts[k] for k in todo], [knowns[k] for k in todo]))
    return columns, kinds, [a if a is not None else next(read) for a in given], texts


def fill_anchors(entries: pl.DataFrame, given: AnchorRows, *, known_entities=(),
                 settings: LinkerSettings = LINKER_DEFAULTS) -> AnchorRows:
    """``given`` (per row of ``entries``) with its missing anchors read from their rows' texts, as
    ``TermStats.build`` reads them (only those rows are read)."""
    todo = given.missing().tolist()
    if not todo:
        return given
    with gc_paused():
        read = _read_entries(entries[todo], _known_keys(known_entities), settings)[2]
    return given.filled(dict(zip(todo, read)))


#: The entry columns an entry's anchors are read from (with its kind and the bank's known entities)
ANCHOR_COLUMNS = ("kind", *_TEXT_COLUMNS, "steps", "systems")
#: The entry columns what ``TermStats.parts`` holds of a row is read from
PART_COLUMNS = (*ANCHOR_COLUMNS, "metadata")


def anchor_keys(entries: pl.DataFrame, columns=ANCHOR_COLUMNS) -> np.ndarray:
    """A 128-bit key per row (shape (rows, 2)) of what its anchors are read from (``columns``), to
    find anchors kept from an earlier build; polars' hash, stable within one polars version."""
    cols = [c for c in columns if c in entries.columns]
    both = entries.select(pl.struct(cols).hash(seed=0).alias("a"), pl.struct(cols).hash(seed=7919).alias("b"))
    return both.to_numpy()


_AUTHOR_SPLIT_RE = re.compile(r"\s*(?:,|;|\band\b)\s*")
_EMAIL_RE = re.compile(r"<[^>]*>|\([^)]*\)")


def authors_of(metadata) -> list[str]:
    """The authors an entry's metadata names (``Author``, ``author`` or ``authors``), lower case.

    >>> authors_of('{"Author": "Guido van Rossum <guido@python.org>, Barry Warsaw"}')
    ['guido van rossum', 'barry warsaw']
    """
    meta = metadata_of(metadata)
    value = meta.get("Author", meta.get("author", meta.get("authors")))
    if not value:
        return []
    parts = value if isinstance(value, list) else _AUTHOR_SPLIT_RE.split(_EMAIL_RE.sub(" ", str(value)))
    return [p for p in (" ".join(str(x).split()).lower() for x in parts) if p]


def _bags(columns: dict, kinds, bag_index: dict, old: dict | None) -> dict:
    """CSR rows of these rows' authors (after ``old`` when given), a new author in the next column."""
    linked = (kinds >= 0).tolist()
    meta = columns["metadata"]  # no author key can be spelled in JSON text without "uthor" or an escape
    authors = {k: list(dict.fromkeys(authors_of(v))) for k, (v, ok) in enumerate(zip(meta, linked))
               if ok and v and (not isinstance(v, str) or "uthor" in v or "\\u" in v)}
    lengths = np.zeros(len(linked), np.int64)
    lengths[list(authors)] = [len(a) for a in authors.values()]
    labels = list(chain.from_iterable(authors.values()))
    index = bag_index["author"]
    number = {x: index.setdefault(x, len(index)) for x in dict.fromkeys(labels)}
    indices = np.fromiter(map(number.__getitem__, labels), np.int64, len(labels))
    indices = indices[np.lexsort((indices, np.repeat(np.arange(len(lengths)), lengths)))]  # each row sorted
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    if old is not None and "author" in old:
        base = old["author"]
        indptr = np.concatenate([base.indptr, base.indptr[-1] + indptr[1:]])
        indices = np.concatenate([base.indices.astype(np.int64), indices])
    return {"author": sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(indptr) - 1, max(len(index), 1)))}


def _postings_of(anchors, term_index: dict, base: int = 0):
    """The anchors' terms as CSR rows (``indptr`` from ``base``, columns sorted, new terms numbered
    in order of first use) and whether each is strong for its entry (not one of its places/machines)."""
    terms = [a.terms for a in anchors]
    lengths = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
    flat = list(chain.from_iterable(terms))
    numbered = _Numbered(term_index)
    cols = np.fromiter(map(numbered.__getitem__, flat), dtype=np.int64, count=len(flat))
    term_index.update(islice(numbered.items(), len(term_index), None))
    keys = np.repeat(np.arange(len(anchors), dtype=np.int64), lengths) << 32 | cols
    keys.sort()  # each row's columns in order (a row holds a term once)
    cols = keys & 0xFFFFFFFF
    ends = np.cumsum(lengths)
    strong = np.ones(len(cols), dtype=bool)
    assets = {e for e in set(chain.from_iterable(a.entities for a in anchors)) if _is_asset(e)}
    if assets:  # only an entry naming a place/machine has weak terms
        vocab = list(term_index)
        for k, a in enumerate(anchors):
            if not assets.isdisjoint(a.entities):
                place_words = {f"t:{stem(e.split()[0])}" for e in a.entities if _is_asset(e)}
                lo, hi = int(ends[k] - lengths[k]), int(ends[k])
                strong[lo:hi] = [not (_is_asset(t[2:]) and t.startswith("e:")) and t not in place_words
                                 for t in (vocab[c] for c in cols[lo:hi].tolist())]
    indptr = base + np.concatenate([[0], ends])
    return indptr, cols, strong


class _Numbered(dict):
    """A dict that numbers a missing key as it is read: the next number, ``len`` of the dict."""

    def __missing__(self, key):
        number = self[key] = len(self)
        return number


def row_positions(indptr: np.ndarray, rows: np.ndarray):
    """The stored positions of these CSR rows, in order, and for each the index of its row in ``rows``.

    >>> row_positions(np.array([0, 2, 2, 5]), np.array([2, 0]))
    (array([0, 0, 0, 1, 1]), array([2, 3, 4, 0, 1]))
    >>> row_positions(np.array([0, 2, 2, 5]), np.array([2]))
    (array([0, 0, 0]), array([2, 3, 4]))
    """
    if len(rows) == 1:  # one entry's row (linking one entry reads a few): a slice, a tenth of the steps
        lo, hi = int(indptr[rows[0]]), int(indptr[rows[0] + 1])
        return np.zeros(hi - lo, np.int64), np.arange(lo, hi, dtype=np.int64)
    lo, hi = indptr[rows].astype(np.int64), indptr[rows + 1].astype(np.int64)
    lengths = hi - lo
    pair = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    pos = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths - lo, lengths)
    return pair, pos


def segment_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of ``values`` with these lengths (0 for an empty one)."""
    out = np.zeros(len(lengths))
    filled = lengths > 0
    if filled.any():
        out[filled] = np.add.reduceat(values, (np.cumsum(lengths) - lengths)[filled])
    return out


def _known_keys(known_entities) -> tuple[str, ...]:
    return tuple(sorted({str(k).strip().lower() for k in known_entities if k and str(k).strip()}))


def _check_entries(entries: pl.DataFrame) -> None:
    for col in ("id", "kind", "created_at"):
        if col not in entries.columns:
            raise ValidationError(col, None, "the entries frame needs columns id, kind and created_at")
    if entries.height and entries["id"].n_unique() != entries.height:
        dup = entries.filter(pl.col("id").is_duplicated())["id"][0]
        raise ValidationError("id", dup, "entry ids must be unique")
    nulls = entries.filter(pl.col("created_at").is_null())
    if nulls.height:
        raise ValidationError("created_at", None, "every entry needs a created_at", row=nulls["id"][0])


#: Rows appended since the last full transpose that are transposed apart (or a 32nd of the bank)
_TAIL_ROWS = 2048


class GrowingBuffer:
    """A growable 1-d array whose first items statistics hold views of: an append at the last item
    written fills spare room; one from an older end gets a buffer of its own (old views intact)."""

    __slots__ = ("data", "filled", "lock")

    def __init__(self, data: np.ndarray):
        self.data, self.filled, self.lock = data, len(data), threading.Lock()

    def __getstate__(self):  # statistics may be pickled (a process pool): the lock is made anew
        return self.data, self.filled

    def __setstate__(self, state):
        self.data, self.filled = state
        self.lock = threading.Lock()

    def view(self, length: int) -> np.ndarray:
        out = self.data[:length]
        out.flags.writeable = False
        return out

    def append(self, length: int, new: np.ndarray) -> "GrowingBuffer":
        """The buffer holding these first ``length`` items followed by ``new`` (this one or a new one)."""
        new = np.asarray(new)
        dtype = self.data.dtype
        if new.size and dtype.kind == "i" and int(new.max()) > np.iinfo(dtype).max:
            dtype = np.dtype(np.int64)
        with self.lock:
            if length == self.filled and dtype == self.data.dtype and length + len(new) <= len(self.data):
                self.data[length : length + len(new)] = new
                self.filled = length + len(new)
                return self
        bigger = np.empty(int(1.25 * (length + len(new))) + 1024, dtype)
        bigger[:length] = self.data[:length]
        bigger[length : length + len(new)] = new
        out = GrowingBuffer(bigger)
        out.filled = length + len(new)
        return out


def _grow(buffers: dict, name: str, length: int, new: np.ndarray) -> np.ndarray:
    """A view of buffer ``name``'s first ``length`` items followed by ``new`` (``buffers`` updated)."""
    buffers[name] = buffers[name].append(length, new)
    return buffers[name].view(length + len(new))


def _index_dtype(size: int):
    return np.int32 if size < np.iinfo(np.int32).max else np.int64


_ONES = [np.ones(0)]  #: one read-only array of ones shared by the postings' data (a view of its start)
_ONES_LOCK = threading.Lock()


def _ones(n: int) -> np.ndarray:
    with _ONES_LOCK:
        if len(_ONES[0]) < n:
            ones = np.ones(int(1.25 * n) + 4096)
            ones.flags.writeable = False
            _ONES[0] = ones
        return _ONES[0][:n]


def _padded(matrix: sp.csr_matrix, shape: tuple[int, int]) -> sp.csr_matrix:
    """A CSR ``matrix`` as ``shape`` (more rows, all empty, and more columns), sharing its arrays."""
    if matrix.shape == shape:
        return matrix
    indptr = np.concatenate([matrix.indptr, np.full(shape[0] - matrix.shape[0], matrix.indptr[-1], matrix.indptr.dtype)])
    return sp.csr_matrix((matrix.data, matrix.indices, indptr), shape=shape, copy=False)


def _joined_sessions(session_rows: np.ndarray, session: np.ndarray, old: int) -> np.ndarray:
    """``argsort(session, kind="stable")`` grown from the first ``old`` rows' order (new rows last)."""
    new = np.arange(old, len(session), dtype=np.int64)
    new = new[np.argsort(session[new], kind="stable")]
    at = np.searchsorted(session[session_rows], session[new], side="right")
    return np.insert(session_rows, at, new)


def _transposed_with(postings_t: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray, n_terms: int,
                     n_rows: int) -> sp.csr_matrix:
    """``postings_t`` (terms x entries) with the postings (row, column) of entries after its
    columns, at the end of each term's row: the grown postings' transpose, not transposed again."""
    old_counts = np.diff(postings_t.indptr).astype(np.int64)
    old_counts = np.concatenate([old_counts, np.zeros(n_terms - len(old_counts), np.int64)])
    order = np.lexsort((rows, cols))
    rows, cols = rows[order], cols[order]
    old_indptr = np.concatenate([[0], np.cumsum(old_counts)])
    indices = np.insert(postings_t.indices, old_indptr[cols + 1], rows.astype(postings_t.indices.dtype))
    indptr = np.concatenate([[0], np.cumsum(old_counts + np.bincount(cols, minlength=n_terms))])
    kind = _index_dtype(max(len(indices), n_rows))
    return sp.csr_matrix((_ones(len(indices)), indices.astype(kind, copy=False), indptr.astype(kind)),
                         shape=(n_terms, n_rows), copy=False)


def _session_names(frame: pl.DataFrame) -> np.ndarray:
    """The distinct session ids of a frame, sorted as polars ranks them (strings, byte order)."""
    if "session_id" not in frame.columns or frame.height == 0:
        return np.array([], dtype=str)
    if frame.height <= 8:  # a write's rows
        return np.array(sorted({x for x in frame["session_id"].cast(pl.String).to_list() if x is not None}), dtype=str)
    return np.sort(frame["session_id"].drop_nulls().cast(pl.String).unique().to_numpy().astype(str))


def _entry_facts(entries: pl.DataFrame) -> dict:
    n = entries.height
    if 0 < n <= 8:  # a write's rows: told in Python (each polars call costs more here), as below
        times = entries["created_at"].cast(pl.Datetime("us", "UTC")).to_physical().to_list()
        ids = entries["id"].to_list()
        rank = np.empty(n, np.int64)
        rank[sorted(range(n), key=lambda i: (times[i], ids[i]))] = np.arange(n)
        names = entries["session_id"].cast(pl.String).to_list() if "session_id" in entries.columns else [None] * n
        code = {name: i for i, name in enumerate(sorted({x for x in names if x is not None}))}
        return dict(rank=rank, time_us=np.asarray(times, np.int64),
                    session=np.asarray([-1 if x is None else code[x] for x in names], np.int64))
    time_us = entries["created_at"].cast(pl.Datetime("us", "UTC")).dt.epoch("us").to_numpy().astype(np.int64)
    rank = np.empty(n, np.int64)
    if n:
        order = entries.select(pl.arg_sort_by(pl.col("created_at").cast(pl.Datetime("us", "UTC")), pl.col("id")))
        rank[order.to_series().to_numpy()] = np.arange(n)
    if "session_id" in entries.columns:
        # dense codes 0..S-1 (same session <=> same code), -1 for none
        codes = entries.select(pl.col("session_id").cast(pl.String).rank("dense") - 1).to_series()
        session = codes.fill_null(-1).to_numpy().astype(np.int64)
    else:
        session = np.full(n, -1, np.int64)
    return dict(rank=rank, time_us=time_us, session=session)


_FEW_TEXTS = 8  #: texts read by Python's regex engine in :func:`text_cues` (when all ASCII)


def text_cues(texts: list[str]) -> dict:
    """Whether each text names a fix, a problem, progress: the rules' patterns run by polars (Rust
    regex) over the whole column. Rust's fast engines give up on a Unicode word boundary in a
    non-ASCII text, so a non-ASCII non-word character (a boundary to every pattern) reads as ``#``
    and a text then all ASCII is read lower-cased with ASCII classes; the others as they are."""
    patterns = (("fix", FIX_RE), ("problem", PROBLEM_RE), ("progress", PROGRESS_RE))
    if len(texts) <= _FEW_TEXTS and all(t is None or t.isascii() for t in texts):
        # a write's one text: Python's engine reads an ASCII text as Rust's ASCII classes do,
        # without building a frame and a query plan for each write
        return {name: np.array([t is not None and pattern.search(t) is not None for t in texts], dtype=bool)
                for name, pattern in patterns}
    column = pl.Series("text", texts, dtype=pl.String)
    narrow = pl.col("text").str.replace_all(r"[^\x00-\x7F\w]", "#")
    lowered = narrow.str.to_lowercase()  # the patterns are case-insensitive, their letters lower case
    read = pl.LazyFrame([column]).select(
        narrow.str.contains(r"[^\x00-\x7F]").fill_null(False).alias("wide"),
        *(lowered.str.contains("(?-u)" + pattern.pattern).fill_null(False).alias(name) for name, pattern in patterns),
    ).collect(engine="streaming")
    others = np.flatnonzero(read["wide"].to_numpy())
    out = {}
    for name, pattern in patterns:
        found = read[name].to_numpy().astype(bool)
        if others.size:
            found[others] = column.gather(others).str.contains("(?i)" + pattern.pattern).fill_null(False).to_numpy()
        out[name] = found
    return out


def metadata_of(value) -> dict:
    """The metadata JSON text of an entry as a dict ({} when empty or not an object)."""
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}
