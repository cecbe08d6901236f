"""The words of a link: why two entries are linked ("shared: line 3; similar meaning (0.30)") and
the evidence JSON an automatic link carries (seed 001, step 7), written for many links at once.

>>> evidence_json("shared: kiln", dict(share=0.5, sem=0.0, bridge=0.0, time=1.0, cue=0.0, score=0.61), None)
'{"why": "shared: kiln", "signals": {"share": 0.5, "sem": 0.0, "bridge": 0.0, "time": 1.0, "cue": 0.0}, "score": 0.61}'
"""

from __future__ import annotations

import functools
import json

import numpy as np

from kbtools.linker.terms import CACHE_GROWERS, TermStats, row_positions

__all__ = ["why_text", "why_texts", "evidence_json", "evidence_texts", "TEXT_VALUES"]

#: What an automatic link's evidence text reads of its pair's evidence
TEXT_VALUES = ("shared_n", "sem", "cos", "bridge", "cue", "time", "share", "score")


def why_text(stats: TermStats, rel, m: int, c: int, e: dict) -> str:
    """The evidence of one pair in words: "shared: line 3; similar meaning (0.30); ..." (``why_texts``)."""
    return why_texts(stats, rel, [m], [c], {k: [e[k]] for k in _WHY_VALUES})[0]


_SIGNALS = ("share", "sem", "bridge", "time", "cue")


def evidence_json(why: str, e: dict, origin) -> str:
    """``json.dumps`` of {"why", "signals", "score"[, "from"]}, the values rounded to 3 places.

    >>> e = dict(share=0.1234, sem=0.0, bridge=1.0, time=0.5, cue=0.0, score=0.78951)
    >>> evidence_json('a "b"', e, None) == json.dumps({"why": 'a "b"', "signals": {k: round(e[k], 3)
    ...     for k in _SIGNALS}, "score": round(e["score"], 3)})
    True
    """
    values = [round(float(e[k]), 3) for k in (*_SIGNALS, "score")]
    out = {"why": why, "signals": dict(zip(_SIGNALS, values)), "score": values[-1]}
    return json.dumps(out if origin is None else {**out, "from": origin})


_json_string = json.encoder.encode_basestring_ascii
#: ``evidence_json``'s text, its values' texts given
_EVIDENCE_TEXT = '{"why": %s, "signals": {' + ", ".join(f'"{k}": %s' for k in _SIGNALS) + '}, "score": %s}'


def _bridge_label(stats: TermStats, rel, m: int, c: int) -> str:
    """The triple that joins an entity of m to one of c (one without a hub first), or "the entity graph"."""
    em = {stats.term_index[t] for t in stats.anchors[m].terms if t.startswith("e:")}
    ec = {stats.term_index[t] for t in stats.anchors[c].terms if t.startswith("e:")}
    found = sorted((x, y) for x in em - ec for y in ec - em if (x, y) in rel.label)
    found.sort(key=lambda p: (bool(stats.hub[p[0]] or stats.hub[p[1]]), p))
    return rel.label[found[0]] if found else "the entity graph"


