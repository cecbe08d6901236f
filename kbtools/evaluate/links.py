"""Link recovery: does the write-time linker find the links people made, beyond what a simple
baseline finds at the same number of links?

The protocol (``kb eval links``), leak-free by construction:

1. **Hold out.** The trusted human edges of a bank (citations, supersessions, requirements,
   corrections: any edge of a trusted, person- or text-made source whose type is not structure)
   are taken out into a held-out set; the frames are copied in memory (the bank under evaluation
   is never written).
2. **Mask.** Every held-out edge's citation token (a ``PEP N`` / ``:pep:`` mention, an 8-hex id,
   an abbreviated commit hash, a citation pattern's match: the text backfill made the edge from)
   is masked in both ends' text (:func:`~kbtools.evaluate.masking.mask_citations`), for every arm
   alike; the masked entries' content vectors are embedded again from the masked text (in memory)
   when the caller gives the embedder, so that the vectors do not carry the token either.
3. **Link.** The linker (the seed's priors, or the bank's own settings) runs over the masked
   frames (``plan_connect``); beside it, at the linker's number of links, the baselines of
   :mod:`kbtools.evaluate.baselines`: ``knn`` (the globally most similar pairs), ``knn_per_entry``
   (every entry's nearest neighbour, then every entry's second, ...) and ``rerank`` (each entry's
   50 cosine nearest re-ranked by cosine + 0.02 x the idf of the shared terms held by at most 20
   entries, taken per entry); and ``lexical``, the linker without vectors, at its own number of links.
4. **Score.** Links are compared with the held-out pairs (unordered: "A cites B" is found by a link
   either way): recovered share with a bootstrap 95 % interval over the citing entries, precision,
   links per entry; the strongest baseline (the best recovered share among the baselines at the
   linker's number of links, and the lexical arm when it makes no more links than the linker) and
   the linker's margin over it, with a paired bootstrap interval; and each arm's figures again on
   the test half, the pairs cited from a seeded half of the entries (:func:`split_half`).

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
from typing import Callable

import numpy as np
import polars as pl

from kbtools.evaluate.baselines import (RERANK_LAMBDA, RERANK_MAX_DF, RERANK_TOP, knn_pairs, neighbour_lists,
                                        outside_groups, per_entry_pairs, rank_terms, rerank_scores)
from kbtools.evaluate.intervals import bootstrap_ratios
from kbtools.evaluate.masking import MASKED_FIELDS, mask_citations, unmark_held_out
from kbtools.model.vocab import FADING_SOURCES
from kbtools.linker import LINKER_DEFAULTS, LinkerSettings, TermStats, plan_connect
from kbtools.linker.planning import triple_entities
from kbtools.linker.rules import kind_code
from kbtools.progress import Progress, progress_callback

__all__ = ["HUMAN_SOURCES", "STRUCTURE_TYPES", "BASELINES", "LinkRecovery", "human_edges", "evaluate_links",
           "knn_pairs", "split_half", "recovery", "held_out_frames", "link_recovery",
           "recovery_intervals"]

#: The baseline arms scored at a linker arm's number of links.
BASELINES: tuple[str, ...] = ("knn", "knn_per_entry", "rerank")
#: Sources whose edges a person made (or a text a person wrote names).
HUMAN_SOURCES: tuple[str, ...] = ("author", "citation_backfill", "metadata_backfill", "import", "manual")
#: Types that say how the bank is laid out, not that two entries belong together.
STRUCTURE_TYPES: tuple[str, ...] = ("part_of", "split_from", "derived_from")


def human_edges(edges: pl.DataFrame) -> pl.DataFrame:
    """The trusted human edges of a bank: a human source and a type that is not structure."""
    return edges.filter(pl.col("source").is_in(HUMAN_SOURCES) & ~pl.col("type").is_in(STRUCTURE_TYPES))


def split_half(ids, *, seed: int = 0) -> set[str]:
    """The entries of the test half (a seeded half of the ids): the report's ``test`` figures are
    scored on the pairs whose citing entry is in it.

    >>> sorted(split_half(["a", "b", "c", "d"], seed=1))
    ['a', 'b']
    """
    ids = sorted(set(ids))
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(ids))[: len(ids) // 2]
    return {ids[i] for i in pick}


def held_out_frames(entries: pl.DataFrame, edges: pl.DataFrame):
    """``(entries, kept edges, held-out human edges)``: the bank as the linker would see it with its
    human edges taken out (no entry linked yet, supersessions undone, no fading links)."""
    held = human_edges(edges)
    kept = edges.join(held.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti")
    if "source" in kept.columns:
        kept = kept.filter(~pl.col("source").is_in(sorted(FADING_SOURCES)))
    ents = entries.with_columns(pl.lit(None).cast(pl.Datetime("us", "UTC")).alias("linked_at"))
    if "status" in ents.columns:  # a superseded entry is one the held-out supersessions made: open them again
        ents = ents.with_columns(pl.when(pl.col("status") == "superseded").then(None).otherwise(pl.col("status")).alias("status"))
    return ents, kept, held


def _pairs(src, dst) -> set[tuple[str, str]]:
    return {(a, b) if a < b else (b, a) for a, b in zip(src, dst) if a != b}


def _known_entities(triples) -> tuple[str, ...]:
    if triples is None or triples.height == 0:
        return ()
    return tuple(set(triples["subject"].drop_nulls().to_list()) | set(triples["object"].drop_nulls().to_list()))


def recovery(links: set, held: set, *, n_entries: int) -> dict:
    """Recovered share, precision and links per entry of a set of unordered pairs.

    >>> recovery({("a", "b"), ("a", "c")}, {("a", "b"), ("b", "c")}, n_entries=3)
    {'links': 2, 'links_per_entry': 1.333, 'hits': 1, 'recovered': 0.5, 'precision': 0.5}
    """
    hits = len(links & held)
    return {"links": len(links), "links_per_entry": round(2 * len(links) / max(n_entries, 1), 3), "hits": hits,
            "recovered": round(hits / len(held), 4) if held else 0.0,
            "precision": round(hits / len(links), 4) if links else 0.0}


def recovery_intervals(found: dict[str, set], citing: dict[tuple[str, str], str], *, seed: int = 0,
                       samples: int = 2000) -> tuple[dict, np.ndarray, list[str]]:
    """Bootstrap draws of each arm's recovered share over the citing entries: ``citing`` maps each
    held-out pair to the entry that cites (the unit resampled); returns ``({arm: (lo, hi)}, draws,
    arms)`` with ``draws`` ``(arms, samples)``, the same resamples for every arm (paired).

    >>> iv, draws, names = recovery_intervals({"x": {("a", "b")}}, {("a", "b"): "a", ("c", "d"): "c"}, samples=50)
    >>> names, draws.shape
    (['x'], (1, 50))
    """
    units = sorted(set(citing.values()))
    col = {u: i for i, u in enumerate(units)}
    den = np.zeros(len(units))
    for u in citing.values():
        den[col[u]] += 1
    names = list(found)
    num = np.zeros((len(names), len(units)))
    for a, name in enumerate(names):
        for pair in found[name]:
            u = citing.get(pair)
            if u is not None:
                num[a, col[u]] += 1
    draws = bootstrap_ratios(num, den, seed=seed, samples=samples)
    iv = {}
    for a, name in enumerate(names):
        d = draws[a][np.isfinite(draws[a])]
        iv[name] = (round(float(np.percentile(d, 2.5)), 4), round(float(np.percentile(d, 97.5)), 4)) if d.size else (None, None)
    return iv, draws, names


@dataclass(frozen=True)
class LinkRecovery:
    """The link-recovery report: per arm its links, links per entry, hits, recovered share (with a
    bootstrap 95 % interval over the citing entries, ``lo`` / ``hi``), precision and ``budget``
    (whose number of links it was given); ``held_out`` counts the held-out edges by type;
    ``margins`` per linker arm: the strongest baseline at its number of links and the margin in
    points with its paired interval; ``test`` the same figures on the test half (the pairs cited
    from :func:`split_half`'s entries); ``mask`` what was masked; ``protocol`` the words of the method."""

    bank: str
    entries: int
    held_out: dict
    arms: dict
    test: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0
    margins: dict = field(default_factory=dict)
    mask: dict = field(default_factory=dict)
    protocol: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"bank": self.bank, "entries": self.entries, "held_out": self.held_out, "arms": self.arms,
                "margins": self.margins, "test": self.test, "mask": self.mask, "protocol": self.protocol,
                "settings": self.settings, "seconds": self.seconds}

    def to_markdown(self) -> str:
        lines = [f"## Link recovery: {self.bank}", "",
                 f"{self.entries} entries; held out {sum(self.held_out.values())} human edges "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(self.held_out.items()))}); masked "
                 f"{self.mask.get('tokens_masked', 0)} citation tokens in {self.mask.get('entries_masked', 0)} entries"
                 f" ({(self.mask.get('by_rule') or {}).get('number', 0)} numbers written with them), "
                 f"{self.mask.get('metadata_ids_dropped', 0)} held-out ids dropped from dedup metadata; "
                 f"vectors: {self.protocol.get('vectors', '')}", "",
                 "| arm | budget | links | links/entry | recovered (95 % interval) | precision | recovered (test half) |",
                 "|---|---|---|---|---|---|---|"]
        for name, a in self.arms.items():
            t = self.test.get(name, {})
            iv = f" ({100 * a['lo']:.1f}–{100 * a['hi']:.1f})" if a.get("lo") is not None else ""
            lines.append(f"| {name} | {a.get('budget', '')} | {a['links']} | {a['links_per_entry']} | "
                         f"{100 * a['recovered']:.1f} %{iv} | {100 * a['precision']:.1f} % | "
                         f"{100 * t.get('recovered', 0):.1f} % |")
        for name, m in self.margins.items():
            if m.get("baseline"):
                lines += ["", f"**{name}** against the strongest baseline, **{m['baseline']}** ({m['scored_on']}): "
                              f"{m['points']:+.1f} points (95 % interval {m['lo']:+.1f} to {m['hi']:+.1f})"]
        return "\n".join(lines)


