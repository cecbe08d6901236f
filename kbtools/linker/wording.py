"""The words of a link: why two entries are linked ("shared: line 3; similar meaning (0.30)") and
the evidence JSON an automatic link carries (seed 001, step 7).

>>> _evidence_json("shared: kiln", dict(share=0.5, sem=0.0, bridge=0.0, time=1.0, cue=0.0, score=0.61), None)
'{"why": "shared: kiln", "signals": {"share": 0.5, "sem": 0.0, "bridge": 0.0, "time": 1.0, "cue": 0.0}, "score": 0.61}'
"""

from __future__ import annotations

import json
import math

from kbtools.linker.terms import TermStats

__all__ = ["why_text"]


def why_text(stats: TermStats, rel, m: int, c: int, e: dict) -> str:
    """The evidence of a pair in words: "shared: line 3; similar meaning (0.30); ..."."""
    return _why_words(stats, rel, m, c, e, _term_places(stats, m))


#: Up to this many terms an entry's terms are put in the order they are shown once, for all its
#: links; an entry of more (long texts: the PEP bank's sections hold 79 on average) sorts each
#: link's shared terms alone. A link's words and JSON, min of 7 runs over each bank's first 30,000
#: links, two runs: at 100k (16 terms an entry) 11.8-12.0 us, against 13.8-14.1 sorting each link's;
#: on the PEP bank 22.9-23.0 us, against 21.9-24.3 (27.7 sorting every entry's)
_PRESORTED_TERMS = 32


def _term_places(stats: TermStats, m: int) -> tuple:
    """Entry m's terms as ``_why_words`` reads them, once per entry (it writes an entry's links one
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


def _why_words(stats: TermStats, rel, m: int, c: int, e: dict, facts: tuple) -> str:
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
def _evidence_json(why: str, e: dict, origin) -> str:
    """``json.dumps`` of {"why", "signals", "score"[, "from"]}, written directly (a link's record is
    made once per link of a whole bank).

    >>> e = dict(share=0.1234, sem=0.0, bridge=1.0, time=0.5, cue=0.0, score=0.78951)
    >>> _evidence_json('a "b"', e, None) == json.dumps({"why": 'a "b"', "signals": {k: round(e[k], 3)
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
