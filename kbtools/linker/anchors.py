"""What an entry is about: its entities and its salient terms (seed 001, step 1).

Entities are lower-case keys: identifiers (INC-4521, E-217, S7-1500, 10.20.0.0/16), assets with a
number (line 3, press 12, cell 4B) and the entities the triples already know (matched
case-insensitively). Salient terms are the entity keys as ``e:<key>`` plus the content words as
``t:<stem>``.

>>> anchor("Found it: the encoder cable on line 3 was loose.").terms
('e:line 3', 't:found', 't:encod', 't:cabl', 't:line', 't:loos')
>>> anchor("Goal: Ship the Kioko memory layer by December 15.", known_entities=["Kioko"]).entities
('kioko',)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

import numpy as np
import polars as pl

from kbtools.words import WORD_RE, content_stem, content_words

__all__ = ["Anchor", "AnchorRows", "anchor", "anchors_of", "column_words", "ASSET_NOUNS", "anchor_frame"]

#: Nouns that name a place or machine when a number follows ("line 3", "cell 4B").
ASSET_NOUNS: tuple[str, ...] = (
    "line", "press", "cell", "server", "station", "machine", "robot", "pump", "tank", "oven",
    "kiln", "furnace", "bay", "dock", "zone", "room", "building", "site", "unit", "node", "host",
    "rack", "cabinet", "boiler", "lathe", "mill", "conveyor", "belt", "gate", "floor", "hall",
    "warehouse", "truck", "vehicle", "cluster", "shard", "region", "plant", "stage", "lane",
)


def _noun_trie(nouns) -> str:
    """An alternation of ``nouns`` grouped by first letter (one test per letter, not per noun)."""
    tails: dict[str, list[str]] = {}
    for noun in nouns:
        tails.setdefault(noun[0], []).append(noun[1:])
    return "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in tails.items())


#: Every alternative holds a digit (``_DIGIT_RE``): a text without one is not searched
IDENT_RE = re.compile(
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?\b"  # addresses 10.20.0.0/16
    r"|\b[A-Za-z]*\d[A-Za-z0-9]*(?:-[A-Za-z0-9]+)+\b"  # part / model numbers S7-1500
    r"|\b[A-Z][A-Za-z]*(?:-[A-Za-z0-9]*\d[A-Za-z0-9]*)+\b"  # tickets, codes INC-4521, E-217
    r"|\b(?=[A-Za-z]*[A-Z])(?=[A-Za-z]*[a-zA-Z]\d)[A-Za-z]+\d+[A-Za-z0-9]*\b"  # X200, DB17
)
#: "line 3", "press No. 12", "cell 4B", "bay C": the noun in any case, then a whole number (with one
#: letter; "line 12)" and "line 12.5" name no asset) or one capital letter ("line is" names none)
ASSET_RE = re.compile(
    r"\b(" + _noun_trie(ASSET_NOUNS) + r")\s+(?:no\.?\s*|#)?((?>\d+[A-Za-z]?)|(?-i:[A-Z]))(?![\w)/.-]\w)(?!\))",
    re.IGNORECASE,
)
_DIGIT_RE = re.compile(r"\d")
_KNOWN_TOKEN_RE = re.compile(r"[\w][\w.+/-]*[\w+]|\w")
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+/-")  #: in ASCII text


@dataclass(frozen=True)
class Anchor:
    """Entities (lower-case keys) and salient terms (``e:<key>``, ``t:<stem>``) of one text.

    ``labels`` holds how each term reads in the text (the entity key, or the word as written).

    >>> a = anchor("User likes green tea.")
    >>> a.terms, a.labels
    (('t:green', 't:tea'), ('green', 'tea'))
    """

    entities: tuple[str, ...]
    terms: tuple[str, ...]
    labels: tuple[str, ...] = ()


def anchor(text: str, *, known_entities=()) -> Anchor:
    """Entities and salient terms of a text (seed 001, step 1).

    >>> anchor("Decision: Vector database - chose pgvector because we already run Postgres.",
    ...        known_entities=("Kioko", "pgvector")).entities
    ('pgvector',)
    >>> anchor("Line 3 keeps faulting with error E-217.").terms
    ('e:e-217', 'e:line 3', 't:line', 't:fault', 't:error')
    """
    return anchors_of([text or ""], [known_entities])[0]


def anchors_of(texts, knowns) -> list[Anchor]:
    """``[anchor(t, known_entities=k) for t, k in zip(texts, knowns)]``, the content words of all
    texts read at once (``column_words``).

    >>> anchors_of(["Line 3 keeps faulting with error E-217.", ""], [(), ()])[0].terms
    ('e:e-217', 'e:line 3', 't:line', 't:fault', 't:error')
    """
    texts = list(texts)
    indexes: dict = {}
    found, stripped = [], []
    for text, known, digit, asset in zip(texts, knowns, *_hints(texts)):
        known = tuple(known)
        index = indexes.get(known)
        if index is None:
            index = indexes[known] = _known_index(known)
        entities, rest = _entities(text, index, digit, asset)
        found.append(entities)
        stripped.append(rest)
    stems, surfaces, offsets = column_words(stripped)
    out = []
    for k, (text, entities) in enumerate(zip(texts, found)):
        lo, hi = offsets[k], offsets[k + 1]
        if not text:
            out.append(_EMPTY)
        elif entities:  # each key once, its term ahead of the words' terms
            keys = tuple(dict.fromkeys(entities))
            out.append(Anchor(keys, tuple(["e:" + key for key in keys] + stems[lo:hi]), keys + tuple(surfaces[lo:hi])))
        else:
            out.append(Anchor((), tuple(stems[lo:hi]), tuple(surfaces[lo:hi])))
    return out


_PY_SPACE = r"[\t\n\x0b\x0c\r \x1c-\x1f]"  #: what Python's \s matches in ASCII text
_FEW = 32  #: below this many texts, ``_hints`` and ``column_words`` do not start polars


def _hints(texts: list[str]) -> tuple[list, list]:
    """Per text, whether ``IDENT_RE`` can match it (a digit) and whether ``ASSET_RE`` can (an asset
    noun then a space), read by polars; True for both in a non-ASCII text (Python's classes are wider)."""
    if len(texts) < _FEW:
        return [_DIGIT_RE.search(text) is not None for text in texts], [True] * len(texts)
    text = pl.col("text")
    wide = text.str.contains(r"[^\x00-\x7F]")
    read = pl.LazyFrame({"text": pl.Series(texts, dtype=pl.String)}).select(  # one pass for both, on every core
        (text.str.contains("[0-9]") | wide).fill_null(False).alias("digit"),
        (text.str.contains(r"(?i)(?:" + "|".join(ASSET_NOUNS) + ")" + _PY_SPACE) | wide).fill_null(False).alias("asset"),
    ).collect(engine="streaming")
    return read["digit"].to_list(), read["asset"].to_list()


def _entities(text: str, known: tuple, digit: bool, asset: bool) -> tuple[list[str], str]:
    """The entity keys of a text and the text its content words are read from (identifiers cut
    out); ``known``: a ``_known_index``; ``digit``, ``asset``: the ``_hints``."""
    idents = list(IDENT_RE.finditer(text)) if digit else []
    keys = [match.group(0).lower() for match in idents]
    if asset:
        keys.extend(f"{match.group(1).lower()} {match.group(2).lower()}" for match in ASSET_RE.finditer(text))
    keys.extend(_known(text, known))
    return keys, IDENT_RE.sub(" ", text) if idents else text


def column_words(texts: list[str]) -> tuple[list, list, list]:
    """The content words of many texts as flat lists of terms ``t:<stem>`` and words as written,
    text ``k``'s at ``[offsets[k]:offsets[k + 1]]``, each stem once with the first word that gave
    it (polars reads the words, each distinct word is stemmed once).

    >>> column_words(["Green tea, green TEA.", "tea"])
    (['t:green', 't:tea', 't:tea'], ['Green', 'tea', 'tea'], [0, 2, 3])
    """
    if len(texts) < _FEW:  # a few texts (an entry being added): text by text
        terms, labels, offsets = [], [], [0]
        for text in texts:
            first: dict[str, str] = {}
            for stemmed, surface in content_words(text):
                first.setdefault("t:" + stemmed, surface)
            terms.extend(first)
            labels.extend(first.values())
            offsets.append(len(terms))
        return terms, labels, offsets
    words = (pl.LazyFrame({"text": pl.Series(texts, dtype=pl.String)}).with_row_index("row")
             .select("row", pl.col("text").str.extract_all(WORD_RE.pattern).alias("word"))
             .explode("word").drop_nulls("word")
             .collect(engine="streaming"))  # the texts in parts on every core, in order
    if words.height == 0:
        return [], [], [0] * (len(texts) + 1)
    written, word = _word_codes(words["word"])
    stem_of: dict[str, int] = {}
    stem_code = np.array([-1 if (st := content_stem(w)) is None else stem_of.setdefault(st, len(stem_of))
                          for w in written], np.int64)
    row = words["row"].to_numpy().astype(np.int64)
    code = stem_code[word]
    keep = np.flatnonzero(code >= 0)
    key = row[keep] * max(len(stem_of), 1) + code[keep]
    order = np.argsort(key, kind="stable")  # the keys come nearly sorted (row major): long runs
    first = np.ones(len(key), bool)
    first[1:] = key[order[1:]] != key[order[:-1]]
    mask = np.zeros(len(key), bool)
    mask[order[first]] = True  # the first of each (text, stem)
    keep = keep[mask]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(row[keep], minlength=len(texts)))]).tolist()
    stems = np.array(["t:" + st for st in stem_of], dtype=object)[code[keep]].tolist() if len(keep) else []
    return stems, np.array(written + [None], dtype=object)[:-1][word[keep]].tolist(), offsets


