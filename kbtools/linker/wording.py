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
    return _why_words(stats, rel, m, c, e, _term_facts(stats, m))


def _term_facts(stats: TermStats, m: int) -> list[tuple]:
    """Entry m's terms as (term, is an entity, label in lower case, shown as), heaviest first (ties:
    by label, then as the entry holds them): the order ``why_text`` shows shared terms in."""
    am = stats.anchors[m]
    w, index = stats.w, stats.term_index
    facts = [(t, t.startswith("e:"), label.lower(), label.lower() if t.startswith("t:") else t[2:])
             for t, label in zip(am.terms, am.labels)]
    facts.sort(key=lambda f: (-w[index[f[0]]], f[2]))
    return facts


def _why_words(stats: TermStats, rel, m: int, c: int, e: dict, facts: list[tuple]) -> str:
    parts = []
    if e["shared_n"] > 0:
        other = set(stats.anchors[c].terms)
        shared = [f for f in facts if f[0] in other]
        entity_words = {w for f in shared if f[1] for w in f[0][2:].split()}
        shown = [f[3] for f in shared if f[1] or f[2] not in entity_words]
        parts.append("shared: " + ", ".join(shown[:3]))
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