def _linker_pairs(entries, edges, triples, *, vectors, settings, stats=None) -> set:
    plan = plan_connect(entries, edges, triples, vectors=vectors, settings=settings, stats=stats)
    auto = plan.add.filter(pl.col("source") == "auto")
    return _pairs(auto["src"].to_list(), auto["dst"].to_list())


def document_groups(entries: pl.DataFrame) -> np.ndarray:
    """Each entry's document as an integer (the metadata ``doc`` ingest writes: the file or record
    its section came from), -1 for an entry of no document.

    >>> meta = ['{"doc": "a.rst"}', None, '{"doc": "b.rst"}', '{"doc": "a.rst"}']
    >>> document_groups(pl.DataFrame({"metadata": meta})).tolist()
    [0, -1, 1, 0]
    """
    if "metadata" not in entries.columns or entries.height == 0:
        return np.full(entries.height, -1, np.int64)
    docs = entries.select(pl.col("metadata").str.json_path_match("$.doc"))["metadata"].to_list()
    codes: dict[str, int] = {}
    return np.array([-1 if d is None else codes.setdefault(d, len(codes)) for d in docs], dtype=np.int64)


def _texts(entries: pl.DataFrame) -> list[str]:
    """Each entry's text as the re-rank reads it: its masked text fields joined."""
    cols = [c for c in MASKED_FIELDS if c in entries.columns]
    out = []
    for row in entries.select(cols).iter_rows():
        parts = []
        for v in row:
            parts.extend(v if isinstance(v, list) else [v] if isinstance(v, str) else [])
        out.append("\n".join(p for p in parts if p))
    return out


