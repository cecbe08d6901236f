"""The words of a link: why two entries are linked ("shared: line 3; similar meaning (0.30)") and
the evidence JSON an automatic link carries (seed 001, step 7).

>>> evidence_json("shared: kiln", dict(share=0.5, sem=0.0, bridge=0.0, time=1.0, cue=0.0, score=0.61), None)
'{"why": "shared: kiln", "signals": {"share": 0.5, "sem": 0.0, "bridge": 0.0, "time": 1.0, "cue": 0.0}, "score": 0.61}'
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np

from kbtools.linker.terms import TermStats, row_positions

__all__ = ["why_text", "evidence_texts"]


def why_text(stats: TermStats, rel, m: int, c: int, e: dict) -> str:
    """The evidence of a pair in words: "shared: line 3; similar meaning (0.30); ..."."""
    return why_words(stats, rel, m, c, e, term_places(stats, m))


#: Up to this many terms an entry's terms are put in the order they are shown once, for all its
#: links; an entry of more (long texts: the PEP bank's sections hold 79 on average) sorts each
#: link's shared terms alone: presorting pays where entries hold few terms (the synthetic banks) and
#: costs where they hold many (sorting every PEP section's terms is slower than sorting each link's)
_PRESORTED_TERMS = 32


def term_places(stats: TermStats, m: int) -> tuple:
    """Entry m's terms as ``why_words`` reads them, once per entry (it writes an entry's links one
    after another): by their place in its anchor; for an entry of a few terms, all of them in the
    order they are shown (``_in_shown_order``), else None; and its entities' words."""
    terms = stats.anchors[m].terms
    places = dict(zip(terms, range(len(terms))))
    shown = _in_shown_order(stats, m, places.items()) if len(places) <= _PRESORTED_TERMS else None
    entities = [(t, t[2:].split()) for t in places if t.startswith("e:")]
    return places, shown, entities


def _in_shown_order(stats: TermStats, m: int, terms) -> list[tuple]:
    """(-weight, label in lower case, place, term) of these (term, place) of entry m, in the order
    they are shown: heaviest first (ties: by label, then as m holds them)."""
    labels, index, w = stats.anchors[m].labels, stats.term_index, _weights(stats)
    return sorted([(-w[index[t]], labels[i].lower(), i, t) for t, i in terms])


def _shared_words(stats: TermStats, m: int, c: int, facts: tuple) -> list[str]:
    """The first three terms entries m and c share, as ``why_text`` shows them (``_in_shown_order``),
    a word of a shared entity only within it."""
    places, shown, entities = facts
    shared = places.keys() & stats.anchors[c].terms
    if not shared:
        return []
    if shown is None:  # an entry of many terms: its shared ones put in order alone
        ordered = _in_shown_order(stats, m, [(t, places[t]) for t in shared])
    else:
        ordered = [key for key in shown if key[3] in shared]
    hidden = {x for t, words in entities if t in shared for x in words} if entities else ()
    out = []
    for _, low, _, t in ordered:
        if t.startswith("e:"):
            out.append(t[2:])
        elif low not in hidden:
            out.append(low if t.startswith("t:") else t[2:])
        if len(out) == 3:
            break
    return out


def _weights(stats: TermStats) -> list[float]:
    """The terms' weights as Python numbers, read once per statistics."""
    held = stats._cache.get("weights list")
    if held is None or held[0] is not stats.w:
        held = stats._cache["weights list"] = (stats.w, stats.w.tolist())
    return held[1]


def why_words(stats: TermStats, rel, m: int, c: int, e: dict, facts: tuple) -> str:
    parts = []
    if e["shared_n"] > 0:
        parts.append("shared: " + ", ".join(_shared_words(stats, m, c, facts)))
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


