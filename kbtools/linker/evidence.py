"""Candidates and evidence, vectorised over pairs of entry rows (seed 001, steps 2-4).

Every function takes row indices into the frame the ``TermStats`` were built from and returns
arrays, so that linking one entry and connecting a whole bank run the same arithmetic: a pair's
values never depend on which other pairs were computed with it.

>>> import numpy as np
>>> noisy_or(np.array([0.156]), np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([1.0]), omega=0.25).round(3)
array([0.787])
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import numpy as np
import polars as pl
import scipy.sparse as sp

from kbtools.linker.rules import EVENT, GOAL, KINDS, MEANS_KINDS, LinkerSettings, kind_code, prior_matrix
from kbtools.linker.terms import CACHE_GROWERS, TermStats, row_positions

__all__ = [
    "Relations", "relations", "noisy_or", "pair_evidence", "candidate_pairs", "pair_cosine", "index_neighbours",
    "search_neighbours",
]

_PRIORS = prior_matrix()
_IS_MEANS = np.zeros(len(KINDS) + 1, bool)  #: by kind code (-1, not linked, reads the last: False)
_IS_MEANS[[kind_code(k) for k in MEANS_KINDS]] = True
SENTINEL = np.iinfo(np.int64).max
_SLACK = 1e-4  # float32 scores against exact float64 cosines
_COSINE_BLOCK = 16_384  #: pairs gathered at once by ``pair_cosine``


@dataclass(frozen=True, eq=False)
class Relations:
    """The entity graph over the bank's entity terms (symmetric): ``any`` every related pair of
    terms, ``strong`` those where neither side is a hub, ``label`` a pair's triple as text."""

    any: sp.csr_matrix
    strong: sp.csr_matrix
    cols: np.ndarray  #: term indices that take part in a relation
    label: dict


def relations(stats: TermStats, triples: pl.DataFrame | None) -> Relations:
    """The triples as a sparse relation between entity terms of the bank.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> bank = pl.DataFrame({"id": ["g", "d"], "kind": ["goal", "decision"], "created_at": [t, t],
    ...                      "content": ["Ship Kioko soon", "We use pgvector"]})
    >>> tri = pl.DataFrame({"subject": ["Kioko"], "relation": ["uses"], "object": ["pgvector"]})
    >>> rel = relations(TermStats.build(bank, known_entities=["Kioko", "pgvector"]), tri)
    >>> int(rel.any.nnz), sorted(rel.label.values())
    (2, ['Kioko uses pgvector', 'Kioko uses pgvector'])
    """
    t = len(stats.vocab)
    rows, cols, label = [], [], {}
    if triples is not None and triples.height:
        for s, r, o in triples.select("subject", "relation", "object").iter_rows():
            a = stats.term_index.get(f"e:{str(s).strip().lower()}")
            b = stats.term_index.get(f"e:{str(o).strip().lower()}")
            if a is None or b is None or a == b:
                continue
            rows += [a, b]
            cols += [b, a]
            label.setdefault((a, b), f"{s} {r} {o}")
            label.setdefault((b, a), f"{s} {r} {o}")
    rel = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(t, t))
    rel.sum_duplicates()
    rel.data[:] = 1.0
    rel.sort_indices()
    strong_terms = ~stats.hub
    strong = rel.multiply(strong_terms[:, None]).multiply(strong_terms[None, :]).tocsr() if t else rel.copy()
    strong.eliminate_zeros()
    strong.sort_indices()
    return Relations(any=rel, strong=strong, cols=np.unique(np.asarray(rows, np.int64)), label=label)


def noisy_or(share, sem, bridge, time, cue, *, omega: float) -> np.ndarray:
    """raw = 1 - (1 - 0.8 share)(1 - omega sem)(1 - 0.6 bridge)(1 - 0.35 time)(1 - 0.5 cue)."""
    return 1.0 - (1.0 - 0.8 * share) * (1.0 - omega * sem) * (1.0 - 0.6 * bridge) * (1.0 - 0.35 * time) * (1.0 - 0.5 * cue)