def _reembedded(vectors, masked: pl.DataFrame, rows: list[int], embed) -> np.ndarray:
    vec = np.array(vectors, dtype=np.float32, copy=True)
    if rows and embed is not None:
        fresh = np.asarray(embed(masked[rows]), dtype=np.float32)
        norms = np.linalg.norm(fresh, axis=1, keepdims=True)
        vec[rows] = np.where(norms > 0, fresh / np.where(norms > 0, norms, 1.0), 0.0)
    return vec


def _margin(found, held_pairs, citing, linker: str, baselines: list[str], *, seed: int, scored_on: str) -> dict:
    """The strongest of ``baselines`` and ``linker``'s margin over it, with a paired interval."""
    if not baselines or not held_pairs:
        return {}
    rec = {b: len(found[b] & held_pairs) / len(held_pairs) for b in baselines}
    best = max(baselines, key=lambda b: (rec[b], -baselines.index(b)))
    _, draws, names = recovery_intervals({linker: found[linker], best: found[best]}, citing, seed=seed)
    diff = draws[0] - draws[1]
    diff = diff[np.isfinite(diff)]
    points = 100 * (len(found[linker] & held_pairs) / len(held_pairs) - rec[best])
    lo, hi = (np.percentile(diff, [2.5, 97.5]) * 100) if diff.size else (np.nan, np.nan)
    return {"baseline": best, "baseline_recovered": round(rec[best], 4), "points": round(float(points), 2),
            "lo": round(float(lo), 2), "hi": round(float(hi), 2), "scored_on": scored_on}