_SIGNALS = ("share", "sem", "bridge", "time", "cue")
def evidence_json(why: str, e: dict, origin) -> str:
    """``json.dumps`` of {"why", "signals", "score"[, "from"]}, written directly (a link's record is
    made once per link of a whole bank).

    >>> e = dict(share=0.1234, sem=0.0, bridge=1.0, time=0.5, cue=0.0, score=0.78951)
    >>> evidence_json('a "b"', e, None) == json.dumps({"why": 'a "b"', "signals": {k: round(e[k], 3)
    ...     for k in _SIGNALS}, "score": round(e["score"], 3)})
    True
    """
    values = (round(float(e["share"]), 3), round(float(e["sem"]), 3), round(float(e["bridge"]), 3),
              round(float(e["time"]), 3), round(float(e["cue"]), 3), round(float(e["score"]), 3))
    if not all(map(math.isfinite, values)):  # json writes NaN and Infinity its own way
        out = {"why": why, "signals": dict(zip(_SIGNALS, values)), "score": values[-1]}
        return json.dumps(out if origin is None else {**out, "from": origin})
    text = _EVIDENCE % (_json_string(why), *values)
    return text + ("}" if origin is None else f', "from": {_json_string(origin)}}}')


_json_string = json.encoder.encode_basestring_ascii
_EVIDENCE = '{"why": %s, "signals": {' + ", ".join(f'"{k}": %r' for k in _SIGNALS) + '}, "score": %r'


def _bridge_label(stats, rel, m, c) -> str:
    em = {stats.term_index[t] for t in stats.anchors[m].terms if t.startswith("e:")}
    ec = {stats.term_index[t] for t in stats.anchors[c].terms if t.startswith("e:")}
    found = sorted((x, y) for x in em - ec for y in ec - em if (x, y) in rel.label)
    found.sort(key=lambda p: (bool(stats.hub[p[0]] or stats.hub[p[1]]), p))
    return rel.label[found[0]] if found else "the entity graph"


# ---------------------------------------------------------------- many links at once


def evidence_texts(stats: TermStats, rel, m, c, values: dict, origins=None) -> list[str]:
    """The evidence JSON of many automatic links (entry ``m[i]`` linked to candidate ``c[i]``, its
    pair's ``values``: arrays of ``shared_n``, ``sem``, ``cos``, ``bridge``, ``cue``, ``time``,
    ``share`` and ``score``; ``origins[i]``: the decision it was taken over from, or None), with
    numpy over all of them: the same text as ``evidence_json(why_words(...))`` link by link
    (tested), at about a fifth of the cost for a whole bank's links.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> stats = TermStats.build(pl.DataFrame({"id": ["a", "b"], "kind": ["event", "event"], "created_at": [t, t],
    ...     "content": ["The kiln at Oslo cracked", "Oslo kiln cracked again"]}))
    >>> e = dict(shared_n=3.0, sem=0.0, cos=0.1, bridge=0.0, cue=0.0, time=0.0, share=0.9, score=0.7)
    >>> evidence_texts(stats, None, [1], [0], {k: np.array([v]) for k, v in e.items()})[0]
    '{"why": "shared: cracked, kiln, oslo", "signals": {"share": 0.9, "sem": 0.0, "bridge": 0.0, "time": 0.0, "cue": 0.0}, "score": 0.7}'
    """
    m, c = np.asarray(m, np.int64), np.asarray(c, np.int64)
    n = len(m)
    if n == 0:
        return []
    values = {k: np.asarray(values[k], np.float64) for k in TEXT_VALUES}
    why = np.full(n, "", dtype=object)
    shared = np.flatnonzero(values["shared_n"] > 0)
    if shared.size:
        why[shared] = _shared_words_many(stats, m[shared], c[shared])
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
    why = _joined(why, timed, np.array([f"same session, {x} min apart" for x in minutes.tolist()] + [None], dtype=object)[:-1])
    signals = [_by_table(values[k], 3, repr) for k in (*_SIGNALS, "score")]
    out = [_EVIDENCE_TEXT % x for x in zip(map(_json_string, why.tolist()), *(x.tolist() for x in signals))]
    odd = np.zeros(n, bool)
    for x in signals:
        odd |= x == None  # noqa: E711 - object arrays: an elementwise test
    for i in np.flatnonzero(odd).tolist():  # a value not in [0, 1]: the link's own writer
        out[i] = evidence_json(why[i], {k: values[k][i] for k in values}, origins[i] if origins else None)
    for i, origin in enumerate(origins or ()):
        if origin is not None and not odd[i]:
            out[i] = out[i][:-1] + f', "from": {_json_string(origin)}}}'
    return out