def why_texts(stats: TermStats, rel, m, c, values: dict) -> np.ndarray:
    """Why each pair (entry ``m[i]``, candidate ``c[i]``; ``values``: arrays of ``_WHY_VALUES``) is
    linked, in words: shared terms, similar meaning, the bridging triple, a fix, the same session.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> stats = TermStats.build(pl.DataFrame({"id": ["a", "b"], "kind": ["event", "event"], "created_at": [t, t],
    ...     "content": ["The kiln at Oslo cracked", "Oslo kiln cracked again"]}))
    >>> e = dict(shared_n=[3.0], sem=[0.2], cos=[0.456], bridge=[0.0], cue=[0.0], time=[1.0])
    >>> why_texts(stats, None, [1], [0], e)[0]
    'shared: cracked, kiln, oslo; similar meaning (0.46); same session, 0 min apart'
    """
    m, c = np.asarray(m, np.int64), np.asarray(c, np.int64)
    values = {k: np.asarray(values[k], np.float64) for k in _WHY_VALUES}
    why = np.full(len(m), "", dtype=object)
    shared = np.flatnonzero(values["shared_n"] > 0)
    if shared.size:
        why[shared] = _shared_words(stats, m[shared], c[shared])
    sem = np.flatnonzero(values["sem"] > 0)
    cos = values["cos"][sem]
    shown = _by_table(cos, 2, _fixed2)
    for i in np.flatnonzero(shown == None).tolist():  # noqa: E711 - a cosine past 1 (float error), or worse
        shown[i] = _fixed2(cos[i])
    why = _joined(why, sem, "similar meaning (" + shown + ")")
    bridge = np.flatnonzero(values["bridge"] > 0)
    labels = [f"via {_bridge_label(stats, rel, a, b)}" for a, b in zip(m[bridge].tolist(), c[bridge].tolist())]
    why = _joined(why, bridge, np.array(labels + [None], dtype=object)[:-1])
    why = _joined(why, np.flatnonzero(values["cue"] > 0), "a problem and its fix")
    timed = np.flatnonzero(values["time"] > 0)
    minutes = np.abs(stats.time_us[m[timed]].astype(np.int64) - stats.time_us[c[timed]].astype(np.int64)) // 60_000_000
    apart = [f"same session, {x} min apart" for x in minutes.tolist()]
    return _joined(why, timed, np.array(apart + [None], dtype=object)[:-1])


_WHY_VALUES = ("shared_n", "sem", "cos", "bridge", "cue", "time")  #: what ``why_texts`` reads of a pair's evidence


def evidence_texts(stats: TermStats, rel, m, c, values: dict, origins=None) -> list[str]:
    """``evidence_json(why_text(...))`` of many automatic links (``values``: arrays of
    ``TEXT_VALUES``; ``origins[i]``: the decision it was taken over from, or None).

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> stats = TermStats.build(pl.DataFrame({"id": ["a", "b"], "kind": ["event", "event"], "created_at": [t, t],
    ...     "content": ["The kiln at Oslo cracked", "Oslo kiln cracked again"]}))
    >>> e = dict(shared_n=3.0, sem=0.0, cos=0.1, bridge=0.0, cue=0.0, time=0.0, share=0.9, score=0.7)
    >>> evidence_texts(stats, None, [1], [0], {k: np.array([v]) for k, v in e.items()})[0]
    '{"why": "shared: cracked, kiln, oslo", "signals": {"share": 0.9, "sem": 0.0, "bridge": 0.0, "time": 0.0, "cue": 0.0}, "score": 0.7}'
    """
    n = len(m)
    if n == 0:
        return []
    why = why_texts(stats, rel, m, c, values)
    values = {k: np.asarray(values[k], np.float64) for k in TEXT_VALUES}
    signals = _by_table(np.concatenate([values[k] for k in (*_SIGNALS, "score")]), 3, repr).reshape(-1, n)
    out = [_EVIDENCE_TEXT % x for x in zip(map(_json_string, why.tolist()), *signals.tolist())]
    odd = (signals == None).any(axis=0)  # noqa: E711 - object arrays: an elementwise test
    for i in np.flatnonzero(odd).tolist():  # a value not in [0, 1]: the link's own writer
        out[i] = evidence_json(why[i], {k: values[k][i] for k in values}, origins[i] if origins else None)
    for i, origin in enumerate(origins or ()):
        if origin is not None and not odd[i]:
            out[i] = out[i][:-1] + f', "from": {_json_string(origin)}}}'
    return out


def _joined(why: np.ndarray, at: np.ndarray, parts) -> np.ndarray:
    """``why`` with ``parts`` (an object array, or one text) added at ``at``, after "; " if any."""
    if len(at):
        before = why[at]
        had = before != ""
        why[at] = np.where(had, before + "; " + parts, parts) if had.any() else parts
    return why


def _fixed2(v: float) -> str:
    return f"{v:.2f}"