def _word_codes(column: pl.Series) -> tuple[list[str], np.ndarray]:
    """The distinct strings of a column (no nulls) and per value its string's index among them (a
    categorical of its own from polars 1.32, a few times faster)."""
    if hasattr(pl, "Categories"):
        own = pl.Categories.random()  # a fresh mapping, not the process-wide one: ids from 0
        read = column.cast(pl.Categorical(own))  # the mapping lives with it: read it meanwhile
        strings, codes = own.to_series().to_list(), read.to_physical().to_numpy().astype(np.int64)
        if len(strings) > int(codes.max(initial=-1)):
            return strings, codes
    distinct = column.unique(maintain_order=True)
    return distinct.to_list(), column.replace_strict(distinct, np.arange(len(distinct)), return_dtype=pl.Int64).to_numpy()


@lru_cache(maxsize=64)
def _known_index(known: tuple[str, ...]) -> tuple:
    """The known keys, the first words of multi-word ones, the most words a key has (at most 4), every first word."""
    keys = frozenset(k.strip().lower() for k in known if k and k.strip())
    heads = frozenset(k.split(" ")[0] for k in keys if " " in k)
    return keys, heads, min(max((len(k.split()) for k in keys), default=0), 4), frozenset(k.split(" ")[0] for k in keys)