_EVIDENCE_TEXT = _EVIDENCE.replace("%r", "%s") + "}"
#: what an automatic link's evidence text reads of its pair's evidence
TEXT_VALUES = ("shared_n", "sem", "cos", "bridge", "cue", "time", "share", "score")


def _joined(why: np.ndarray, at: np.ndarray, parts) -> np.ndarray:
    """``why`` with ``parts`` (an object array, or one text) added to its links ``at``, after "; "
    where a link has words already."""
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
    """``kind(round(v, places))`` of each value (``repr``, or ``_fixed2`` for two places), as an
    object array; None where the value is not within [0, 1]: read off a table of the texts, with
    Python's own rounding where a value lies within a rounding error of a half (Python rounds the
    decimal value of the double, numpy the product), and for -0.0."""
    scale = 10**places
    x = np.asarray(x, np.float64)
    inside = np.isfinite(x) & (x >= 0.0) & (x <= 1.0)
    scaled = np.where(inside, x, 0.0) * scale
    table = _table(places, kind)
    out = table[np.where(inside, np.rint(scaled), scale + 1).astype(np.int64)]
    for i in np.flatnonzero(inside & ((np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6) | np.signbit(x))).tolist():
        out[i] = kind(round(float(x[i]), places))
    return out


def _shared_words_many(stats: TermStats, m: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``"shared: " + ", ".join(_shared_words(...))`` of many pairs (an object array): each entry's
    terms put in the order they are shown once (``_shown_terms``), then, a few places at a time,
    the pairs that still lack words test their entry's next terms against the candidate's postings."""
    n = len(m)
    rows, local = np.unique(m, return_inverse=True)
    shown = _shown_terms(stats, rows)
    col, low, start, length = shown["col"], shown["low"], shown["start"][local], shown["length"][local]
    held = _posting_keys(stats, c)
    n_low = len(shown["lowers"])
    hidden = _hidden_words(stats, shown, local, c, held, n_low)
    words = np.full((n, 3), -1, np.int64)  #: per pair, the flat places of its words
    found = np.zeros(n, np.int64)
    active = np.arange(n)
    j, width = 0, 4
    while active.size:
        at = j + np.arange(width)
        inside = at[None, :] < length[active, None]
        flat = np.where(inside, start[active, None] + at[None, :], 0)
        cols = col[flat]
        hit = inside & _contains(held, (c[active, None] << 32) | cols)
        if hidden.size:
            hit &= stats.is_entity[cols] | ~_contains(hidden, active[:, None] * n_low + low[flat])
        taken = found[active, None] + np.cumsum(hit, axis=1)
        r, k = np.nonzero(hit & (taken <= 3))
        words[active[r], taken[r, k] - 1] = flat[r, k]
        found[active] = np.minimum(taken[:, -1], 3)
        j += width
        active = active[(found[active] < 3) & (length[active] > j)]
        width *= 2
    return _words_text(shown["text"], words)


def _words_text(text: np.ndarray, words: np.ndarray) -> np.ndarray:
    """``"shared: a, b, c"`` per pair, of its words' places (three a pair, -1: none) in ``text``
    (the shown words, None last)."""
    first, second, third = (text[words[:, i]] for i in range(3))  # -1: the table's last, None
    out = [f"shared: {a}" if b is None else f"shared: {a}, {b}" if d is None else f"shared: {a}, {b}, {d}"
           for a, b, d in zip(first.tolist(), second.tolist(), third.tolist())]
    return np.array(out + [None], dtype=object)[:-1]


def _entities_by_word(stats: TermStats, table: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per label in lower case of the table (a CSR over ``table["lowers"]``), the entity terms
    with it among the words of their name (``_hidden_words``' words); kept with the table."""
    held = stats._cache.get("entities by word")
    if held is None or held[0] is not table:
        low_id, vocab = table["low_id"], stats.vocab
        pairs = [(low_id[w], t) for t in np.flatnonzero(stats.is_entity).tolist() for w in vocab[t][2:].split()
                 if w in low_id]
        word = np.array([w for w, _ in pairs], np.int64)
        entity = np.array([t for _, t in pairs], np.int64)
        order = np.argsort(word, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(word, minlength=len(table["lowers"])))])
        held = stats._cache["entities by word"] = (table, ptr, entity[order])
    return held[1], held[2]