@functools.lru_cache(maxsize=8)
def _table(places: int, kind) -> np.ndarray:
    """The texts of ``round(k / 10**places, places)`` for k = 0 .. 10**places, then None."""
    scale = 10**places
    return np.array([kind(round(k / scale, places)) for k in range(scale + 1)] + [None], dtype=object)


def _by_table(x: np.ndarray, places: int, kind) -> np.ndarray:
    """``kind(round(v, places))`` of each value as an object array (None outside [0, 1]), read off
    a table; Python rounds values within an error of a half (numpy rounds the product) and -0.0."""
    scale = 10**places
    x = np.asarray(x, np.float64)
    inside = np.isfinite(x) & (x >= 0.0) & (x <= 1.0)
    scaled = np.where(inside, x, 0.0) * scale
    table = _table(places, kind)
    out = table[np.where(inside, np.rint(scaled), scale + 1).astype(np.int64)]
    for i in np.flatnonzero(inside & ((np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6) | np.signbit(x))).tolist():
        out[i] = kind(round(float(x[i]), places))
    return out


def _shared_words(stats: TermStats, m: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``"shared: a, b, c"`` of many pairs (an object array): the first three terms entry m shares
    with candidate c in ``_shown_terms`` order, a word of a shared entity shown by the entity alone."""
    n = len(m)
    run = np.concatenate([[True], m[1:] != m[:-1]])  # an entry's links come one after another
    rows, local = m[run], np.cumsum(run) - 1
    shown = _shown_terms(stats, rows)
    col, low, n_low = shown["col"], shown["low"], len(shown["lowers"])
    pair, flat = row_positions(np.append(shown["start"], len(col)), local)  # per pair its entry's terms
    cols = col[flat]
    hit = _contains(_posting_keys(stats, c), (c[pair] << 32) | cols)
    entity = stats.is_entity[cols]
    if (hit & entity).any():
        hidden = _entity_words(stats, shown["low_id"], pair[hit & entity], cols[hit & entity], n_low)
        hit &= entity | ~_contains(hidden, pair * n_low + low[flat])
    taken = np.cumsum(hit)
    lengths = shown["length"][local]
    rank = taken - (taken - hit)[np.cumsum(lengths) - lengths][pair]  # the hit's place among its pair's
    keep = np.flatnonzero(hit & (rank <= 3))
    words = np.full((n, 3), -1, np.int64)  #: per pair, the flat places of its words
    words[pair[keep], rank[keep] - 1] = flat[keep]
    return _words_text(stats, shown, words)


def _words_text(stats: TermStats, shown: dict, words: np.ndarray) -> np.ndarray:
    """``"shared: a, b, c"`` per pair from its words' places in ``shown`` (three a pair, -1: none)."""
    names, is_word = _term_names(stats)
    at = words.ravel()  # -1: the padding after the last place
    col, low = np.append(shown["col"], 0)[at], np.append(shown["low"], 0)[at]
    text = np.where(is_word[col], np.array(shown["lowers"] + [""], dtype=object)[low], names[col])
    text[at < 0] = None
    first, second, third = text.reshape(-1, 3).T
    out = [f"shared: {a}" if b is None else f"shared: {a}, {b}" if d is None else f"shared: {a}, {b}, {d}"
           for a, b, d in zip(first.tolist(), second.tolist(), third.tolist())]
    return np.array(out + [None], dtype=object)[:-1]


def _shown_terms(stats: TermStats, rows: np.ndarray) -> dict:
    """The terms of these entries, each entry's heaviest first, then by label in lower case, then as
    it holds them: ``col`` (the term), ``low`` (its lower-case label's place in the sorted
    ``lowers``, ``low_id``), per row its ``start`` and ``length``."""
    terms, labels = [], []
    anchors = stats.anchors
    for r in rows.tolist():
        a = anchors[r]
        terms.extend(a.terms)
        labels.extend(a.labels)
    indptr = stats.postings.indptr
    length = (indptr[rows + 1] - indptr[rows]).astype(np.int64)
    col = np.fromiter(map(stats.term_index.__getitem__, terms), np.int64, len(terms))
    lower = {x: x.lower() for x in set(labels)}
    lowers = sorted(set(lower.values()))
    low_id = {x: i for i, x in enumerate(lowers)}
    by_label = {x: low_id[y] for x, y in lower.items()}
    low = np.fromiter(map(by_label.__getitem__, labels), np.int64, len(labels))
    start = np.cumsum(length) - length
    row = np.repeat(np.arange(len(rows), dtype=np.int64), length)
    place = np.arange(len(col), dtype=np.int64) - start[row]
    order = np.lexsort((place, low, _weight_ranks(stats)[col], row))
    col, low = col[order], low[order]
    return dict(col=col, low=low, start=start, length=length, lowers=lowers, low_id=low_id)


def _weight_ranks(stats: TermStats) -> np.ndarray:
    """Each term's place among the distinct weights, heaviest first (kept for the statistics' weights)."""
    held = stats._cache.get("weight ranks")
    if held is None or held[0] is not stats.w:
        held = stats._cache["weight ranks"] = (stats.w, np.unique(-stats.w, return_inverse=True)[1].ravel())
    return held[1]


def _term_names(stats: TermStats) -> tuple[np.ndarray, np.ndarray]:
    """Each term's name without its prefix and whether it is a word (kept per vocabulary)."""
    held = stats._cache.get("term names")
    if held is None or held[0] is not stats.vocab:
        held = stats._cache["term names"] = (stats.vocab, *_names_of(stats.vocab))
    return held[1], held[2]


def _names_of(terms) -> tuple[np.ndarray, np.ndarray]:
    """The terms' names without their prefixes (an object array) and which are words."""
    names = np.array([t[2:] for t in terms] + [None], dtype=object)[:-1]
    return names, np.fromiter((t.startswith("t:") for t in terms), bool, len(terms))


def _grown_term_names(old: TermStats, new: TermStats, held) -> tuple:
    """``_term_names`` of ``old`` grown by the terms ``new`` adds (its vocabulary starts with old's)."""
    names, is_word = _names_of(new.vocab[len(old.vocab):])
    return new.vocab, np.concatenate([held[1], names]), np.concatenate([held[2], is_word])


CACHE_GROWERS["term names"] = _grown_term_names


def _posting_keys(stats: TermStats, rows: np.ndarray) -> np.ndarray:
    """``row << 32 | term`` of every posting of these rows, sorted (a few keys, not the bank's)."""
    rows = np.unique(rows)
    which, pos = row_positions(stats.postings.indptr, rows)
    return (rows[which] << 32) | stats.postings.indices[pos].astype(np.int64)


def _contains(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each wanted key is among the sorted ``keys`` (many are sorted first: half the time)."""
    if keys.size == 0:
        return np.zeros(np.shape(wanted), bool)
    flat = np.asarray(wanted).ravel()
    if flat.size > _SORTED_SEARCH:
        order = np.argsort(flat)
        at = np.empty(flat.size, np.int64)
        at[order] = np.searchsorted(keys, flat[order])
    else:
        at = np.searchsorted(keys, flat)
    return (keys[np.minimum(at, keys.size - 1)] == flat).reshape(np.shape(wanted))


_SORTED_SEARCH = 65_536  #: from this many wanted keys, ``_contains`` sorts them first


def _entity_words(stats: TermStats, low_id: dict, pair: np.ndarray, cols: np.ndarray, n_low: int) -> np.ndarray:
    """Sorted ``pair * n_low + low`` of the words of these shared entity terms (``cols`` of pairs
    ``pair``): such a word is not shown, its entity is."""
    distinct, at = np.unique(cols, return_inverse=True)
    words = [[low_id[w] for w in stats.vocab[t][2:].split() if w in low_id] for t in distinct.tolist()]
    by_term = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    flat = np.array([w for ws in words for w in ws], np.int64)
    hit, word_at = row_positions(by_term, at.ravel())  # each shared entity's words
    return np.unique(pair[hit] * n_low + flat[word_at])