def _rowdot(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def pair_cosine(ms, cs, *, vectors=None, cosine=None) -> np.ndarray:
    """Cosine per pair of rows: from L2-normalised ``vectors`` or a ``cosine(a_rows, b_rows)``; else 0.

    >>> import numpy as np
    >>> pair_cosine(np.array([0]), np.array([1]), vectors=np.array([[1.0, 0.0], [0.6, 0.8]]))
    array([0.6])
    """
    ms, cs = np.asarray(ms, np.int64), np.asarray(cs, np.int64)
    if vectors is not None:
        return _dots(vectors, cs, ms)
    if cosine is not None:
        return np.asarray(cosine(ms, cs), dtype=np.float64).reshape(len(ms))
    return np.zeros(len(ms))


def hit_cosines(vectors, rows: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Cosine of each row with each of its (rows x k) ``found`` rows: ``pair_cosine``'s bits."""
    rows, found = np.asarray(rows, np.int64), np.asarray(found, np.int64)
    if found.size == 0:
        return np.zeros(found.shape)
    return _dots(vectors, found.reshape(-1), np.repeat(rows, found.shape[1])).reshape(found.shape)


def _dots(vectors, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per i, the product of rows ``a[i]`` and ``b[i]`` (float64), pair by pair: never BLAS, whose bits depend on the batch."""
    n = len(a)
    if n and isinstance(vectors, np.ndarray) and vectors.dtype == np.float32 and vectors.flags.c_contiguous \
            and vectors.ndim == 2:
        import faiss

        out = np.empty(n, np.float32)
        a, b = np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64)
        with _one_faiss_thread():  # a few pairs would wait for a thread team to start
            faiss.pairwise_indexed_inner_product(vectors.shape[1], n, faiss.swig_ptr(vectors), faiss.swig_ptr(a),
                                                 faiss.swig_ptr(vectors), faiss.swig_ptr(b), faiss.swig_ptr(out))
        return out.astype(np.float64)
    out = np.zeros(n)
    for lo in range(0, n, _COSINE_BLOCK):
        hi = lo + _COSINE_BLOCK
        out[lo:hi] = np.einsum("ij,ij->i", vectors[a[lo:hi]], vectors[b[lo:hi]])
    return out


@contextlib.contextmanager
def _one_faiss_thread(when: bool = True):
    """faiss' OpenMP threads set to one in this thread while inside (when ``when``), as they were after."""
    import faiss

    threads = faiss.omp_get_max_threads()
    if not when or threads == 1:
        yield
        return
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def pair_evidence(stats: TermStats, ms, cs, *, rel: Relations, settings: LinkerSettings, vectors=None, cosine=None,
                  known_cos=None) -> dict:
    """share, sem, bridge, time, cue, raw, prior, score, the gate and the affinity for each pair (ms[i], cs[i]).

    ``ms`` is the entry being linked, ``cs`` its candidates. ``known_cos``: per pair, its cosine
    when computed already (``candidate_pairs``' ``cos``; NaN where not). ``affinity`` orders the
    candidates that pass the gate (``RARE_LAMBDA``).
    """
    ms, cs = np.asarray(ms, np.int64), np.asarray(cs, np.int64)
    shared_w, shared_n, strong_n = _shared(stats, ms, cs)
    denom = np.minimum(stats.totals(ms), stats.totals(cs))
    some = denom > 0
    overlap = np.divide(shared_w, denom, out=np.zeros(len(ms)), where=some)
    halved = (shared_n > 0) & (strong_n == 0)
    share = np.where(halved, overlap / 2.0, overlap)
    if known_cos is None or vectors is None:
        cos = pair_cosine(ms, cs, vectors=vectors, cosine=cosine)
    else:
        cos = np.array(known_cos, np.float64)
        missing = np.flatnonzero(np.isnan(cos))
        cos[missing] = pair_cosine(ms[missing], cs[missing], vectors=vectors)
    half = settings.h / 2.0
    sem = np.clip((cos - half) / half, 0.0, 1.0)
    bridge = _bridge(stats, ms, cs, rel)
    same = (stats.session[ms] >= 0) & (stats.session[ms] == stats.session[cs])
    apart = np.abs(stats.time_us[ms] - stats.time_us[cs])
    close = apart <= settings.session_window_s * 1e6
    time = np.where(same, np.where(close, 1.0, 0.5), 0.0)
    km, kc = stats.kind[ms], stats.kind[cs]
    later = stats.rank[ms] > stats.rank[cs]
    resolves = (km == EVENT) & (kc == EVENT) & (
        (stats.fix[ms] & stats.problem[cs] & later) | (stats.fix[cs] & stats.problem[ms] & ~later)
    )
    cue = (resolves & (time == 1.0) & (shared_n > 0)).astype(np.float64)
    raw = noisy_or(share, sem, bridge, time, cue, omega=settings.omega)
    days = apart / 86_400e6
    author = _bag_overlap(stats, "author", ms, cs)  # the affinity reads it
    prior = _PRIORS[km, kc]
    score = prior * raw
    means_end = (_IS_MEANS[km] & (kc == GOAL)) | ((km == GOAL) & _IS_MEANS[kc])
    evidence = (
        (share >= 0.30)
        | (cos >= settings.h + (1.0 - settings.h) / 2.0)
        | ((bridge == 1.0) & means_end)
        | (cue == 1.0)
        | ((share >= 0.15) & ((sem >= 0.5) | (time == 1.0) | (bridge > 0)))
    )
    affinity = cos + RARE_LAMBDA * rare_sum(stats, ms, cs) + share + FOLLOW_UP * author * np.exp(-days / FOLLOW_UP_DAYS)
    out = dict(
        m=ms, c=cs, affinity=affinity, share=share, overlap=overlap, shared_n=shared_n, cos=cos, sem=sem,
        bridge=bridge, time=time, cue=cue, author=author,
        raw=raw, prior=prior, score=score, linked=evidence & (score >= settings.threshold), later=later,
        bridge_only=(bridge > 0) & (share < 0.15) & (time == 0.0),
    )
    return out


#: An entry's candidates past the gate are tried in the order of their ``affinity``: the cosine, plus
#: RARE_LAMBDA x the summed ln(n / df) of the terms the two share that at most RARE_MAX_DF entries
#: hold, plus the share of weighted terms (``share``), plus FOLLOW_UP x the authors' overlap x
#: exp(-days apart / FOLLOW_UP_DAYS) (a follow-up by the same hands soon after). The seed's score
#: stays the link's weight and gate: its similarity saturates (every cosine over 0.3 reads 1), so
#: it cannot order the candidates (``kb eval links`` measures the order; docs/evaluation-links.md)
RARE_LAMBDA = 0.02
RARE_MAX_DF = 20
FOLLOW_UP = 0.3
FOLLOW_UP_DAYS = 30.0


def rare_sum(stats: TermStats, ms, cs) -> np.ndarray:
    """Per pair, the summed ln(n / df(t)) of the terms t both hold with df(t) <= ``RARE_MAX_DF``.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> bank = pl.DataFrame({"id": ["a", "b", "c"], "kind": ["fact"] * 3, "created_at": [t] * 3,
    ...                      "content": ["green tea", "green tea", "black coffee"]})
    >>> rare_sum(TermStats.build(bank), np.array([0, 0]), np.array([1, 2])).round(3).tolist()
    [0.811, 0.0]
    """
    held = stats._cache.get("rare")
    if held is None or held[0] is not stats.postings:  # the rare terms' postings: a few per entry
        p, df = stats.postings, stats.df
        rows = np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))
        held = stats._cache["rare"] = (p, *_rare_postings(rows, p.indices, df, 0, p.shape[0] + 1))
    _, keys, cols, starts = held
    ms, cs = np.asarray(ms, np.int64), np.asarray(cs, np.int64)
    pair, pos, _ = _held_by_both(keys, starts, cols, ms, cs)
    # a term rare when its row was read may be common now (the statistics grew since): weight 0
    df = stats.df[cols[pos]]
    weights = np.where(df <= RARE_MAX_DF, np.log(max(stats.n, 1) / np.maximum(df, 1)), 0.0)
    return np.bincount(pair, weights=weights, minlength=len(ms))


def _held_by_both(keys, starts, cols, ms, cs):
    """The items of each pair's row ``cs[i]`` (``cols[starts[c]:starts[c + 1]]``) that row ``ms[i]``
    holds too, looked up among ``keys`` (row << 32 | item, sorted): (pair, position in cols, in keys)."""
    pair, pos = row_positions(starts, cs)
    wanted = (ms[pair] << 32) | cols[pos]
    at = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
    hit = keys[at] == wanted if keys.size else np.zeros(len(wanted), bool)
    return pair[hit], pos[hit], at[hit]


def _rare_postings(rows: np.ndarray, terms: np.ndarray, df: np.ndarray, first: int, end: int):
    """The postings (``rows``, ``terms``) of rare terms (df <= ``RARE_MAX_DF``) as sorted keys
    ``row << 32 | term``, their terms, and where rows ``first`` .. ``end - 1`` start among them."""
    rare = (df[terms] > 0) & (df[terms] <= RARE_MAX_DF)
    cols = terms[rare].astype(np.int64)
    keys = (rows[rare] << 32) | cols  # (row << 32 | column), sorted as the rows and their columns
    return keys, cols, np.searchsorted(rows[rare], np.arange(first, end))


def _grown_rare(old: TermStats, new: TermStats, held) -> tuple:
    """``rare_sum``'s postings of ``old`` grown by the rows ``new`` adds (their rare terms after the
    end; a term that has become common since stays, read with weight 0)."""
    _, keys, cols, starts = held
    p, first = new.postings, len(old.ids)
    rows = np.repeat(np.arange(first, p.shape[0], dtype=np.int64), np.diff(p.indptr[first:]))
    more_keys, more_cols, more_starts = _rare_postings(rows, p.indices[p.indptr[first]:], new.df, first, p.shape[0] + 1)
    return (p, np.concatenate([keys, more_keys]), np.concatenate([cols, more_cols]),
            np.concatenate([starts[:-1], starts[-1] + more_starts]))


CACHE_GROWERS["rare"] = _grown_rare


def _bag_overlap(stats: TermStats, name: str, ms, cs) -> np.ndarray:
    """Jaccard overlap of the pair's bags ``name`` (``author``: their authors); 0 without them."""
    bag = stats.bags.get(name) if stats.bags else None
    if bag is None or bag.nnz == 0 or len(ms) == 0:
        return np.zeros(len(ms))
    keys = stats._cache.get(("bag keys", name))
    if keys is None or keys[0] is not bag:  # (row << 32 | column) per stored item: sorted, as the rows are
        rows = np.repeat(np.arange(bag.shape[0], dtype=np.int64), np.diff(bag.indptr))
        keys = stats._cache[("bag keys", name)] = (bag, (rows << 32) | bag.indices.astype(np.int64))
    ms, cs = np.asarray(ms, np.int64), np.asarray(cs, np.int64)
    both = np.bincount(_held_by_both(keys[1], bag.indptr, bag.indices, ms, cs)[0], minlength=len(ms)).astype(np.float64)
    size = (bag.indptr[ms + 1] - bag.indptr[ms]) + (bag.indptr[cs + 1] - bag.indptr[cs]) - both
    return np.divide(both, size, out=np.zeros(len(ms)), where=size > 0)


def _shared(stats: TermStats, ms: np.ndarray, cs: np.ndarray):
    """Per pair: the summed weight, the number and the strong count of the terms both entries hold,
    each summed term by term from 0.0 in column order."""
    p, postings = len(ms), stats.postings
    if p == 0 or postings.indptr[-1] == 0:
        return np.zeros(p), np.zeros(p), np.zeros(p)
    rows, local = np.unique(ms, return_inverse=True)
    own_row, own_pos = row_positions(postings.indptr, rows)
    own_keys = (own_row << 32) | postings.indices[own_pos].astype(np.int64)  # sorted, as the rows
    pair, pos, at = _held_by_both(own_keys, postings.indptr, postings.indices, local.astype(np.int64), cs)
    cols, at = postings.indices[pos], own_pos[at]  # the shared term, its posting in m's row
    shared_n = np.bincount(pair, minlength=p).astype(np.float64)
    weight = stats.w[cols]
    shared_w = np.bincount(pair, weights=weight, minlength=p)
    strong = ~stats.hub[cols]  # strong for the entry (its base flag) and not a hub
    strong_n = np.bincount(pair, weights=(stats.strong_base[at] & strong).astype(np.float64)
                           + (stats.strong_base[pos] & strong), minlength=p)
    return shared_w, shared_n, strong_n


def _bridge(stats, ms, cs, rel: Relations) -> np.ndarray:
    out = np.zeros(len(ms))
    if rel.cols.size == 0 or len(ms) == 0:
        return out
    pm, pc = stats.postings[ms], stats.postings[cs]
    em, ec = pm[:, rel.cols], pc[:, rel.cols]
    live = np.flatnonzero((np.diff(em.indptr) > 0) & (np.diff(ec.indptr) > 0))
    if live.size == 0:
        return out
    em, ec = em[live], ec[live]
    both = em.multiply(ec)
    only_m, only_c = (em - both).tocsr(), (ec - both).tocsr()
    r_any = rel.any[rel.cols][:, rel.cols]
    r_strong = rel.strong[rel.cols][:, rel.cols]
    hit_any = _rowdot(only_m @ r_any, only_c) > 0
    hit_strong = _rowdot(only_m @ r_strong, only_c) > 0
    out[live] = np.where(hit_strong, 1.0, np.where(hit_any, 0.4, 0.0))
    return out


# ---------------------------------------------------------------- candidates (step 2)


def _query_matrix(stats: TermStats, rows: np.ndarray, rel: Relations, settings: LinkerSettings) -> sp.csr_matrix:
    """The voting terms of each row (``voting_terms``) as a (rows x terms) matrix of their weights w(t)."""
    r, t = voting_terms(stats, rows, rel, settings)
    return sp.csr_matrix((stats.w[t], t, np.searchsorted(r, np.arange(len(rows) + 1))), shape=(len(rows), len(stats.vocab)))


def voting_terms(stats: TermStats, rows: np.ndarray, rel: Relations, settings: LinkerSettings):
    """(row, term) of each row's voting terms, sorted by row then term: its ``query_terms``
    rarest shared terms plus the entities the triples relate to its entities, capped terms dropped."""
    r, pos = row_positions(stats.postings.indptr, rows)
    t = stats.postings.indices[pos].astype(np.int64)
    # a term only this entry holds nominates nobody: the voting terms are the rarest shared ones
    if len(rows) <= _FEW_ROWS:  # a write's rows: their own terms ordered as ``_vote_order`` orders all
        order = np.lexsort((t, -stats.w[t], -stats.idf[t], stats.df[t] <= 1, r))
    else:
        order = np.argsort(r * len(stats.w) + _vote_order(stats)[t])
    r, t = r[order], t[order]
    starts = np.searchsorted(r, np.arange(len(rows)))
    pos = np.arange(len(r)) - starts[r]
    keep = (pos < settings.query_terms) & ~stats.capped[t]
    r, t = r[keep], t[keep]
    if rel.cols.size:
        own = stats.postings[rows]
        related = (own @ rel.any).tocsr()
        related.data[:] = 1.0
        related = (related - related.multiply(own)).tocoo()
        related.eliminate_zeros()
        rr, tt = related.row.astype(np.int64), related.col.astype(np.int64)
        keep = ~stats.capped[tt]
        r, t = np.concatenate([r, rr[keep]]), np.concatenate([t, tt[keep]])
    order = np.lexsort((t, r))  # related entities are not the row's own terms: no pair twice
    return r[order], t[order]


def _vote_order(stats: TermStats) -> np.ndarray:
    """Each term's place in the order voting terms are chosen (held by others, higher IDF, heavier, lower term)."""
    held = stats._cache.get("vote order")
    if held is None or held[0] is not stats.w or held[1] is not stats.idf or held[2] is not stats.df:
        terms = np.arange(len(stats.w))
        place = np.empty(len(terms), np.int64)
        place[np.lexsort((terms, -stats.w, -stats.idf, stats.df <= 1))] = terms
        held = stats._cache["vote order"] = (stats.w, stats.idf, stats.df, place)
    return held[3]


#: Up to this many rows, votes are summed with numpy (a sparse product's set-up costs more than the sums)
_FEW_ROWS = 8


def _votes(stats: TermStats, rows: np.ndarray, rel: Relations, settings: LinkerSettings, cut: int | None = None):
    """(row, entry, vote) of the voting terms' weights times the postings, zero votes left out (and
    maybe those from entry ``cut`` on, ``_first_unseen``); a few rows sum theirs in the product's order."""
    transposed = stats.transposed_parts()  # an entry's postings are in one part: its votes sum there
    if len(rows) > _FEW_ROWS:
        q = _query_matrix(stats, rows, rel, settings)
        votes = [_product_before(stats, q, pt, cut).tocoo() for pt in transposed]
        return tuple(np.concatenate([getattr(v, name).astype(dtype) for v in votes])
                     for name, dtype in (("row", np.int64), ("col", np.int64), ("data", np.float64)))
    n = max(len(stats.ids), 1)
    one = len(rows) == 1  # one row: its keys are the entries voted for
    q_rows, q_terms = voting_terms(stats, rows, rel, settings)
    q_weights = stats.w[q_terms]
    keys, weights = [], []
    for pt in transposed:
        which, pos = row_positions(pt.indptr, q_terms)
        keys.append(pt.indices[pos].astype(np.int64) if one else q_rows[which] * n + pt.indices[pos].astype(np.int64))
        weights.append(q_weights[which] * pt.data[pos])
    keys, weights = (np.concatenate(x) if len(x) > 1 else x[0] for x in (keys, weights))
    found, inverse = _unique_runs(keys)
    sums = np.bincount(inverse, weights=weights, minlength=len(found))
    kept = sums != 0.0
    if one:
        return np.zeros(int(np.count_nonzero(kept)), np.int64), found[kept], sums[kept]
    return found[kept] // n, found[kept] % n, sums[kept]


def _unique_runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` of keys in a few sorted runs, by a stable sort (which merges runs).

    >>> keys = np.array([2, 5, 9, 1, 5, 7, 2])
    >>> [x.tolist() for x in _unique_runs(keys)] == [x.tolist() for x in np.unique(keys, return_inverse=True)]
    True
    """
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.empty(len(keys), bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(len(keys), np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _product_before(stats: TermStats, q: sp.csr_matrix, pt: sp.csr_matrix, cut: int | None) -> sp.csr_matrix:
    """``q @ pt`` for ``pt``'s columns before ``cut``, pt not copied: each row q reads is split at the cut in two."""
    n_terms, n = pt.shape
    if cut is None or cut >= n or not pt.has_sorted_indices or q.nnz == 0:
        return q @ pt
    terms = np.unique(q.indices)
    held = stats._cache.get("term keys")
    if held is None or held[0] is not pt:  # (term, entry) of each stored vote, sorted
        keys = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(pt.indptr)) * n + pt.indices
        held = stats._cache["term keys"] = (pt, keys)
    indptr = pt.indptr.astype(np.int64)
    ends = indptr[:-1].copy()
    ends[terms] = np.searchsorted(held[1], terms * n + cut)
    split = np.empty(2 * n_terms + 1, np.int64)
    split[0::2], split[1::2] = indptr, ends
    halves = sp.csr_matrix((pt.data, pt.indices, split), shape=(2 * n_terms, n), copy=False)
    doubled = sp.csr_matrix((q.data, 2 * q.indices.astype(np.int64), q.indptr), shape=(q.shape[0], 2 * n_terms), copy=False)
    return doubled @ halves


def _first_unseen(stats: TermStats, rows: np.ndarray, open_, linked) -> int:
    """The first entry row from which on none of these rows can see an entry (``_visible_pairs``)."""
    vf = _visible_from(stats, open_, linked)
    held = stats._cache.get("seen from after")
    if held is None or held[0] is not vf:  # per entry row, the lowest rank that sees it or any row after it
        held = stats._cache["seen from after"] = (vf, np.minimum.accumulate(vf[::-1])[::-1])
    return int(np.searchsorted(held[1], int(stats.rank[rows].max()), side="left"))


def _top_k(values: np.ndarray, k: int, rank: np.ndarray, exact, slack: float = 0.0):
    """Per row, the k columns of highest value above -inf (ties: the newer entry first) and their exact values:
    the columns within ``slack`` of the approximate k-th are re-scored by ``exact(r, c)``."""
    empty = np.zeros(0, np.int64)
    if values.size == 0 or k <= 0:
        return empty, empty, empty, np.zeros(0)
    n_rows, n = values.shape
    take = min(n, k + _TIE_ROOM)
    if n >= 4 * _SAMPLE_STRIDE * take:
        r, c, thr, whole = _sampled_candidates(values, k, take, slack)
        x = exact(r, c[:, None])[:, 0] if len(r) else np.zeros(0)
    else:
        top = np.argpartition(values, n - take, axis=1)[:, n - take :] if take < n else np.tile(np.arange(n), (n_rows, 1))
        v = np.take_along_axis(values, top, axis=1).astype(np.float64)  # a float32 is exact as a float64
        if n > k:
            thr = np.partition(v, take - k, axis=1)[:, take - k]  # the k-th highest of the row
            ok = (v >= (thr - slack)[:, None]) & (v > -np.inf)
            whole = np.flatnonzero((take < n) & (v.min(axis=1) >= thr - slack) & (v.min(axis=1) > -np.inf))
        else:
            ok, whole = v > -np.inf, empty
        ok[whole] = False
        r, j = np.nonzero(ok)
        c = top[r, j]
        x = exact(np.arange(n_rows), top)[r, j] if len(r) else np.zeros(0)
    if len(whole):  # ties past the columns read: every column within the slack of the k-th
        wide = values[whole].astype(np.float64)
        r2, c2 = np.nonzero((wide >= (thr[whole] - slack)[:, None]) & (wide > -np.inf))
        r2 = whole[r2]
        x2 = exact(r2, c2[:, None])[:, 0]
        r, c, x = np.concatenate([r, r2]), np.concatenate([c, c2]), np.concatenate([x, x2])
    return _first_k(r, c, x, k, rank, n_rows)


#: A wide dense block reads every this many columns first, for a bound below each row's best (``_top_k``)
_SAMPLE_STRIDE = 8


def _sampled_candidates(values: np.ndarray, k: int, take: int, slack: float):
    """``_top_k``'s columns of a wide block, read past a bound from every ``_SAMPLE_STRIDE``-th column
    (the take-th highest of a sample is at most the row's): ``r, c`` within ``slack`` of their row's
    k-th value, that value per row, and the rows whose bound lies above it less the slack (read whole)."""
    n_rows, n = values.shape
    sample = np.ascontiguousarray(values[:, ::_SAMPLE_STRIDE])
    bound = np.partition(sample, sample.shape[1] - take, axis=1)[:, sample.shape[1] - take]
    above = values >= bound[:, None]
    low = np.flatnonzero(bound == -np.inf)  # a row of fewer than ``take`` sampled values: -inf is not above
    if len(low):
        above[low] &= values[low] > -np.inf
    flat = np.flatnonzero(above)  # by row
    r = flat // n
    c = flat - r * n
    v = values[r, c].astype(np.float64)  # a float32 is exact as a float64
    thr = _kth_highest(np.searchsorted(r, np.arange(n_rows + 1)), v, k)  # -inf: fewer than k, all kept
    short = (bound > -np.inf) & (bound > thr - slack)
    ok = (v >= thr[r] - slack) & ~short[r]
    return r[ok], c[ok], thr, np.flatnonzero(short)


#: Columns picked per row of a dense block past its k best, before the exact re-scoring (see ``_top_k``)
_TIE_ROOM = 8


def _visible_pairs(stats: TermStats, rows: np.ndarray, b: np.ndarray, c: np.ndarray, open_, linked) -> np.ndarray:
    """Whether entry ``c`` may be linked from ``rows[b]``: linkable, open, not itself, linked or created earlier."""
    m = rows[0] if len(rows) == 1 else rows[b]  # one row: its rank read once
    return (_visible_from(stats, open_, linked)[c] < stats.rank[m]) & (c != m)


def _visible_from(stats: TermStats, open_: np.ndarray, linked: np.ndarray) -> np.ndarray:
    """Per entry, the rank an entry must exceed to see it: -1 when linked, its own rank when not yet,
    int64 max when it cannot be linked (kept while the flags are the same arrays)."""
    held = stats._cache.get("visible from")
    if held is None or held[0] is not open_ or held[1] is not linked or len(held[2]) != len(stats.ids):
        rank = stats.rank.astype(np.int64)
        held = (open_, linked, np.where(open_ & (stats.kind >= 0), np.where(linked, -1, rank), np.iinfo(np.int64).max))
        stats._cache["visible from"] = held
    return held[2]


def _best(r, c, v, k: int, rank: np.ndarray, n_rows: int):
    """Per row, the k (row, column) pairs with the highest value (ties: the newer entry first).

    >>> import numpy as np
    >>> _best(np.array([0, 0, 0, 1]), np.array([3, 1, 2, 0]), np.array([0.5, 0.9, 0.5, 0.2]), 2,
    ...       np.arange(4), 2)[1].tolist()
    [1, 3, 0]
    """
    if k > 0 and len(r) > 4 * k * max(n_rows, 1):
        r, c, v = _above_kth(r, c, v, k, n_rows)
    return _first_k(r, c, v, k, rank, n_rows)[:3]


def _first_k(r, c, v, k: int, rank: np.ndarray, n_rows: int):
    """Per row, its first k (row, column, place, value) by value, highest first (ties: the newer entry first)."""
    order = np.lexsort((-rank[c], -v, r))
    r, c, v = r[order], c[order], v[order]
    pos = np.arange(len(r)) - np.searchsorted(r, np.arange(n_rows))[r]
    keep = pos < k
    return r[keep].astype(np.int64), c[keep].astype(np.int64), pos[keep].astype(np.int64), v[keep]


#: Padded values sorted at once by ``_above_kth`` (8 MB)
_GROUP_CELLS = 1_000_000


def _above_kth(r, c, v, k: int, n_rows: int):
    """The pairs whose value is at least their row's k-th highest (all of a row with k or fewer).

    >>> import numpy as np
    >>> r, c, v = _above_kth(np.array([1, 0, 0, 0, 1]), np.arange(5), np.array([0.2, 0.5, 0.9, 0.5, 0.1]), 2, 2)
    >>> r.tolist(), c.tolist()
    ([0, 0, 0, 1, 1], [1, 2, 3, 0, 4])
    """
    if n_rows == 1:  # one entry's votes (linking one entry): one sort, none of the groups' set-up
        keep = v >= (np.partition(v, len(v) - k)[len(v) - k] if 0 < k <= len(v) else -np.inf)
        return r[keep], c[keep], v[keep]
    order = np.argsort(r, kind="stable") if len(r) and np.any(np.diff(r) < 0) else None
    if order is not None:
        r, c, v = r[order], c[order], v[order]
    keep = v >= _kth_highest(np.searchsorted(r, np.arange(n_rows + 1)), v, k)[r]  # -inf: fewer than k, all kept
    return r[keep], c[keep], v[keep]


def _kth_highest(bounds: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    """Per row (values ``v[bounds[i]:bounds[i + 1]]``), the k-th highest value; -inf for fewer than k."""
    lengths = np.diff(bounds)
    thr = np.full(len(lengths), -np.inf)
    long = np.flatnonzero(lengths >= k) if k > 0 else np.zeros(0, np.int64)
    if long.size:
        width = np.left_shift(1, np.ceil(np.log2(lengths[long])).astype(np.int64))  # >= the length
        for w in np.unique(width).tolist():
            group = long[width == w]
            for lo in range(0, len(group), max(1, _GROUP_CELLS // w)):
                part = group[lo : lo + max(1, _GROUP_CELLS // w)]
                at = bounds[part][:, None] + np.arange(w)[None, :]
                padded = np.where(at < bounds[part + 1][:, None], v[np.minimum(at, len(v) - 1)], -np.inf)
                thr[part] = _padded_kth(padded, k)
    return thr


def _padded_kth(padded: np.ndarray, k: int) -> np.ndarray:
    """The k-th highest of each row of ``padded`` (more than half of it values, at least k, the rest -inf)."""
    w = padded.shape[1]
    if w >= 4 * _SAMPLE_STRIDE * k:
        sample = np.sort(padded[:, ::_SAMPLE_STRIDE], axis=1)
        bound = sample[:, sample.shape[1] - k]  # more than half the row holds values: the sample at least 2k
        kept = padded >= bound[:, None]
        counts = kept.sum(axis=1)
        if counts.sum() * 4 <= padded.size:  # a cut worth it (not a row of ties)
            values = padded[kept]  # by row
            return _kth_highest(np.concatenate([[0], np.cumsum(counts)]), values, k)
    return np.sort(padded, axis=1)[:, w - k]


def search_neighbours(stats: TermStats, rows, vectors, neighbors, *, open_, linked, settings: LinkerSettings,
                      eligible=None) -> tuple:
    """The neighbour-index search ``candidate_pairs`` makes for these rows: the rows searched (those
    that see a quarter of the index or more) and their hits,
    ``[(positions, (scores, rows)), ...]``."""
    rows = np.asarray(rows, np.int64)
    if eligible is None:
        eligible = open_ & (stats.kind >= 0)
    visible = _visible_count(stats, stats.rank[rows], eligible, linked)
    total = int(neighbors.ntotal)
    fetch = min(4 * settings.candidates + 1, total)
    searched = np.flatnonzero(visible * fetch >= total * settings.candidates)
    if len(searched) == 0 or fetch <= 0:
        return searched, None
    fetches = _fetches(visible[searched], settings.candidates, total)
    queries = np.ascontiguousarray(vectors[rows[searched]], dtype=np.float32)
    hits = []
    for fetch in np.unique(fetches).tolist():
        at = np.flatnonzero(fetches == fetch)
        hits.append((at, index_search(neighbors, queries if len(at) == len(queries) else queries[at],
                                       rows[searched[at]], fetch)))
    return searched, hits


#: The beam (efSearch) of a search from a row's own node, as a share of the index's: started among
#: its neighbours, the smaller beam finds the exact top neighbours about as often
_OWN_NODE_BEAM = 0.8
_LOWEST_SCORE = np.finfo(np.float32).min  #: a search's start scored so that it never takes a hit's place


def index_search(neighbors, queries: np.ndarray, rows: np.ndarray, fetch: int):
    """The index's ``fetch`` hits for these rows' vectors: (scores, rows), rows -1 when missing. An
    HNSW graph is searched on its ground level from each row's own node (``search_level_0``, with
    ``_OWN_NODE_BEAM`` of its beam), the row itself never a hit; any other index as such."""
    import faiss

    if not isinstance(neighbors, faiss.IndexHNSW) or fetch < 2:
        return neighbors.search(queries, fetch)

    n = len(queries)
    own = np.ascontiguousarray(rows, dtype=np.int32)
    start = np.full(n, _LOWEST_SCORE, np.float32)  # the start's own score, given low: it never takes a hit's place
    hit_scores, hits = np.empty((n, fetch - 1), np.float32), np.empty((n, fetch - 1), np.int64)
    beam = _beam(max(1, round(_OWN_NODE_BEAM * neighbors.hnsw.efSearch)))
    with _one_faiss_thread(n == 1):  # one row: no thread team (faiss' own search starts none for one query)
        neighbors.search_level_0(n, faiss.swig_ptr(queries), fetch - 1, faiss.swig_ptr(own), faiss.swig_ptr(start),
                                 faiss.swig_ptr(hit_scores), faiss.swig_ptr(hits), 1, 1, beam)
    hits[hits == np.asarray(rows)[:, None]] = -1  # should a faiss version list the start, it is not a hit
    scores = np.full((n, fetch), -np.inf, np.float32)
    found = np.full((n, fetch), -1, np.int64)
    scores[:, :-1], found[:, :-1] = hit_scores, hits
    return scores, found


@functools.lru_cache(maxsize=16)
def _beam(ef: int):
    """faiss' search parameters of this beam, made once (read only by a search: shared by threads)."""
    import faiss

    return faiss.SearchParametersHNSW(efSearch=ef)


def candidate_pairs(
    stats: TermStats, rows, *, rel: Relations, open_, linked, settings: LinkerSettings, vectors=None,
    neighbors=None, eligible=None, margin: int = 0, cosine=None, whole: bool = False,
) -> dict:
    """Candidates of each row: inverted index, nearest neighbours, same session (for a row without
    a session: the entries without one written closest to it, ``_written_near``).

    Returns arrays ``m, c`` and, per source, the candidate's position in that source's list
    (``pos_index``, ``pos_nn``, ``pos_session``; SENTINEL when absent); ``margin`` extra places
    per list let a caller drop entries superseded later. A row that sees under a quarter of the
    ``neighbors`` index is scanned exactly instead. ``eligible`` counts what a row could see, so
    that one entry and a batch choose alike. With ``settings.both_ends`` the sources are the
    session's and ``own`` and ``rev``, the pair's places in either end's whole-frame list
    (:func:`whole_lists`: the index's and the neighbours' best over the frame); ``whole``: the
    candidates of such a list itself.
    """
    rows = np.asarray(rows, np.int64)
    k = settings.candidates + margin
    parts = []
    if settings.both_ends and not whole:  # the frame's lists hold the index's and the neighbours' best
        frame = (eligible if eligible is not None else open_) & (stats.kind >= 0)
        lists = whole_lists(stats, rel=rel, eligible=frame, settings=settings, vectors=vectors, cosine=cosine,
                            neighbors=neighbors)
        parts += _list_places(stats, rows, lists, open_, linked)
    else:
        if len(stats.vocab) and k > 0:
            cut = _first_unseen(stats, rows, open_, linked) if len(rows) > _FEW_ROWS else None  # a product's
            r, c, v = _votes(stats, rows, rel, settings, cut=cut)
            ok = (v > 0.0) & _visible_pairs(stats, rows, r, c, open_, linked)
            parts.append(("index", *_best(r[ok], c[ok], v[ok], k, stats.rank, len(rows))))
        if vectors is not None:
            parts += _nearest(stats, rows, vectors, neighbors, open_, linked, k, settings, eligible)
    together = _session(stats, rows, open_, linked, settings.session_candidates + margin)
    alone = _written_near(stats, rows, open_, linked, settings.session_candidates + margin)
    parts.append(("session", *(np.concatenate(pair) for pair in zip(together, alone))))
    return _union(rows, parts, len(stats.ids))


def _nearest(stats, rows, vectors, neighbors, open_, linked, k, settings, eligible) -> list[tuple]:
    """``candidate_pairs``' part ``nn``: from the neighbour index for the rows that see a quarter of it
    or more, an exact scan for the others and without an index."""
    if neighbors is None:
        return [("nn", *_exact_neighbours(stats, rows, vectors, open_, linked, k))]
    searched, hits = search_neighbours(stats, rows, vectors, neighbors, open_=open_, linked=linked, settings=settings,
                                       eligible=eligible)
    b, c, pos, cos = index_neighbours(stats, rows[searched], vectors, open_, linked, k, hits)
    parts = [("nn", searched[b], c, pos, cos)]
    scanned = np.setdiff1d(np.arange(len(rows)), searched)
    if scanned.size:
        b, c, pos, cos = _exact_neighbours(stats, rows[scanned], vectors, open_, linked, k)
        parts.append(("nn", scanned[b], c, pos, cos))
    return parts


_DENSE_CELLS = 4_000_000  #: scores of one dense block (rows x columns): 16 MB as float32


def _exact_neighbours(stats, rows, vectors, open_, linked, k):
    """The dense scan: per row, the k visible entries of highest cosine (ties: the newer first), as ``b, c,
    pos`` and each pair's exact cosine (the bits of ``pair_cosine``)."""
    rows = np.asarray(rows, np.int64)
    if len(rows) == 0:
        return (np.zeros(0, np.int64),) * 3 + (np.zeros(0),)
    n = len(stats.ids)
    order = np.argsort(stats.rank[rows], kind="stable")
    seen = _visible_count(stats, stats.rank[rows[order]], open_, linked, linkable=True)  # columns each row may see
    width = np.where(2 * seen < n, np.maximum(seen, 1), n)
    parts, i = [], 0
    while i < len(rows):  # the longest run whose last (widest) row keeps the block under the cap
        ends = np.arange(i + 1, len(rows) + 1)
        cost = (ends - i) * width[ends - 1]  # increasing: the widths grow with the rank
        end = int(ends[max(0, int(np.searchsorted(cost, _DENSE_CELLS, side="right")) - 1)])
        block = order[i:end]
        r, c, pos, cos = _exact_block(stats, rows[block], vectors, open_, linked, k)
        parts.append((block[r], c, pos, cos))
        i = end
    b, c, pos, cos = (np.concatenate(x) for x in zip(*parts))
    keep = np.lexsort((pos, b))
    return b[keep], c[keep], pos[keep], cos[keep]


def _exact_block(stats, rows, vectors, open_, linked, k):
    """``_exact_neighbours`` of one block of rows: approximate cosines (in the vectors' precision)
    against the columns the rows may see, the best re-scored exactly."""
    seen = open_ & (stats.kind >= 0) & (linked | (stats.rank < stats.rank[rows].max()))
    cols = np.flatnonzero(seen)
    if 2 * len(cols) >= len(stats.ids):  # most of the bank: score it all (a view)
        cols = np.arange(len(stats.ids))
    elif len(cols) and cols[-1] - cols[0] + 1 <= 1.25 * len(cols):  # nearly a run of rows: score the run (a view)
        cols = np.arange(cols[0], cols[-1] + 1)
    if len(cols) and cols[-1] - cols[0] + 1 == len(cols):  # a run of rows (a bank in time order): a view
        against = vectors[int(cols[0]) : int(cols[-1]) + 1]
    else:
        against = vectors[cols]
    if len(rows) <= 4:  # a plain loop: a threaded BLAS call costs milliseconds of wake-up next to polars' threads
        sims = np.stack([np.einsum("ij,j->i", against, vectors[r]) for r in rows])
    else:
        sims = vectors[rows] @ against.T
    if len(cols):  # -inf where a row may not see the column (``_visible_from``) or is the column itself
        needs = _visible_from(stats, open_, linked)[cols]
        ranks = stats.rank[rows]
        late = np.flatnonzero(needs >= ranks.min())
        if len(late):
            part = sims[:, late]
            part[needs[late][None, :] >= ranks[:, None]] = -np.inf
            sims[:, late] = part
        at = np.minimum(np.searchsorted(cols, rows), len(cols) - 1)
        own = np.flatnonzero(cols[at] == rows)
        sims[own, at[own]] = -np.inf
    exact = lambda r, c: hit_cosines(vectors, rows[r], cols[c])  # noqa: E731
    r, c, pos, cos = _top_k(sims, k, stats.rank[cols], exact, slack=_SLACK)
    return r, cols[c], pos, cos


#: Hits fetched per searched row, in multiples of the candidates it keeps (plus one: itself)
_FETCH_STEPS = (1.5, 2.0, 3.0, 4.0, 6.0)


def _fetches(visible: np.ndarray, base: int, total: int) -> np.ndarray:
    """Hits to fetch per row: ``1.5 base total / visible`` (about 1.5 base of them visible), rounded up
    to a step of ``_FETCH_STEPS``, plus one, at most the index.

    >>> _fetches(np.array([1000, 500, 375, 260]), 40, 1000).tolist()
    [61, 121, 161, 241]
    """
    steps = np.ceil(np.array(_FETCH_STEPS) * base).astype(np.int64)
    need = 1.5 * base * total / np.maximum(np.asarray(visible, np.float64), 1.0)
    step = np.minimum(np.searchsorted(steps, need - 1e-9), len(steps) - 1)
    return np.minimum(steps[step] + 1, total)


def _visible_count(stats, ranks, flags, linked, linkable: bool = False) -> np.ndarray:
    """Per rank, how many ``flags`` entries (the linkable ones, with ``linkable``) are linked or created
    earlier: the same one by one or together (kept per flag arrays: a connect asks per chunk)."""
    slot = ("visible count", linkable)
    held = stats._cache.get(slot)
    if held is None or held[0] is not flags or held[1] is not linked:
        base = flags & (stats.kind >= 0) if linkable else flags
        held = stats._cache[slot] = (flags, linked, int(np.count_nonzero(base & linked)), np.sort(stats.rank[base & ~linked]))
    return held[2] + np.searchsorted(held[3], ranks).astype(np.int64)


def index_neighbours(stats: TermStats, rows, vectors, open_, linked, k: int, hits):
    """Nearest neighbours from an index's ``hits`` (:func:`search_neighbours`), the visible ones re-scored
    exactly, the best ``k`` kept (ties: the newer first): ``b, c, pos`` and each pair's exact cosine."""
    rows = np.asarray(rows, np.int64)
    if len(rows) == 0 or not hits:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, np.zeros(0)
    parts = []
    for at, found in hits:
        b, c, pos, cos = _index_hits(stats, rows[at], vectors, open_, linked, k, found[1])
        parts.append((at[b], c, pos, cos))
    b, c, pos, cos = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((pos, b))
    return b[order], c[order], pos[order], cos[order]


def _index_hits(stats, rows, vectors, open_, linked, k, found):
    """``index_neighbours`` of rows searched with the same number of hits (``found``: their rows)."""
    found = np.asarray(found, np.int64)
    if len(rows) == 1:
        return _row_hits(stats, rows, vectors, open_, linked, k, found[0])
    fetch = found.shape[1]
    hit = (found >= 0) & (found < len(stats.ids))
    b = np.repeat(np.arange(len(rows), dtype=np.int64), fetch).reshape(found.shape)[hit]
    seen = np.zeros(found.shape, bool)
    seen[hit] = _visible_pairs(stats, rows, b, found[hit], open_, linked)
    # only the visible hits are re-scored (about half of them in a whole-bank connect): each row's
    # first, in the order the index returned them
    counts = seen.sum(axis=1)
    width = int(counts.max()) if len(rows) else 0
    packed = np.take_along_axis(found, np.argsort(~seen, axis=1, kind="stable")[:, :width], axis=1)
    valid = np.arange(width)[None, :] < counts[:, None]
    # each row's hits by cosine, then the newer entry: two stable sorts along the rows (a few
    # dozen hits each), not one sort of all a chunk's hits by three keys
    lower = np.full(packed.shape, np.inf)  # -cosine; a missing hit last
    lower[valid] = -_dots(vectors, packed[valid], rows[np.nonzero(valid)[0]])
    newer = np.where(valid, -stats.rank[np.where(valid, packed, 0)], 0)
    by_rank = np.argsort(newer, axis=1, kind="stable")
    order = np.take_along_axis(by_rank, np.argsort(np.take_along_axis(lower, by_rank, axis=1), axis=1, kind="stable"),
                               axis=1)[:, :k]
    c, v = np.take_along_axis(packed, order, axis=1), -np.take_along_axis(lower, order, axis=1)
    b, pos = np.nonzero(np.take_along_axis(valid, order, axis=1))
    return b, c[b, pos], pos, v[b, pos]


def _row_hits(stats, rows, vectors, open_, linked, k, found):
    """``_index_hits`` of one row in a third of the steps, to the same bits."""
    found = found[(found >= 0) & (found < len(stats.ids))]
    packed = found[_visible_pairs(stats, rows, np.zeros(len(found), np.int64), found, open_, linked)]
    cos = _dots(vectors, packed, np.full(len(packed), rows[0], np.int64))
    order = np.lexsort((-stats.rank[packed], -cos))[:k]
    return np.zeros(len(order), np.int64), packed[order], np.arange(len(order), dtype=np.int64), cos[order]


def _session(stats, rows, open_, linked, k):
    """Per row, the k visible entries of its session closest in time (ties: the newer first)."""
    empty = (np.zeros(0, np.int64),) * 3
    s = stats.session[rows]
    have = np.flatnonzero(s >= 0)
    if have.size == 0 or k <= 0:
        return empty
    which, pos = row_positions(stats.session_start, s[have])
    return _closest_in_time(stats, rows, have[which], stats.session_rows[pos], open_, linked, k)


def _closest_in_time(stats, rows, b, c, open_, linked, k):
    """Per row, the first k of its visible candidates (pairs ``b``, ``c``) by time apart (ties: the newer first)."""
    ok = _visible_pairs(stats, rows, b, c, open_, linked)
    b, c = b[ok], c[ok]
    return _first_k(b, c, -np.abs(stats.time_us[c] - stats.time_us[rows[b]]), k, stats.rank, len(rows))[:3]


_NEAR_WINDOW = 4  #: ``_written_near`` reads this many times k places either side


def _written_near(stats, rows, open_, linked, k):
    """Per row without a session, the k visible entries without one written closest to it (ties: the
    newer first), among the ``_NEAR_WINDOW`` x k either side: a commit's follow-ups come soon after it."""
    empty = (np.zeros(0, np.int64),) * 3
    lone = np.flatnonzero(stats.session[rows] < 0)
    if lone.size == 0 or k <= 0:
        return empty
    order = stats._cache.get("sessionless")
    if order is None:  # the linkable entries without a session, in (created_at, id) order
        order = np.flatnonzero((stats.session < 0) & (stats.kind >= 0))
        order = stats._cache["sessionless"] = order[np.argsort(stats.rank[order], kind="stable")]
    if order.size == 0:
        return empty
    steps = np.arange(1, _NEAR_WINDOW * k + 1)
    at = np.searchsorted(stats.rank[order], stats.rank[rows[lone]])[:, None] + np.concatenate([-steps[::-1], steps])
    inside = (at >= 0) & (at < order.size)
    b = np.broadcast_to(lone[:, None], at.shape)[inside]
    return _closest_in_time(stats, rows, b, order[at[inside]], open_, linked, k)


_WHOLE_BLOCK = 1024  #: rows whose whole-frame candidates are computed at once (``whole_lists``)


def whole_lists(stats: TermStats, *, rel: Relations, eligible: np.ndarray, settings: LinkerSettings, vectors=None,
                cosine=None, neighbors=None) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Each eligible entry's best ``settings.candidates`` candidates in the whole frame, earlier and
    later entries alike: those past the gate in the order of their affinity (ties: the newer
    first), as ``(starts, other, holders)``: entry ``r``'s list is ``other[starts[r]:starts[r + 1]]``,
    and ``holders`` inverts it (per entry, the (holder, place) of the lists that hold it, see
    ``_list_places``). Kept on the statistics for the same vectors, eligible entries and settings.

    The older entry of a pair knows its later neighbours, which the newer entry's own list does not
    rank; a row's list depends on the frame only, so one entry and a batch read the same lists.

    >>> import polars as pl, datetime as dt
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> bank = pl.DataFrame({"id": ["a", "b", "c"], "kind": ["fact"] * 3, "created_at": [t] * 3,
    ...                      "content": ["green tea kettle", "green tea kettle boils", "black coffee"]})
    >>> stats = TermStats.build(bank)
    >>> from kbtools.linker.rules import LINKER_DEFAULTS
    >>> starts, other, _ = whole_lists(stats, rel=relations(stats, None), eligible=np.ones(3, bool),
    ...                                settings=LINKER_DEFAULTS)
    >>> [other[starts[r]:starts[r + 1]].tolist() for r in range(3)]
    [[1], [0], []]
    """
    key = (eligible.tobytes(), settings.with_(both_ends=False), None if vectors is None else vectors.shape)
    held = stats._cache.get("whole lists")
    if held is not None and held[0] == key and held[1] is vectors and held[2] is neighbors and held[3] is cosine:
        return held[4]
    n = len(stats.ids)
    rows = np.flatnonzero(eligible)
    everyone = np.ones(n, bool)  # every eligible entry visible to every row
    ms, cs = [], []
    for lo in range(0, len(rows), _WHOLE_BLOCK):
        block = rows[lo : lo + _WHOLE_BLOCK]
        pairs = candidate_pairs(stats, block, rel=rel, open_=eligible, linked=everyone, settings=settings,
                                vectors=vectors, neighbors=neighbors, eligible=eligible, whole=True)
        ev = pair_evidence(stats, pairs["m"], pairs["c"], rel=rel, settings=settings, vectors=vectors, cosine=cosine,
                           known_cos=pairs.get("cos"))
        ok = np.flatnonzero(ev["linked"])
        m, c = pairs["m"][ok], pairs["c"][ok]
        order = np.lexsort((-stats.rank[c], -ev["affinity"][ok], m))
        m, c = m[order], c[order]
        keep = np.arange(len(m)) - np.searchsorted(m, m) < settings.candidates
        ms.append(m[keep])
        cs.append(c[keep])
    m = np.concatenate(ms) if ms else np.zeros(0, np.int64)
    other = np.concatenate(cs) if cs else np.zeros(0, np.int64)
    starts = np.searchsorted(m, np.arange(n + 1))
    place = np.arange(len(other)) - starts[m]
    by_other = np.lexsort((place, other))
    holders = (np.searchsorted(other[by_other], np.arange(n + 1)), m[by_other], place[by_other])
    lists = (starts, other, holders)
    stats._cache["whole lists"] = (key, vectors, neighbors, cosine, lists)
    return lists


def _list_places(stats: TermStats, rows: np.ndarray, lists, open_, linked) -> list[tuple]:
    """``candidate_pairs``' parts ``own`` (the row's whole-frame list) and ``rev`` (the lists that hold the row)."""
    starts, other, (h_starts, holder, h_place) = lists
    parts = []
    for name, bounds, found, place in (("own", starts, other, None), ("rev", h_starts, holder, h_place)):
        b, pos = row_positions(bounds, rows)
        c = found[pos]
        at = pos - bounds[rows[b]] if place is None else place[pos]
        ok = _visible_pairs(stats, rows, b, c, open_, linked) if len(b) else np.zeros(0, bool)
        parts.append((name, b[ok].astype(np.int64), c[ok].astype(np.int64), at[ok].astype(np.int64)))
    return parts


def _union(rows, parts, n):
    names = ("index", "nn", "session", "own", "rev")
    empty = np.zeros(0, np.int64)
    if sum(len(p[1]) for p in parts) == 0:
        return {"b": empty, "m": empty, "c": empty, **{f"pos_{x}": empty for x in names}}
    keys = np.concatenate([p[1] * n + p[2] for p in parts])
    uniq, inv = np.unique(keys, return_inverse=True)
    out = {"b": uniq // n, "m": rows[uniq // n], "c": uniq % n}
    for name in names:
        out[f"pos_{name}"] = np.full(len(uniq), SENTINEL, np.int64)
    offset = 0
    for name, _, _, pos, *cos in parts:
        at = inv[offset : offset + len(pos)]
        np.minimum.at(out[f"pos_{name}"], at, pos)
        if cos:  # exact cosines the source computed already (``pair_evidence`` reads them)
            out.setdefault("cos", np.full(len(uniq), np.nan))[at] = cos[0]
        offset += len(pos)
    return out