def shown_terms_table(stats: TermStats) -> None:
    """Put every entry's terms in the order its links show them once (``_shown_terms`` of all
    rows), kept with the statistics: a connect that writes the words of most of a bank's entries
    then gathers each batch's from it (at 100k: 1.6 million terms, once, against 195 batches that
    each read their entries' labels into sets and dictionaries of their own)."""
    if _shown_table(stats) is None:
        stats._cache["shown terms"] = (stats.anchors, stats.w, _shown_terms_of(stats, np.arange(len(stats.ids))))


def _shown_table(stats: TermStats) -> dict | None:
    """``shown_terms_table``'s table when it was made for these statistics' anchors and weights."""
    held = stats._cache.get("shown terms")
    return held[2] if held is not None and held[0] is stats.anchors and held[1] is stats.w else None


def _shown_terms(stats: TermStats, rows: np.ndarray) -> dict:
    """``_shown_terms_of`` these rows, gathered from ``shown_terms_table`` when it was made for
    these statistics (the same arrays but for ``low``: a label's place among all the bank's
    labels, not the batch's, in the same order)."""
    table = _shown_table(stats)
    if table is None:
        return _shown_terms_of(stats, rows)
    _, pos = row_positions(table["indptr"], rows)
    length = table["length"][rows]
    return dict(col=table["col"][pos], low=table["low"][pos], text=np.append(table["text"][pos], None),
                start=np.cumsum(length) - length, length=length, lowers=table["lowers"], low_id=table["low_id"])


def _shown_terms_of(stats: TermStats, rows: np.ndarray) -> dict:
    """The terms of these entries, one entry after another, each entry's in the order its links
    show them (``_in_shown_order``: heaviest first, then by label in lower case, then as the entry
    holds them): ``col`` (the term), ``low`` (its label in lower case, as its place in the sorted
    ``lowers``), ``text`` (per flat place, the word shown: an entity's name, a word's label in
    lower case, another term's name without its prefix; None last), per row its ``start`` and
    ``length``, and ``low_id`` (label in lower case -> place)."""
    terms, labels = [], []
    anchors = stats.anchors
    for r in rows.tolist():
        a = anchors[r]
        terms.extend(a.terms)
        labels.extend(a.labels)
    length = np.diff(stats.postings.indptr)[rows].astype(np.int64)
    col = np.fromiter(map(stats.term_index.__getitem__, terms), np.int64, len(terms))
    lower = {x: x.lower() for x in set(labels)}
    lowers = sorted(set(lower.values()))
    low_id = {x: i for i, x in enumerate(lowers)}
    by_label = {x: low_id[y] for x, y in lower.items()}
    low = np.fromiter(map(by_label.__getitem__, labels), np.int64, len(labels))
    start = np.cumsum(length) - length
    row = np.repeat(np.arange(len(rows), dtype=np.int64), length)
    heavier = _weight_ranks(stats)[col]
    if len(rows) < 1 << 21 and len(stats.w) < 1 << 21 and len(lowers) < 1 << 21:
        # one stable sort of (row, -weight, label): ties keep the entry's own order
        order = np.argsort((row << 42) | (heavier << 21) | low, kind="stable")
    else:
        place = np.arange(len(col), dtype=np.int64) - start[row]
        order = np.lexsort((place, low, heavier, row))
    col, low = col[order], low[order]
    names, is_word = _term_names(stats)
    text = np.concatenate([np.array(lowers, dtype=object), names, [None]])[
        np.append(np.where(is_word[col], low, len(lowers) + col), -1)]
    return dict(col=col, low=low, text=text, start=start, length=length, lowers=lowers, low_id=low_id,
                indptr=np.concatenate([[0], np.cumsum(length)]))


