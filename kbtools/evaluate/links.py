"""Link recovery: does the write-time linker find the links people made?

The trusted human edges of a bank (citations, supersessions, requirements, corrections: any edge of
a trusted, person- or text-made source whose type is not structure) are taken out into a held-out
set; the linker runs over a copy of the frames in memory (``plan_connect``: the bank under
evaluation is never written); and its automatic links are compared with the held-out pairs
(unordered: "A cites B" is found by a link either way). Beside it, at the same number of links:

- ``knn``: plain cosine nearest neighbours (each entry's nearest, the most similar pairs first);
- ``lexical``: the linker without vectors (its inverted-index arm and text evidence alone), at its
  own number of links.

What counts as human: sources ``author``, ``citation_backfill``, ``metadata_backfill``, ``import``
and ``manual`` (a person wrote the link, or the text that names it); not ``judge`` (dedup merges),
``bridged`` (made by a deletion) or the fading sources. Types ``part_of``, ``split_from`` and
``derived_from`` are left in place: they record how the bank is laid out (a section belongs to its
document), not a judgement that two pieces of knowledge belong together.

>>> import polars as pl
>>> e = pl.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "type": ["cites", "part_of"],
...                   "source": ["citation_backfill", "structure"]})
>>> human_edges(e)["type"].to_list()
['cites']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from kbtools.linker import LINKER_DEFAULTS, LinkerSettings, TermStats, plan_connect
from kbtools.linker.calibration import (HUMAN_SOURCES, STRUCTURE_TYPES, calibrate_weights, held_out_frames,
                                        human_edges, split_half)
from kbtools.linker.planning import triple_entities
from kbtools.linker.rules import kind_code

__all__ = ["HUMAN_SOURCES", "STRUCTURE_TYPES", "LinkRecovery", "human_edges", "evaluate_links", "knn_pairs",
           "split_half", "recovery", "calibrate_weights", "held_out_frames", "link_recovery"]

def _pairs(src, dst) -> set[tuple[str, str]]:
    return {(a, b) if a < b else (b, a) for a, b in zip(src, dst) if a != b}


def recovery(links: set, held: set, *, n_entries: int) -> dict:
    """Recovered share, precision and links per entry of a set of unordered pairs.

    >>> recovery({("a", "b"), ("a", "c")}, {("a", "b"), ("b", "c")}, n_entries=3)
    {'links': 2, 'links_per_entry': 1.333, 'hits': 1, 'recovered': 0.5, 'precision': 0.5}
    """
    hits = len(links & held)
    return {"links": len(links), "links_per_entry": round(2 * len(links) / max(n_entries, 1), 3), "hits": hits,
            "recovered": round(hits / len(held), 4) if held else 0.0,
            "precision": round(hits / len(links), 4) if links else 0.0}


def knn_pairs(ids, vectors: np.ndarray, budget: int, *, exclude: set = frozenset(), k: int | None = None,
              linkable=None, block: int = 1024) -> set[tuple[str, str]]:
    """The ``budget`` most similar unordered pairs among each entry's ``k`` cosine nearest neighbours
    (exact numpy scan; ``vectors`` L2-normalised, rows aligned with ``ids``), skipping ``exclude``.

    >>> import numpy as np
    >>> v = np.array([[1.0, 0.0], [0.9, 0.436], [0.0, 1.0]])
    >>> sorted(knn_pairs(["a", "b", "c"], v, 1))
    [('a', 'b')]
    """
    ids = list(ids)
    n = len(ids)
    if budget <= 0 or n < 2:
        return set()
    vec = np.ascontiguousarray(vectors, dtype=np.float32)
    ok = np.ones(n, bool) if linkable is None else np.asarray(linkable, bool)
    ok &= np.linalg.norm(vec, axis=1) > 0
    k = min(n - 1, k or max(8, 4 * -(-2 * budget // max(int(ok.sum()), 1))))
    rows, cols, sims = [], [], []
    for lo in range(0, n, block):
        part = np.arange(lo, min(n, lo + block))
        s = vec[part] @ vec.T
        s[:, ~ok] = -np.inf
        s[np.arange(len(part)), part] = -np.inf
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        val = np.take_along_axis(s, top, 1)
        keep = np.isfinite(val) & ok[part][:, None]
        rows.append(np.repeat(part, k).reshape(len(part), k)[keep])
        cols.append(top[keep])
        sims.append(val[keep])
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
    out: set = set()
    for i in np.argsort(-v, kind="stable"):
        a, b = ids[r[i]], ids[c[i]]
        pair = (a, b) if a < b else (b, a)
        if pair in out or pair in exclude:
            continue
        out.add(pair)
        if len(out) >= budget:
            break
    return out


@dataclass(frozen=True)
class LinkRecovery:
    """The link-recovery report: per arm (``linker``, ``knn``, ``lexical``, and any extra arms) its
    links, links per entry, hits, recovered share and precision against the held-out human edges;
    ``held_out`` counts them by type; ``test`` holds the same figures on the evaluation half only
    (the pairs whose citing entry is in :func:`split_half`), where a calibrated arm is scored."""

    bank: str
    entries: int
    held_out: dict
    arms: dict
    test: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"bank": self.bank, "entries": self.entries, "held_out": self.held_out, "arms": self.arms,
                "test": self.test, "settings": self.settings, "seconds": self.seconds}

    def to_markdown(self) -> str:
        lines = [f"## Link recovery: {self.bank}", "",
                 f"{self.entries} entries; held out {sum(self.held_out.values())} human edges "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(self.held_out.items()))})", "",
                 "| arm | links | links/entry | recovered | precision | recovered (test half) |",
                 "|---|---|---|---|---|---|"]
        for name, a in self.arms.items():
            t = self.test.get(name, {})
            lines.append(f"| {name} | {a['links']} | {a['links_per_entry']} | {100 * a['recovered']:.1f} % | "
                         f"{100 * a['precision']:.1f} % | {100 * t.get('recovered', 0):.1f} % |")
        return "\n".join(lines)


def _linker_pairs(entries, edges, triples, *, vectors, settings, stats=None) -> set:
    plan = plan_connect(entries, edges, triples, vectors=vectors, settings=settings, stats=stats)
    auto = plan.add.filter(pl.col("source") == "auto")
    return _pairs(auto["src"].to_list(), auto["dst"].to_list())


def evaluate_links(entries: pl.DataFrame, edges: pl.DataFrame, triples=None, *, vectors=None,
                   settings: LinkerSettings = LINKER_DEFAULTS, arms: dict | None = None, bank: str = "",
                   seed: int = 0, calibrate: bool = False, calibrate_threshold: float = 0.5) -> LinkRecovery:
    """Hold out the human edges, link the entries in memory, compare with kNN at an equal budget.

    ``vectors``: content vectors aligned with ``entries`` (L2-normalised; None: no kNN arm, the
    linker runs lexically). ``arms``: extra ``{name: LinkerSettings}`` linker arms, each scored like
    the linker (a calibrated arm is scored on the evaluation half, ``test``).

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> ents = pl.DataFrame({"id": ["a", "b", "c"], "kind": ["knowledge"] * 3, "created_at": [t] * 3,
    ...     "content": ["Error E-217 on the encoder", "E-217 means the encoder cable", "Green tea at noon"]})
    >>> edges = pl.DataFrame({"src": ["b"], "dst": ["a"], "type": ["cites"], "source": ["author"]})
    >>> r = evaluate_links(ents, edges)
    >>> r.arms["linker"]["recovered"], r.held_out
    (1.0, {'cites': 1})
    """
    started = time.perf_counter()
    ents, kept, held = held_out_frames(entries, edges)
    held_pairs = _pairs(held["src"].to_list(), held["dst"].to_list())
    ids = ents["id"].to_list()
    test_ids = split_half(ids, seed=seed)
    test_pairs = {p for p in held_pairs if p[0] in test_ids or p[1] in test_ids}
    n = ents.height
    stats = TermStats.build(ents, known_entities=triple_entities(triples), settings=settings)
    structure = _pairs(kept["src"].to_list(), kept["dst"].to_list()) if kept.height else set()
    out, test = {}, {}
    found = {"linker": _linker_pairs(ents, kept, triples, vectors=vectors, settings=settings, stats=stats)}
    if vectors is not None:
        linkable = np.array([kind_code(k) >= 0 for k in ents["kind"].to_list()])
        found["knn"] = knn_pairs(ids, vectors, len(found["linker"]), exclude=structure, linkable=linkable)
        found["lexical"] = _linker_pairs(ents, kept, triples, vectors=None, settings=settings, stats=stats)
    else:  # without vectors the linker is its lexical arm
        found["lexical"] = found["linker"]
    arms = dict(arms or {})
    if calibrate:
        train = set(ids) - test_ids
        weights, calibration = calibrate_weights(entries, edges, triples, vectors=vectors, settings=settings,
                                                 train_ids=train, stats=stats)
        if weights:
            arms["calibrated"] = settings.with_(weights=weights, threshold=calibrate_threshold)
    for name, arm in arms.items():
        arm_stats = stats if arm.identifiers == settings.identifiers else None
        found[name] = _linker_pairs(ents, kept, triples, vectors=vectors, settings=arm, stats=arm_stats)
        if vectors is not None:
            found[f"knn@{name}"] = knn_pairs(ids, vectors, len(found[name]), exclude=structure, linkable=linkable)
    for name, pairs in found.items():
        out[name] = recovery(pairs, held_pairs, n_entries=n)
        test[name] = recovery({p for p in pairs if p[0] in test_ids or p[1] in test_ids}, test_pairs, n_entries=n)
    held_by_type = dict(held.group_by("type").len().iter_rows()) if held.height else {}
    extra = {"calibration": calibration} if calibrate else {}
    return LinkRecovery(bank=bank, entries=n, held_out={k: int(v) for k, v in held_by_type.items()}, arms=out,
                        test=test, settings={"threshold": settings.threshold, "max_new": settings.max_new, **extra},
                        seconds=round(time.perf_counter() - started, 2))


def link_recovery(bank, *, calibrate: bool = False, seed: int = 0, arms: dict | None = None) -> LinkRecovery:
    """:func:`evaluate_links` on a bank (read only): its frames, its content vectors and its linker
    settings (the seed's priors: a bank's stored calibrated weights are left out, so that the
    ``linker`` arm is never scored on the edges it was fitted on; ``calibrate`` refits on one half).

    >>> report = link_recovery(kb.open_bank("banks/peps", readonly=True))  # doctest: +SKIP
    """
    from kbtools.ops.link_context import linker_settings, linker_vectors

    settings = linker_settings(bank)
    settings = settings.with_(weights=(), threshold=LINKER_DEFAULTS.threshold) if settings.weights else settings
    return evaluate_links(bank.entries, bank.edges, bank.triples, vectors=linker_vectors(bank), settings=settings,
                          arms=arms, bank=str(bank.path), seed=seed, calibrate=calibrate)
