"""Calibrating the linker's evidence weights on a bank's own trusted edges.

The seed's noisy-OR weights (0.8 share, 0.5 meaning, 0.6 bridge, ...) are priors. A bank with
enough trusted human edges (citations, supersessions) can fit its own: a logistic regression over
the evidence of each candidate pair (``FEATURES``), the pairs a person linked as positives and the
other candidates as negatives, fitted on the pairs whose entry is in one half of the bank and scored
on the other half. With fewer than ``min_positives`` trusted pairs among the candidates the seed's
priors stay (``fit_weights`` returns ``()``).

>>> import numpy as np
>>> fit_weights(np.zeros((5, len(FEATURES))), np.array([1, 0, 0, 0, 0]))
()
"""

from __future__ import annotations

import numpy as np
import polars as pl

from kbtools.linker.evidence import candidate_pairs, pair_evidence, relations
from kbtools.linker.planning import triple_entities
from kbtools.linker.rules import LINKER_DEFAULTS, LinkerSettings
from kbtools.linker.terms import TermStats

__all__ = ["FEATURES", "MIN_POSITIVES", "HUMAN_SOURCES", "STRUCTURE_TYPES", "pair_features", "fit_weights",
           "human_edges", "held_out_frames", "split_half", "calibrate_weights"]

#: The evidence a calibrated linker weighs: the seed's signals (the raw cosine for sem), the pair's
#: prior, the shared rare identifiers (``ident``), time proximity (``near``), a shared author and title overlap.
FEATURES: tuple[str, ...] = ("share", "cos", "bridge", "time", "cue", "ident", "near", "author", "title", "prior")
#: Fewer trusted pairs among the candidates than this: keep the seed's priors.
MIN_POSITIVES = 30

#: Sources whose edges a person made (or a text a person wrote names).
HUMAN_SOURCES: tuple[str, ...] = ("author", "citation_backfill", "metadata_backfill", "import", "manual")
#: Types that say how the bank is laid out, not that two entries belong together.
STRUCTURE_TYPES: tuple[str, ...] = ("part_of", "split_from", "derived_from")
_FADING = ("auto", "review", "feedback")


def human_edges(edges: pl.DataFrame) -> pl.DataFrame:
    """The trusted human edges of a bank: a human source and a type that is not structure."""
    return edges.filter(pl.col("source").is_in(HUMAN_SOURCES) & ~pl.col("type").is_in(STRUCTURE_TYPES))


def split_half(ids, *, seed: int = 0) -> set[str]:
    """The entries of the evaluation half (a seeded half of the ids): calibration fits on the pairs
    whose citing entry is in the other half and is scored on these.

    >>> sorted(split_half(["a", "b", "c", "d"], seed=1))
    ['a', 'b']
    """
    ids = sorted(set(ids))
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(ids))[: len(ids) // 2]
    return {ids[i] for i in pick}


def pair_features(stats: TermStats, rows, *, triples=None, vectors=None, settings: LinkerSettings,
                  chunk: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate pairs of ``rows`` (every other linkable entry visible) and their features:
    ``(m, c, X)`` with ``X[:, j]`` the feature ``FEATURES[j]``.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> s = TermStats.build(pl.DataFrame({"id": ["a", "b"], "kind": ["fact"] * 2, "created_at": [t] * 2,
    ...                                   "content": ["E-217 on the encoder", "E-217 again"]}))
    >>> m, c, X = pair_features(s, [1], settings=LinkerSettings())
    >>> c.tolist(), X.shape
    ([0], (1, 10))
    """
    rows = np.asarray(rows, np.int64)
    rel = relations(stats, triples)
    everyone = np.ones(len(stats.ids), bool)
    plain = settings.with_(weights=(), both_ends=False)  # every entry is visible: its own candidates suffice
    ms, cs, xs = [], [], []
    for lo in range(0, len(rows), chunk):
        part = rows[lo : lo + chunk]
        pairs = candidate_pairs(stats, part, rel=rel, open_=everyone, linked=everyone, settings=plain, vectors=vectors)
        ev = pair_evidence(stats, pairs["m"], pairs["c"], rel=rel, settings=plain, vectors=vectors)
        ms.append(pairs["m"])
        cs.append(pairs["c"])
        xs.append(np.column_stack([np.asarray(ev[f], np.float64) for f in FEATURES]))
    if not ms:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(FEATURES)))
    return np.concatenate(ms), np.concatenate(cs), np.vstack(xs)


def fit_weights(X: np.ndarray, y: np.ndarray, *, min_positives: int = MIN_POSITIVES, C: float = 1.0) -> tuple:
    """Logistic regression (scikit-learn, balanced classes) of ``y`` on the features ``X``, as
    ``((feature, weight), ..., ("bias", b))`` (what ``LinkerSettings.weights`` holds); ``()`` (keep
    the seed's priors) when fewer than ``min_positives`` positives or no negatives."""
    y = np.asarray(y).astype(int)
    positives = int(y.sum())
    if positives < min_positives or positives == len(y):
        return ()
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(class_weight="balanced", C=C, max_iter=1000)
    model.fit(np.asarray(X, np.float64), y)
    pairs = tuple((f, round(float(w), 4)) for f, w in zip(FEATURES, model.coef_[0]))
    return pairs + (("bias", round(float(model.intercept_[0]), 4)),)


def held_out_frames(entries: pl.DataFrame, edges: pl.DataFrame):
    """``(entries, kept edges, held-out human edges)``: the bank as the linker would see it with its
    human edges taken out (no entry linked yet, supersessions undone, no fading links)."""
    held = human_edges(edges)
    kept = edges.join(held.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti")
    if "source" in kept.columns:
        kept = kept.filter(~pl.col("source").is_in(_FADING))
    ents = entries.with_columns(pl.lit(None).cast(pl.Datetime("us", "UTC")).alias("linked_at"))
    if "status" in ents.columns:  # a superseded entry is one the held-out supersessions made: open them again
        ents = ents.with_columns(pl.when(pl.col("status") == "superseded").then(None).otherwise(pl.col("status")).alias("status"))
    return ents, kept, held


def calibrate_weights(entries: pl.DataFrame, edges: pl.DataFrame, triples=None, *, vectors=None,
                      settings: LinkerSettings = LINKER_DEFAULTS, train_ids=None, stats=None,
                      min_positives: int = MIN_POSITIVES) -> tuple[tuple, dict]:
    """Fit the evidence weights on the bank's trusted human edges whose entry is in ``train_ids``
    (default: every entry): ``(weights, report)``; ``weights`` is ``()`` (the seed's priors stay)
    when too few trusted pairs are among the candidates."""
    ents, _, held = held_out_frames(entries, edges)
    if stats is None:
        stats = TermStats.build(ents, known_entities=triple_entities(triples), settings=settings)
    row_of = stats.row_of
    rows = [r for i, r in row_of.items() if (train_ids is None or i in train_ids) and stats.kind[r] >= 0]
    m, c, X = pair_features(stats, rows, triples=triples, vectors=vectors, settings=settings)
    held_rows = {(row_of[a], row_of[b]) for a, b in zip(held["src"].to_list(), held["dst"].to_list())
                 if a in row_of and b in row_of}
    held_rows |= {(b, a) for a, b in held_rows}
    y = np.fromiter(((int(a), int(b)) in held_rows for a, b in zip(m, c)), bool, count=len(m))
    weights = fit_weights(X, y, min_positives=min_positives)
    report = {"pairs": int(len(y)), "positives": int(y.sum()), "trusted_pairs": len(held_rows) // 2,
              "calibrated": bool(weights), "weights": dict(weights)}
    return weights, report