def _weight_ranks(stats: TermStats) -> np.ndarray:
    """Each term's place among the distinct weights, heaviest first (kept for the statistics' weights)."""
    held = stats._cache.get("weight ranks")
    if held is None or held[0] is not stats.w:
        held = stats._cache["weight ranks"] = (stats.w, np.unique(-stats.w, return_inverse=True)[1].ravel())
    return held[1]


def _term_names(stats: TermStats) -> tuple[np.ndarray, np.ndarray]:
    """Each term's name without its prefix, and whether it is a word (``t:``, shown as its label
    in lower case); kept for the statistics' vocabulary."""
    held = stats._cache.get("term names")
    if held is None or held[0] is not stats.vocab:
        names = np.array([t[2:] for t in stats.vocab] + [None], dtype=object)[:-1]
        is_word = np.fromiter((t.startswith("t:") for t in stats.vocab), bool, len(stats.vocab))
        held = stats._cache["term names"] = (stats.vocab, names, is_word)
    return held[1], held[2]


def _posting_keys(stats: TermStats, rows: np.ndarray) -> np.ndarray:
    """``row << 32 | term`` of every posting of these rows, sorted: the candidates' terms of a
    batch of links, a few thousand keys that stay in the cache (the bank's 1.6 million at 100k
    miss it at every step)."""
    rows = np.unique(rows)
    indptr = stats.postings.indptr
    which, pos = row_positions(indptr, rows)
    return (rows[which] << 32) | stats.postings.indices[pos].astype(np.int64)


def _contains(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each wanted key is among the sorted ``keys`` (many wanted keys are sorted first: the
    searches then walk the keys in order, half the time of searches at random)."""
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


def _hidden_words(stats: TermStats, shown: dict, local: np.ndarray, c: np.ndarray, held: np.ndarray, n_low: int):
    """Sorted ``pair * n_low + low`` of the words of each pair's shared entities (a word term that
    reads as one of them is not shown: the entity is)."""
    col = shown["col"]
    entity = np.flatnonzero(stats.is_entity[col])
    if entity.size == 0:
        return np.zeros(0, np.int64)
    row = np.searchsorted(shown["start"], entity, side="right") - 1  # each entity term's row (none empty)
    by_row = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=len(shown["start"])))])
    pair, at = row_positions(by_row, local)  # each pair's entry's entity terms (places in ``entity``)
    at = entity[at]
    both = _contains(held, (c[pair] << 32) | col[at])
    pair, cols = pair[both], col[at[both]]
    if pair.size == 0:
        return np.zeros(0, np.int64)
    low_id, vocab = shown["low_id"], stats.vocab
    distinct = np.unique(cols)
    words = [[low_id[w] for w in vocab[t][2:].split() if w in low_id] for t in distinct.tolist()]
    by_term = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    flat = np.array([w for ws in words for w in ws], np.int64)
    hit, word_at = row_positions(by_term, np.searchsorted(distinct, cols))  # each shared entity's words
    return np.unique(pair[hit] * n_low + flat[word_at])