def evaluate_links(entries: pl.DataFrame, edges: pl.DataFrame, triples=None, *, vectors=None,
                   settings: LinkerSettings = LINKER_DEFAULTS, arms: dict | None = None, bank: str = "",
                   seed: int = 0,
                   patterns=(), embed: Callable[[pl.DataFrame], np.ndarray] | None = None,
                   embedder_name: str = "", progress: Progress = False) -> LinkRecovery:
    """Hold out the human edges, mask their citation tokens, link the masked entries in memory,
    compare with the baselines at the same number of links (the module docstring's protocol).

    ``vectors``: content vectors aligned with ``entries`` (L2-normalised; None: no vector arms, the
    linker runs lexically). ``patterns``: the bank's citation patterns (what the mask resolves
    through). ``embed``: rows -> content vectors, to embed the masked entries again (None: the
    given vectors are kept, and the report says so). ``arms``: extra ``{name: LinkerSettings}``
    linker arms, each scored like the linker and given its own baselines. ``progress`` reports its
    stages: the masked entries embedded again, the term statistics, each linker arm, the baselines,
    the lexical arm.

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
    report = progress_callback(progress, "link recovery", unit="stage")
    stages = 4 + len(arms or {})
    done = [0]

    def stage() -> None:
        done[0] += 1
        if report:
            report(done[0], stages)

    raw, kept, held = held_out_frames(entries, edges)
    ents, mask_report = mask_citations(raw, held, patterns=patterns)
    ents, unmarked = unmark_held_out(ents, held)
    mask_report.update(unmarked)
    masked_rows = mask_report.pop("rows")
    held_pairs = _pairs(held["src"].to_list(), held["dst"].to_list())
    citing: dict = {}
    for a, b in held.select("src", "dst").iter_rows():
        if a != b:
            citing.setdefault((a, b) if a < b else (b, a), a)
    ids = ents["id"].to_list()
    test_ids = split_half(ids, seed=seed)
    test_pairs = {p for p in held_pairs if citing[p] in test_ids}
    test_citing = {p: citing[p] for p in test_pairs}
    n = ents.height
    if vectors is not None:
        vectors = _reembedded(vectors, ents, masked_rows, embed)
    stage()
    stats = TermStats.build(ents, known_entities=triple_entities(triples), settings=settings)
    stage()
    structure = _pairs(kept["src"].to_list(), kept["dst"].to_list()) if kept.height else set()
    timing: dict = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        timing[name] = round(time.perf_counter() - t0, 2)
        return out

    found = {"linker": timed("linker", lambda: _linker_pairs(ents, kept, triples, vectors=vectors, settings=settings,
                                                             stats=stats))}
    stage()
    budget_of = {"linker": "own"}
    linker_arms = ["linker"]
    arms = dict(arms or {})
    for name, arm in arms.items():
        arm_stats = stats if arm.virtual == settings.virtual else None  # the statistics read it
        found[name] = timed(name, lambda arm=arm, s=arm_stats: _linker_pairs(ents, kept, triples, vectors=vectors,
                                                                             settings=arm, stats=s))
        budget_of[name] = "own"
        linker_arms.append(name)
        stage()
    if vectors is not None:
        linkable = np.array([kind_code(k) >= 0 for k in ents["kind"].to_list()])
        t0 = time.perf_counter()
        most = max(len(found[a]) for a in linker_arms)
        k = max(RERANK_TOP, 4 * -(-most // max(int(linkable.sum()), 1)))
        nbr, sim = neighbour_lists(vectors, k=k, linkable=linkable)
        # like the linker, no baseline links two sections of one document (its structure joins them)
        groups = document_groups(ents)
        nbr, sim = outside_groups(nbr, sim, groups)
        score = rerank_scores([rank_terms(t) for t in _texts(ents)], nbr[:, :RERANK_TOP], sim[:, :RERANK_TOP],
                              lam=RERANK_LAMBDA, max_df=RERANK_MAX_DF)
        order = np.argsort(-score, axis=1, kind="stable")
        rr_nbr, rr_score = np.take_along_axis(nbr[:, :RERANK_TOP], order, 1), np.take_along_axis(score, order, 1)
        timing["neighbours"] = round(time.perf_counter() - t0, 2)
        for a in linker_arms:
            budget = len(found[a])
            suffix = "" if a == "linker" else f"@{a}"
            found[f"knn{suffix}"] = knn_pairs(ids, vectors, budget, exclude=structure, linkable=linkable, groups=groups)
            found[f"knn_per_entry{suffix}"] = per_entry_pairs(ids, nbr, sim, budget, exclude=structure)
            found[f"rerank{suffix}"] = per_entry_pairs(ids, rr_nbr, rr_score, budget, exclude=structure)
            for b in BASELINES:
                budget_of[f"{b}{suffix}"] = a
        found["lexical"] = timed("lexical", lambda: _linker_pairs(ents, kept, triples, vectors=None, settings=settings,
                                                                  stats=stats))
    else:  # without vectors the linker is its lexical arm
        found["lexical"] = found["linker"]
    stage()
    budget_of["lexical"] = "own"
    intervals, _, _ = recovery_intervals(found, citing, seed=seed)
    test_intervals, _, _ = recovery_intervals(found, test_citing, seed=seed)
    out, test = {}, {}
    for name, pairs in found.items():
        lo, hi = intervals[name]
        out[name] = {**recovery(pairs, held_pairs, n_entries=n), "lo": lo, "hi": hi, "budget": budget_of[name]}
        tlo, thi = test_intervals[name]
        test[name] = {**recovery({p for p in pairs if p[0] in test_ids or p[1] in test_ids}, test_pairs, n_entries=n),
                      "lo": tlo, "hi": thi}
    margins = {}
    if vectors is not None:
        for a in linker_arms:
            suffix = "" if a == "linker" else f"@{a}"
            base = [f"{b}{suffix}" for b in BASELINES]
            if len(found["lexical"]) <= len(found[a]):
                base.append("lexical")
            margins[a] = _margin(found, held_pairs, citing, a, base, seed=seed,
                                 scored_on=f"all {len(held_pairs)} held-out pairs")
    held_by_type = dict(held.group_by("type").len().iter_rows()) if held.height else {}
    vec_words = ("none (lexical only)" if vectors is None else
                 f"the masked entries embedded again from the masked text ({embedder_name or 'the given embedder'})"
                 if embed is not None else "as given (the masked entries' vectors were not embedded again)")
    protocol = {"held_out": "trusted human edges (not structure), both ends' citation tokens masked",
                "vectors": vec_words, "linker": "the seed's priors (no weights fitted on the held-out edges)",
                "baselines": {"knn": "globally most similar pairs", "knn_per_entry": "each entry's r-th neighbour, round r",
                              "rerank": f"top {RERANK_TOP} cosine + {RERANK_LAMBDA} x idf of shared terms with df <= "
                                        f"{RERANK_MAX_DF}, per entry"},
                "interval": "bootstrap 95 % over citing entries (2,000 resamples, seeded)", "seed": seed}
    return LinkRecovery(bank=bank, entries=n, held_out={k: int(v) for k, v in held_by_type.items()}, arms=out,
                        test=test, settings={"threshold": settings.threshold, "max_new": settings.max_new,
                                             "seconds": timing},
                        seconds=round(time.perf_counter() - started, 2), margins=margins, mask=mask_report,
                        protocol=protocol)


def link_recovery(bank, *, seed: int = 0, arms: dict | None = None, reembed: bool = True,
                  progress: Progress = False) -> LinkRecovery:
    """:func:`evaluate_links` on a bank (read only): its frames, its content vectors, its citation
    patterns and its linker settings. ``reembed``: embed the masked entries again with the bank's
    embedder, in memory (nothing is written). ``progress``: its stages (:func:`evaluate_links`).

    >>> report = link_recovery(kb.open_bank("banks/peps", readonly=True))  # doctest: +SKIP
    """
    from kbtools.ops.link_context import linker_settings, linker_vectors
    from kbtools.retrieval.search import bank_embedder, embed_rows

    settings = linker_settings(bank)
    vectors = linker_vectors(bank)
    embed, name = None, ""
    if reembed and vectors is not None:
        embedder = bank_embedder(bank)
        name = embedder.name
        embed = lambda rows: embed_rows(rows, embedder)[:, 0]  # noqa: E731 - the content dimension
    return evaluate_links(bank.entries, bank.edges, bank.triples, vectors=vectors, settings=settings,
                          arms=arms, bank=str(bank.path), seed=seed,
                          patterns=bank.settings.get("citations") or (), embed=embed, embedder_name=name,
                          progress=progress)
