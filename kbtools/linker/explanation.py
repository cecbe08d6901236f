"""Why two entries are (or are not) linked: one pair scored from scratch (seed 001, section 6).

>>> import polars as pl, datetime as dt
>>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
>>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["fact", "preference"], "created_at": [t, t],
...                         "content": ["The PLC network uses 10.20.0.0/16.", "User likes green tea."]})
>>> s = explain_pair("a", "b", entries, None, None)
>>> s.linked, s.score, s.type
(False, 0.0, 'see_also')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.linker.evidence import pair_evidence, relations
from kbtools.linker.planning import triple_entities
from kbtools.linker.rules import KINDS, LINKER_DEFAULTS, LinkerSettings, link_type
from kbtools.linker.terms import TermStats
from kbtools.linker.wording import why_text

__all__ = ["LinkScore", "explain_pair"]


@dataclass(frozen=True)
class LinkScore:
    """The evidence between a and b.

    ``signals``: share (after halving), sem, bridge, time, cue; ``raw`` the noisy-OR, ``prior`` the
    pair of kinds' prior, ``score = prior * raw``; ``linked``: the gate passes and score >= threshold;
    ``type`` and ``source``/``target`` the link it would be; ``weights``: {"a": {term: w}, "b": ...,
    "W_a", "W_b"}; ``overlap``: share before halving; ``cos``: the cosine used; ``existing``: the types of
    edges that already join the pair.
    """

    score: float
    linked: bool
    type: str
    why: str
    signals: dict
    raw: float
    prior: float
    weights: dict
    source: str = ""
    target: str = ""
    overlap: float = 0.0
    cos: float = 0.0
    existing: tuple = ()


def _display(stats: TermStats, row: int) -> dict:
    """An entry's term weights, a word's by its label in lower case."""
    a = stats.anchors[row]
    weights = stats.weights(a.terms).tolist()
    return {t if t.startswith("e:") else x.lower(): w for t, x, w in zip(a.terms, a.labels, weights)}


def explain_pair(a_id, b_id, entries: pl.DataFrame, edges, triples, *, vectors=None, cosine=None, stats=None,
            settings: LinkerSettings = LINKER_DEFAULTS) -> LinkScore:
    """Score the pair (a, b) as the linker would when a is the new entry.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["event", "event"], "created_at": [t, t],
    ...                         "content": ["Error E-217 on line 3.", "E-217 again on line 3."]})
    >>> explain_pair("b", "a", entries, None, None).signals["share"]
    1.0
    """
    if stats is None:
        stats = TermStats.build(entries, known_entities=triple_entities(triples), settings=settings)
    else:
        stats.check_aligned(entries)
    missing = next((i for i in (a_id, b_id) if i not in stats.row_of), None)
    if missing is not None:
        raise EntryNotFound(str(missing), "explain")
    a, b = stats.row_of[a_id], stats.row_of[b_id]
    if a == b:
        raise ValidationError("b_id", b_id, "explain needs two different entries")
    for r, entry_id in ((a, a_id), (b, b_id)):
        if stats.kind[r] < 0:
            raise ValidationError("kind", entries["kind"][r], "is not linked by the linker", row=entry_id)
    rel = relations(stats, triples)
    vec = np.asarray(vectors) if vectors is not None else None
    ev = pair_evidence(stats, np.array([a]), np.array([b]), rel=rel, settings=settings, vectors=vec, cosine=cosine)
    e = {k: v[0] for k, v in ev.items()}
    typ, a_is_src = link_type(
        KINDS[stats.kind[a]], KINDS[stats.kind[b]],
        fix_a=stats.fix[a], problem_a=stats.problem[a], progress_a=stats.progress[a],
        fix_b=stats.fix[b], problem_b=stats.problem[b], progress_b=stats.progress[b],
        a_later=bool(e["later"]), same_session=bool(e["time"] > 0), bridge_only=bool(e["bridge_only"]),
    )
    joins = ((pl.col("src") == a_id) & (pl.col("dst") == b_id)) | ((pl.col("src") == b_id) & (pl.col("dst") == a_id))
    existing = tuple(edges.filter(joins)["type"].to_list()) if edges is not None and edges.height else ()
    return LinkScore(
        score=float(e["score"]),
        linked=bool(e["linked"]),
        type=typ,
        why=why_text(stats, rel, a, b, e),
        signals={k: float(e[k]) for k in ("share", "sem", "bridge", "time", "cue")},
        raw=float(e["raw"]),
        prior=float(e["prior"]),
        weights={"a": _display(stats, a), "b": _display(stats, b),
                 "W_a": float(stats.total[a]), "W_b": float(stats.total[b])},
        source=a_id if a_is_src else b_id,
        target=b_id if a_is_src else a_id,
        overlap=float(e["overlap"]),
        cos=float(e["cos"]),
        existing=existing,
    )