def _known(text: str, known: tuple) -> list[str]:
    """The known entities a text names, as runs of its tokens: the longest keys first, each by
    position (a few one-word keys in an ASCII text are found as substrings: ``_known_words``)."""
    keys, heads, longest, firsts = known
    if not keys:
        return []
    if text.isascii():
        low = text.lower()
        if len(firsts) <= 16:
            if not heads:
                return _known_words(low, keys)
            if not any(first in low for first in firsts):
                return []
        tokens = _KNOWN_TOKEN_RE.findall(low)
    else:
        tokens = [t.lower() for t in _KNOWN_TOKEN_RE.findall(text)]
    hits = []
    for size in range(longest, 1, -1):
        for i in range(len(tokens) - size + 1):
            if tokens[i] in heads and (gram := " ".join(tokens[i : i + size])) in keys:
                hits.append(gram)
    hits.extend(t for t in tokens if t in keys)
    return hits


def _known_words(low: str, keys) -> list[str]:
    """The one-word ``keys`` that are tokens (``_KNOWN_TOKEN_RE``) of the ASCII lower-case text
    ``low``, by position: each place a key is found is checked against its run of ``_TOKEN_CHARS``."""
    found = []
    for key in keys:
        at = low.find(key) if _TOKEN_CHARS.issuperset(key) else -1  # "c#": never a token
        while at >= 0:
            lo, hi = at, at + len(key)
            while lo and low[lo - 1] in _TOKEN_CHARS:
                lo -= 1
            while hi < len(low) and low[hi] in _TOKEN_CHARS:
                hi += 1
            if low[lo:hi].lstrip(".+/-").rstrip("./-") == key:
                found.append((at, key))
                break
            at = low.find(key, at + 1)
    return [key for _, key in sorted(found)]


def anchor_frame(anchors) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Anchors as two flat frames: per anchor how many ``terms`` it has and how many ``entities``
    lead them, and every anchor's terms with their labels one after another (what a store keeps;
    :class:`AnchorRows` reads them back).

    >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", ""], [(), ()])
    >>> AnchorRows(anchor_frame(a), [0, 1, None]).to_list() == [*a, None]
    True
    """
    if isinstance(anchors, AnchorRows):
        return anchors.frames()
    rows = pl.DataFrame({"terms": [len(a.terms) for a in anchors], "entities": [len(a.entities) for a in anchors]},
                        schema={"terms": pl.UInt32, "entities": pl.UInt32})
    flat = pl.DataFrame({"term": list(chain.from_iterable(a.terms for a in anchors)),
                         "label": list(chain.from_iterable(a.labels for a in anchors))},
                        schema={"term": pl.String, "label": pl.String})
    return rows, flat


_EMPTY = Anchor((), ())


class AnchorRows(Sequence):
    """Per entry, its anchors, kept as the two frames of :func:`anchor_frame` and made into
    :class:`Anchor` objects when an entry is read (a bank's cached statistics: a new process need
    not make a million anchors to link a hundred entries). ``rows``: per entry, its row of the
    frames (None or -1: missing until :meth:`filled`); ``+`` appends anchors.

    >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", "Green tea."], [(), ()])
    >>> rows = AnchorRows(anchor_frame(a), [1, None, 0])
    >>> rows[0] == a[1], rows[1], len(rows), rows.missing().tolist()
    (True, None, 3, [1])
    >>> grown = rows.filled({1: a[0]}) + (a[1],)
    >>> list(grown) == [a[1], a[0], a[0], a[1]], grown.missing().tolist()
    (True, [])
    """

    __slots__ = ("_pick", "_ends", "_entities", "_terms", "_labels", "_given", "_tail", "_made")

    def __init__(self, frames: tuple[pl.DataFrame, pl.DataFrame], rows):
        per_row, flat = frames
        lengths = per_row["terms"].to_numpy().astype(np.int64)
        self._ends = np.cumsum(lengths)
        if (int(self._ends[-1]) if len(lengths) else 0) != flat.height:
            raise ValueError("anchor frames do not match")
        self._entities = per_row["entities"].to_numpy().astype(np.int64)
        self._terms, self._labels = flat["term"].to_arrow(), flat["label"].to_arrow()  # a slice is a view
        if isinstance(rows, pl.Series):
            pick = rows.fill_null(-1).to_numpy()
        else:
            pick = np.array([-1 if r is None else r for r in rows], dtype=np.int64)
        self._pick = np.asarray(pick, np.int64)
        if len(self._pick) and (self._pick.max() >= len(lengths)):
            raise ValueError("an anchor row is past the frames")
        self._given, self._tail, self._made = {}, (), {}

    def _shared(self, given: dict, tail: tuple) -> "AnchorRows":
        out = object.__new__(AnchorRows)
        for name in ("_pick", "_ends", "_entities", "_terms", "_labels"):
            setattr(out, name, getattr(self, name))
        out._given, out._tail, out._made = given, tail, self._made  # anchors made are the same for all
        return out

    def __len__(self) -> int:
        return len(self._pick) + len(self._tail)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [self[i] for i in range(*key.indices(len(self)))]
        i = int(key)
        n = len(self._pick)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(key)
        if i >= n:
            return self._tail[i - n]
        made = self._given.get(i) or self._made.get(i)
        if made is not None:
            return made
        r = int(self._pick[i])
        if r < 0:
            return None
        lo, hi = (int(self._ends[r - 1]) if r else 0), int(self._ends[r])
        terms = tuple(self._terms.slice(lo, hi - lo).to_pylist())
        labels = tuple(self._labels.slice(lo, hi - lo).to_pylist())
        made = self._made[i] = Anchor(entities=labels[: int(self._entities[r])], terms=terms, labels=labels)
        return made

    def to_list(self, *, block: int = 65_536) -> list:
        """Every entry's anchors (None where missing), the frames read ``block`` rows at a time (not
        a second copy of every string at once)."""
        out: list = [None] * len(self._pick)
        for i, a in (*self._made.items(), *self._given.items()):
            out[i] = a
        todo = np.flatnonzero(self._pick >= 0)
        if self._given or self._made:
            todo = todo[[out[i] is None for i in todo.tolist()]]
        order = todo[np.argsort(self._pick[todo], kind="stable")]
        picked = self._pick[order]
        for lo in range(0, len(self._ends), block):
            hi = min(lo + block, len(self._ends))
            first, last = np.searchsorted(picked, [lo, hi])
            if first == last:
                continue
            start = int(self._ends[lo - 1]) if lo else 0
            terms = self._terms.slice(start, int(self._ends[hi - 1]) - start).to_pylist()
            labels = self._labels.slice(start, int(self._ends[hi - 1]) - start).to_pylist()
            for pos, r in zip(order[first:last].tolist(), picked[first:last].tolist()):
                a, b = (int(self._ends[r - 1]) if r else 0) - start, int(self._ends[r]) - start
                ne = int(self._entities[r])
                out[pos] = Anchor(entities=tuple(labels[a : a + ne]), terms=tuple(terms[a:b]), labels=tuple(labels[a:b]))
        return out + list(self._tail)

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """:func:`anchor_frame` of these anchors (a missing entry reads as an empty anchor).

        >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", "Green tea."], [(), ()])
        >>> rows = AnchorRows(anchor_frame(a), [1, None, 0]).filled({1: a[0]}) + (a[1],)
        >>> AnchorRows(rows.frames(), [0, 1, 2, 3]).to_list() == list(rows)
        True
        """
        return anchor_frame([_EMPTY if a is None else a for a in self.to_list()])

    def missing(self) -> np.ndarray:
        """The positions of the entries not in the frames and not filled."""
        out = np.flatnonzero(self._pick < 0)
        return out[[i not in self._given for i in out.tolist()]] if self._given else out

    def filled(self, anchors: dict) -> "AnchorRows":
        """These anchors with ``{position: Anchor}`` given for entries (those missing, read apart)."""
        return self._shared({**self._given, **anchors}, self._tail)

    def __add__(self, other) -> "AnchorRows":
        return self._shared(self._given, self._tail + tuple(other))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"AnchorRows({len(self)} entries, {len(self._made)} read)"

