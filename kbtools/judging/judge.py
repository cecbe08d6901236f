"""The judge (seed 000, "What Is Next"): candidate duplicate pairs from similarity, a verdict per
pair, and the edges or merges a verdict asks for. Pure: frames and dicts in, frames and verdicts out.

Similarity only *proposes* a pair (binary trust: it never writes an edge); a judge, any callable
``judge(older, newer) -> Verdict``, decides. kbtools ships :func:`rule_judge` (same systems and tasks,
near-identical content, the newer one marked as a correction, one part of the other) and the
interface of an LLM judge (:data:`JUDGE_PROMPT` and :func:`llm_judge`, over any
``complete(prompt) -> str``).

>>> old = {"id": "a0000001", "title": "Pool size", "content": "In staging, api runs with pool size at 64.",
...        "systems": ["api"], "tasks": ["deploy"], "metadata": "{}"}
>>> new = dict(old, id="b0000002", content="In staging, api runs with pool size at 64. Reported again.")
>>> rule_judge(old, new).action
'merge'
>>> rule_judge(old, dict(new, content="In production, api runs with pool size at 128.")).action
'distinct'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from types import MappingProxyType
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np
import polars as pl
import scipy.sparse as sp

from kbtools.errors import ValidationError
from kbtools.model.vocab import DOMINANCE_TYPES, TRUSTED_SOURCES
from kbtools.progress import Progress, progress_callback
from kbtools.judging.sameness import Comparison, compare, differing, facts, sentences

__all__ = [
    "ACTIONS", "Verdict", "JudgeFn", "PAIR_SCHEMA", "DUPLICATE_THRESHOLD", "MERGE_CONFIDENCE",
    "candidate_pairs", "compare_rows", "rule_judge", "JUDGE_PROMPT", "judge_prompt", "parse_verdict", "llm_judge",
    "plan_verdicts", "DECISION_SCHEMA", "STATUS_FIELDS",
]

#: What a judge may decide about a pair (older, newer).
ACTIONS: tuple[str, ...] = ("merge", "supersede", "split", "distinct")
#: Similarity at or above which a pair becomes a candidate (``kb judge``'s default operating point).
DUPLICATE_THRESHOLD: float = 0.5
#: A merge verdict deletes an entry only at or above this confidence; below it the judge writes a
#: ``supersedes`` edge instead (nothing is lost). See the README for the precision measured there.
MERGE_CONFIDENCE: float = 0.9

PAIR_SCHEMA = {"a": pl.String, "b": pl.String, "lexical": pl.Float64, "vector": pl.Float64, "score": pl.Float64,
               "same_systems": pl.Boolean, "same_tasks": pl.Boolean, "containment": pl.Float64, "differ": pl.String,
               "same": pl.Boolean, "changed": pl.Boolean}
DECISION_SCHEMA = {"a": pl.String, "b": pl.String, "score": pl.Float64, "action": pl.String, "note": pl.String,
                   "confidence": pl.Float64, "write": pl.String, "src": pl.String, "dst": pl.String,
                   "type": pl.String, "skipped": pl.String}


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on a pair (older ``a``, newer ``b``): ``action`` in :data:`ACTIONS`, the
    ``note`` that the written edge carries (how the two pertain, never what they say), a
    ``confidence`` in [0, 1] and ``reverse``: the older ``a`` is the one that replaces the newer
    (a ``supersede`` verdict then writes ``a supersedes b``; a merge keeps the older either way).

    >>> Verdict("supersede", "Newer correction of that entry.", 0.9).action
    'supersede'
    >>> Verdict("delete", None)
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: action='delete': a verdict's action is one of merge, supersede, split, distinct
    """

    action: str
    note: str | None = None
    confidence: float = 1.0
    reverse: bool = False

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise ValidationError("action", self.action, f"a verdict's action is one of {', '.join(ACTIONS)}")
        if not isinstance(self.confidence, (int, float)) or not 0.0 <= float(self.confidence) <= 1.0:
            raise ValidationError("confidence", self.confidence, "a verdict's confidence is a number in [0, 1]")
        if self.note is not None and not isinstance(self.note, str):
            raise ValidationError("note", self.note, "a verdict's note is a string or None")
        if not isinstance(self.reverse, bool):
            raise ValidationError("reverse", self.reverse, "a verdict's reverse is True (the older replaces the newer) or False")


#: ``judge(older_row, newer_row) -> Verdict``; rows are dicts with the entries columns.
JudgeFn = Callable[[Mapping, Mapping], Verdict]

# ----------------------------------------------------------------------------------------- pairs

_TOKEN = re.compile(r"[a-z0-9]+(?:[._/-][a-z0-9]+)*")


def _tokens(text: str | None) -> list[str]:
    return _TOKEN.findall((text or "").lower())


def _text(row: Mapping) -> str:
    return " ".join(str(row.get(c) or "") for c in ("title", "summary", "content"))


def _tfidf(texts: list[str]) -> sp.csr_matrix:
    vocab: dict[str, int] = {}
    indptr, indices, data = [0], [], []
    for text in texts:
        counts: dict[int, int] = {}
        for t in _tokens(text):
            j = vocab.setdefault(t, len(vocab))
            counts[j] = counts.get(j, 0) + 1
        indices.extend(counts)
        data.extend(counts.values())
        indptr.append(len(indices))
    m = sp.csr_matrix((np.asarray(data, np.float64), np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
                      shape=(len(texts), len(vocab)))
    df = np.bincount(m.indices, minlength=len(vocab))
    m = m.multiply(np.log((1 + len(texts)) / (1 + df)) + 1.0).tocsr()
    m.data = 1.0 + np.log(m.data)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(m.multiply(1.0 / norms[:, None]))


#: Rows of a block when candidate pairs are searched (memory stays bounded on a large bank)
_BLOCK_ROWS = 1024
#: Candidate pairs scored exactly at once (sparse rows; vectors: both ends' rows copied, fewer)
_SCORED_AT_ONCE = 200_000
_VECTOR_PAIRS_AT_ONCE = 32_768


def _keep_best(out: dict[tuple[int, int], float], r: np.ndarray, c: np.ndarray, score: np.ndarray, k: int) -> None:
    """Add to ``out`` ({(i, j): score}, i < j) each row's ``k`` best partners among the pairs (r[i],
    c[i]), ties to the partner nearest in row order (the repeats of a message each paired with the
    repeats written next to it, not all with the first few), then the lower; a pair found from
    both ends keeps its score once.

    >>> out = {}
    >>> _keep_best(out, np.array([5, 5, 5, 5, 5]), np.array([1, 3, 4, 7, 9]), np.ones(5), 2)
    >>> sorted(out)  # five alike: the nearest to row 5 (4, then 3 before 7)
    [(3, 5), (4, 5)]
    """
    order = np.lexsort((c, np.abs(c - r), -score, r))
    r, c, score = r[order], c[order], score[order]
    first = np.searchsorted(r, r)
    best = np.arange(len(r)) - first < k
    for a, b, v in zip(r[best].tolist(), c[best].tolist(), score[best].tolist()):
        key = (a, b) if a < b else (b, a)
        if v > out.get(key, -1.0):
            out[key] = v


def _lexical_pairs(x: sp.csr_matrix, k: int, floor: float, report=None) -> dict[tuple[int, int], float]:
    """{(i, j): cosine} for i < j over the rows of ``x`` (L2-normalised TF-IDF): each row's ``k``
    best partners at or above ``floor`` (ties: :func:`_keep_best`). Exact without scoring every
    pair (all-pairs similarity search with a prefix filter, Bayardo et al., WWW 2007): a row's
    most common terms whose weights square-sum below ``floor``² (its prefix) give less than
    ``floor`` with any other row, so a partner at ``floor`` shares one of the row's other terms;
    only those rows are scored, and of them only where the shared part plus the prefix's norm
    reaches ``floor``. ``report(done, n)`` after each block of rows.

    >>> def every_pair(dense, k, floor):  # each row's k best at floor among all pairs, ties to the nearest
    ...     full = dense @ dense.T
    ...     np.fill_diagonal(full, -1.0)
    ...     out = {}
    ...     for i in range(len(full)):
    ...         for j in sorted(np.flatnonzero(full[i] >= floor), key=lambda j: (-full[i, j], abs(j - i), j))[:k]:
    ...             out[(min(i, j), max(i, j))] = full[i, j]
    ...     return out
    >>> rng = np.random.default_rng(3)
    >>> for width, per_row in ((3000, 12), (60, 40)):  # short texts of few terms; long ones sharing most
    ...     topics = rng.integers(0, width, (30, per_row))
    ...     dense = np.zeros((400, width))
    ...     for i in range(400):
    ...         dense[i, topics[i % 30]] = rng.random(per_row)
    ...         dense[i, rng.integers(0, width, per_row // 2)] += rng.random(per_row // 2)
    ...     dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    ...     got, want = _lexical_pairs(sp.csr_matrix(dense), 3, 0.5), every_pair(dense, 3, 0.5)
    ...     print(len(want), sorted(got) == sorted(want), max(abs(got[p] - want[p]) for p in want) < 1e-9)
    811 True True
    862 True True
    """
    n, width = x.shape
    x = x.tocsr()
    lengths = np.diff(x.indptr)
    row = np.repeat(np.arange(n), lengths)
    df = np.bincount(x.indices, minlength=width)
    common_first = np.empty(width, np.int64)
    common_first[np.argsort(-df, kind="stable")] = np.arange(width)
    order = np.lexsort((common_first[x.indices], row))  # each row's terms, the most common first
    squares = x.data[order] ** 2
    running = np.cumsum(squares)
    running -= np.repeat(np.concatenate([[0.0], running])[x.indptr[:-1]], lengths)  # within each row
    bound = floor * floor * (1.0 - 1e-9)  # float sums aside
    prefix, rest = order[running < bound], order[running >= bound]
    prefix_norm = np.sqrt(np.bincount(row[prefix], weights=x.data[prefix] ** 2, minlength=n))
    rest = np.sort(rest)  # CSR order
    tail = sp.csr_matrix((x.data[rest], x.indices[rest], np.concatenate([[0], np.cumsum(np.bincount(row[rest], minlength=n))])),
                         shape=x.shape)
    by_term = x.T.tocsr()
    per_row = x.nnz / max(n, 1)
    out: dict[tuple[int, int], float] = {}
    whole = False  # once a block is read whole, the next ones are too (the bank's texts are alike)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(n, start + _BLOCK_ROWS)
        if not whole:
            shared = (tail[start:stop] @ by_term).tocoo()  # the part of each cosine the rows' other terms give
            r, c = shared.row.astype(np.int64) + start, shared.col.astype(np.int64)
            near = (r != c) & (shared.data + prefix_norm[r] >= floor * (1.0 - 1e-9))
            r, c = r[near], c[near]
            # long texts sharing many terms (a bank of documents): scoring each candidate would cost
            # more than the block's whole product, which is then taken as it is
            whole = len(r) * per_row > (stop - start) * n
        if whole:
            r, c, scores = _whole_rows(x, by_term, start, stop, floor)
        else:
            scores = np.concatenate([np.asarray(x[r[lo:lo + _SCORED_AT_ONCE]].multiply(x[c[lo:lo + _SCORED_AT_ONCE]])
                                                .sum(axis=1)).ravel() for lo in range(0, len(r), _SCORED_AT_ONCE)]
                                    or [np.zeros(0)])
            ok = scores >= floor
            r, c, scores = r[ok], c[ok], scores[ok]
        _keep_best(out, r, c, scores, k)  # a block holds all of its rows' partners
        if report:
            report(stop, n)
    return out


#: Cells of a block of the whole product scored at once (rows x entries)
_DENSE_CELLS = 4_000_000


def _whole_rows(x: sp.csr_matrix, by_term: sp.csr_matrix, start: int, stop: int, floor: float):
    """The pairs (row, other, cosine) at or above ``floor`` of rows ``start:stop``, every other row
    scored (a dense block of at most :data:`_DENSE_CELLS` cells at a time)."""
    n = x.shape[0]
    step = max(1, _DENSE_CELLS // max(n, 1))
    rs, cs, ss = [], [], []
    for lo in range(start, stop, step):
        hi = min(stop, lo + step)
        block = (x[lo:hi] @ by_term).toarray()
        block[np.arange(hi - lo), np.arange(lo, hi)] = -1.0
        r, c = np.nonzero(block >= floor)
        rs.append(r.astype(np.int64) + lo)
        cs.append(c.astype(np.int64))
        ss.append(block[r, c].astype(np.float64))
    return np.concatenate(rs), np.concatenate(cs), np.concatenate(ss)


def _vector_pairs(matrix: np.ndarray, k: int, floor: float, report=None) -> dict[tuple[int, int], float]:
    """{(i, j): cosine} for i < j over the rows of ``matrix`` (L2-normalised): each row's ``k`` best
    partners at or above ``floor``, by an exact inner-product search (faiss, flat) a block of rows
    at a time. ``report(done, n)`` after each block."""
    import faiss

    n = len(matrix)
    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(matrix)
    want = min(k + 1, n)
    out: dict[tuple[int, int], float] = {}
    for start in range(0, n, _BLOCK_ROWS * 4):
        stop = min(n, start + _BLOCK_ROWS * 4)
        score, col = index.search(matrix[start:stop], want)
        r = np.repeat(np.arange(start, stop), want)
        c, score = col.ravel().astype(np.int64), score.ravel().astype(np.float64)
        ok = (c >= 0) & (c != r) & (score >= floor)
        _keep_best(out, r[ok], c[ok], score[ok], k)
        if report:
            report(stop, n)
    return out


def _stage(report, at: int, stages: int, n: int):
    """A stage's ``(done, total)`` as the whole search's: stage ``at`` of ``stages`` counts for
    ``n`` of the ``stages * n`` steps reported (None when nothing is reported)."""
    if report is None:
        return None
    return lambda done, total: report(at * n + (n * done) // max(total, 1), stages * n)


def _stated_edges(edges: pl.DataFrame | None) -> pl.DataFrame | None:
    """The edges that say how two entries relate: every edge from a trusted source (an author, the
    judge, a citation, an import) and any edge of a dominance type or a conflict. A fading edge of
    a plain relation (the linker's ``see_also`` between two texts it found alike) is a guess from
    the same similarity the judge reads, not a verdict: its pair stays a candidate.

    >>> e = pl.DataFrame({"src": ["b", "c", "d"], "dst": ["a", "a", "a"], "type": ["see_also", "see_also", "supersedes"],
    ...                   "source": ["auto", "author", "auto"]})
    >>> _stated_edges(e)["src"].to_list()
    ['c', 'd']
    """
    if edges is None or not edges.height or "source" not in edges.columns or "type" not in edges.columns:
        return edges
    return edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES))
                        | pl.col("type").is_in(sorted(DOMINANCE_TYPES | {"conflicts_with"})))


def candidate_pairs(entries: pl.DataFrame, *, vectors: tuple[np.ndarray, np.ndarray] | None = None,
                    edges: pl.DataFrame | None = None, threshold: float = DUPLICATE_THRESHOLD,
                    k: int = 5, progress: Progress = False) -> pl.DataFrame:
    """Candidate duplicate pairs (columns :data:`PAIR_SCHEMA`): each entry's ``k`` most similar
    others by TF-IDF cosine of title, summary and content (``lexical``) and, when ``vectors`` =
    (ids, matrix) are given, by embedding cosine (``vector``); ``score`` is the larger, kept at or
    above ``threshold``. ``a`` is the older entry, ``b`` the newer. Pairs already joined by an edge
    that states how they relate (either way; see :func:`_stated_edges`) are left out; a linker's
    ``see_also`` between two alike texts is no such statement. Evidence only: a pair is never an
    edge by itself.

    Each pair is also read as a person reads it, by :func:`compare_rows` (the rule judge's own
    reading): ``containment`` (the share of the smaller side's words and values in the other,
    framing aside), ``differ`` (the values of one missing from the other, e.g. "114, 14"),
    ``same`` (one says everything the other says and no value differs) and ``changed`` (the newer
    changes a value of the older and says so). Pairs that are the same fact or a correction come
    first, then by containment, then by similarity: template siblings that differ in a number
    rank below two wordings of one fact.

    The search scores only the pairs that can reach ``threshold`` (see :func:`_lexical_pairs`;
    vectors by an exact inner-product search), so its time grows with the pairs near the threshold,
    not with every pair of entries. ``progress`` reports it in steps of entries:
    the lexical search, the vector search, then the reading of the pairs found.

    >>> e = pl.DataFrame({"id": ["a1", "b2", "c3"], "title": ["t", "t", "x"], "summary": ["", "", ""],
    ...     "content": ["redis TTL is 300 in staging", "redis TTL is 300 in staging", "kafka lag"],
    ...     "systems": [["redis"], ["redis"], ["kafka"]], "tasks": [[], [], []],
    ...     "created_at": [1, 2, 3]})
    >>> candidate_pairs(e).select("a", "b", "same_systems").rows()
    [('a1', 'b2', True)]
    """
    if not isinstance(entries, pl.DataFrame):
        raise ValidationError("entries", type(entries).__name__, "must be a polars DataFrame")
    if not 0.0 < threshold <= 1.0:
        raise ValidationError("threshold", threshold, "a similarity threshold is in (0, 1]")
    if not isinstance(k, int) or k < 1:
        raise ValidationError("k", k, "k (partners per entry) is a positive integer")
    n = entries.height
    if n < 2:
        return pl.DataFrame(schema=PAIR_SCHEMA)
    ids = entries["id"].to_list()
    rows = entries.select([c for c in ("title", "summary", "content") if c in entries.columns]).to_dicts()
    report = progress_callback(progress, "duplicate candidates", unit="step")
    stages = 3 if vectors is not None and len(vectors[0]) else 2
    x = _tfidf([_text(r) for r in rows])
    lexical = _lexical_pairs(x, k, threshold, _stage(report, 0, stages, n))
    vector: dict[tuple[int, int], float] = {}
    vec_matrix = None
    if vectors is not None and len(vectors[0]):
        pos = {v: i for i, v in enumerate(np.asarray(vectors[0]).astype(str).tolist())}
        data = np.asarray(vectors[1], np.float32)
        if data.ndim == 3:
            data = data[:, 0, :]
        rows_of = np.array([pos.get(eid, -1) for eid in ids], dtype=np.int64)
        have = rows_of >= 0
        vec_matrix = np.zeros((n, data.shape[1]), np.float32)
        vec_matrix[have] = data[rows_of[have]]
        norms = np.linalg.norm(vec_matrix, axis=1)
        norms[norms == 0] = 1.0
        vec_matrix /= norms[:, None]
        vector = _vector_pairs(vec_matrix, k, threshold, _stage(report, 1, stages, n))
    keys = sorted(set(lexical) | set(vector))
    if not keys:
        if report:
            report(stages * n, stages * n)
        return pl.DataFrame(schema=PAIR_SCHEMA)
    i_idx = np.array([a for a, _ in keys])
    j_idx = np.array([b for _, b in keys])
    lex = np.asarray(x[i_idx].multiply(x[j_idx]).sum(axis=1)).ravel()
    vec = (np.concatenate([np.einsum("ij,ij->i", vec_matrix[i_idx[lo:lo + _VECTOR_PAIRS_AT_ONCE]],
                                     vec_matrix[j_idx[lo:lo + _VECTOR_PAIRS_AT_ONCE]])
                           for lo in range(0, len(keys), _VECTOR_PAIRS_AT_ONCE)])
           if vec_matrix is not None else np.full(len(keys), np.nan))
    created = entries["created_at"].to_list() if "created_at" in entries.columns else list(range(n))
    a_ids, b_ids = [], []
    for i, j in keys:
        older = (created[i], ids[i]) <= (created[j], ids[j])
        a_ids.append(ids[i] if older else ids[j])
        b_ids.append(ids[j] if older else ids[i])
    frame = pl.DataFrame({"a": a_ids, "b": b_ids, "lexical": lex, "vector": vec}, schema_overrides={"vector": pl.Float64})
    frame = frame.with_columns(vector=pl.col("vector").fill_nan(None))
    frame = frame.with_columns(score=pl.max_horizontal("lexical", pl.col("vector").fill_null(0.0)))
    frame = frame.filter(pl.col("score") >= threshold)
    frame = frame.with_columns(same_systems=_same(entries, frame, "systems"), same_tasks=_same(entries, frame, "tasks"))
    stated = _stated_edges(edges)
    if stated is not None and stated.height:
        linked = pl.concat([stated.select(pl.col("src").alias("a"), pl.col("dst").alias("b")),
                            stated.select(pl.col("dst").alias("a"), pl.col("src").alias("b"))]).unique()
        frame = frame.join(linked, on=["a", "b"], how="anti")
    by_id = dict(zip(ids, entries.select([c for c in ("title", "content") if c in entries.columns]).to_dicts()))
    reading = _stage(report, stages - 1, stages, n)
    readings = []
    for i, (a, b) in enumerate(frame.select("a", "b").iter_rows()):
        readings.append(compare_rows(by_id[a], by_id[b]))
        if reading and (i + 1) % 1024 == 0:
            reading(i + 1, frame.height)
    if reading:
        reading(frame.height, frame.height)
    frame = frame.with_columns(
        pl.Series("containment", [c.containment for c in readings], pl.Float64),
        pl.Series("differ", [", ".join(c.conflicts) or None for c in readings], pl.String),
        pl.Series("same", [c.same for c in readings], pl.Boolean),
        pl.Series("changed", [c.changed for c in readings], pl.Boolean))
    return (frame.with_columns(_first=pl.col("same") | pl.col("changed"))
            .sort(["_first", "containment", "score", "a", "b"], descending=[True, True, True, False, False])
            .select(list(PAIR_SCHEMA)))


def _same(entries: pl.DataFrame, pairs: pl.DataFrame, column: str) -> pl.Series:
    if column not in entries.columns:
        return pl.Series(column, [True] * pairs.height)
    sets = {r[0]: frozenset(r[1] or ()) for r in entries.select("id", column).iter_rows()}
    return pl.Series([sets.get(a, frozenset()) == sets.get(b, frozenset())
                      for a, b in pairs.select("a", "b").iter_rows()], dtype=pl.Boolean)


# ---------------------------------------------------------------------------------- rule judge

_MARKERS = re.compile(r"\b(correction|corrected|correcting|supersedes|replaces|no longer|not when|"
                      r"was wrong|is wrong|turns out|actually|update:|updated:)\b", re.I)


def _sentences_inside(a: Mapping, b: Mapping) -> bool:
    """Every sentence of ``b`` is a sentence of ``a`` (the same words in the same order, framing
    aside), and ``b`` is at most half of ``a``: one part on its own, not a shortened copy."""
    sa, sb = sentences(str(a.get("content") or "")), sentences(str(b.get("content") or ""))
    return 1 <= 2 * len(sb) <= len(sa) and not differing(str(a.get("content") or ""), str(b.get("content") or ""))[1]


def _metadata(row: Mapping) -> Mapping:
    text = row.get("metadata") or "{}"
    return _metadata_of(text) if isinstance(text, str) else {}


@lru_cache(maxsize=1 << 16)
def _metadata_of(text: str) -> Mapping:
    """An entry's metadata, read once per text (a judge run reads each entry's for every pair it is
    in), read-only."""
    try:
        meta = json.loads(text)
    except ValueError:
        return MappingProxyType({})
    return MappingProxyType(meta) if isinstance(meta, dict) else MappingProxyType({})


def _document_pages(a: Mapping, b: Mapping) -> str | None:
    """Where both entries are pages of ingested documents (metadata ``doc``, the file or record
    they came from): "two documents" or "two sections of one document", pages a person wrote on
    purpose and alike because they share a template (CMake's ``RULE_LAUNCH_COMPILE`` of a directory
    and of a target; Node.js's ``Event`` and ``EventTarget``), never a fact an agent reported twice;
    None otherwise.

    >>> _document_pages({"metadata": '{"doc": "prop_dir/X.rst"}'}, {"metadata": '{"doc": "prop_tgt/X.rst"}'})
    'two documents'
    >>> _document_pages({"metadata": '{"doc": "a.rst"}'}, {"metadata": None}) is None
    True
    """
    da, db = _metadata(a).get("doc"), _metadata(b).get("doc")
    if not (isinstance(da, str) and isinstance(db, str)):
        return None
    return "two documents" if da != db else "two sections of one document"


def _metadata_points_at(row: Mapping, other: str) -> bool:
    meta = _metadata(row)
    return any(meta.get(k) == other for k in ("supersedes", "replaces", "corrects"))


#: Metadata fields that say where an entry stands ("Status: Superseded"), read case-aside.
STATUS_FIELDS: tuple[str, ...] = ("status", "state", "lifecycle")
_REPLACED_STATUS = re.compile(r"\b(?:superseded|replaced|obsolete|obsoleted|deprecated|retired)\b", re.I)


def _marked_replaced(row: Mapping) -> bool:
    """The entry's own metadata says it was replaced ("Status: Superseded", "state: obsolete");
    it does not say by what."""
    return any(str(k).lower() in STATUS_FIELDS and isinstance(v, str) and _REPLACED_STATUS.search(v)
               for k, v in _metadata(row).items())


def _name(row: Mapping) -> str:
    """The title without a leading reference ("PEP 333: ")."""
    return _name_of(str(row.get("title") or ""))


@lru_cache(maxsize=1 << 16)
def _name_of(title: str) -> str:
    return re.sub(r"^[A-Z]{2,6}[ -]?\d{1,6}\s*[:.-]\s*", "", re.sub(r"\s+", " ", title).strip())


def _title_share(older: Mapping, newer: Mapping) -> tuple[float, int]:
    """The share of the older title's words and values (a leading reference aside) that the newer
    title restates, and how many the older title has."""
    fo, fn = facts(_name(older)), facts(_name(newer))
    size = len(fo.words) + len(fo.values)
    shared = len(fo.words & fn.words) + len(fo.values & fn.values)
    return (shared / size if size else 0.0), size


def _names(text: str, row: Mapping) -> bool:
    """``text`` names the entry ``row`` by its id or reference ("PEP 333"), not by its title
    (a text taking up the same subject says the title anyway)."""
    ref, needles = _reference(row, by_title=False)
    lower = _folded(text)
    return bool(ref) and any(n in lower for n in needles) and bool(_compiled(ref).search(text))


def _successor(older: Mapping, newer: Mapping) -> bool:
    """``newer`` names ``older`` and takes up its subject: its title restates all of the older
    title of three words or more (a new version of one document; two are a topic), or half of it
    where the older is marked replaced (:func:`_marked_replaced`)."""
    share, size = _title_share(older, newer)
    takes_up = (share == 1.0 and size >= 3) or (share >= 0.5 and _marked_replaced(older))
    return takes_up and _names(str(newer.get("content") or ""), older)


#: A title's own version ("Database API v2.0"); one after a preposition is what the entry is about
#: ("update the client to v1.70.0"), not its version.
_VERSION = re.compile(r"(?<!\bto )(?<!\bfrom )(?<!\bfor )(?<!\bwith )(?<!\bin )(?<!\bon )"
                      r"\bv(?:ersion\s*)?(\d+(?:\.\d+)*)\b", re.I)


def _new_version(older: Mapping, newer: Mapping) -> bool:
    """The newer title is the older one's with a higher version marker ("Database API v2.0" after
    "Database API v1.0" or "Database API"): the same document, revised."""
    to, tn = _name(older), _name(newer)
    vo, vn = _VERSION.findall(to), _VERSION.findall(tn)
    if not vn:
        return False
    fo, fn = facts(_VERSION.sub(" ", to)), facts(_VERSION.sub(" ", tn))
    number = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    return (len(fo.words) >= 2 and fo.words == fn.words and fo.values == fn.values
            and (not vo or number(vn[0]) > number(vo[0])))


_TITLE_REF = re.compile(r"\b([A-Z]{2,6})[ -]?0*(\d{1,6})\b")


def _one_document(a: Mapping, b: Mapping) -> bool:
    """Both titles open with one reference ("PEP 420: ... — Rationale", "PEP 420: ... — Examples"):
    two parts of one document."""
    ra, rb = (_TITLE_REF.match(str(r.get("title") or "").strip()) for r in (a, b))
    return bool(ra and rb) and ra.groups() == rb.groups()


def _reference(row: Mapping, *, by_title: bool = True) -> tuple[str | None, tuple[str, ...]]:
    """See :func:`_reference_of`: the entry's id and title."""
    return _reference_of(str(row.get("id") or ""), str(row.get("title") or ""), by_title)


@lru_cache(maxsize=1 << 16)
def _reference_of(own: str, title: str, by_title: bool) -> tuple[str | None, tuple[str, ...]]:
    """A pattern of the ways people name an entry: its id (or, for a hash-like id, an abbreviation
    of at least seven characters), a reference in its title such as "PEP 333" / "RFC-2616" /
    ``:pep:`333` ``, and its title itself when that has at least three words (a leading "PEP 333:"
    set aside); with the lowercase strings one of which a text naming it contains (a cheap first
    look). None when the entry has no name to find."""
    refs, needles = [], []
    title = re.sub(r"\s+", " ", title).strip()
    for kind, num in re.findall(r"\b([A-Z]{2,6})[ -]?0*(\d{1,6})\b", title):
        refs.append(rf"(?<![\w-]){kind}[ -]?0*{num}(?![\w-])|:{kind}:`(?:[^`<]*<)?0*{num}\b[^`]*`")
        needles.append(num)
    if re.fullmatch(r"[0-9a-f]{7,64}", own):
        refs.append(rf"(?<![0-9a-z]){own[:7]}[0-9a-f]{{0,{len(own) - 7}}}(?![0-9a-z])")
        needles.append(own[:7])
    elif len(own) >= 4:
        refs.append(rf"(?<![\w-]){re.escape(own)}(?![\w-])")
        needles.append(own.lower())
    name = re.sub(r"^[A-Z]{2,6}[ -]?\d{1,6}\s*[:.-]\s*", "", title)
    if by_title and len(name.split()) >= 3:
        refs.append(rf"[\"'“‘`]?{re.escape(name).replace(chr(92) + ' ', chr(92) + 's+')}[\"'”’`]?")
        needles.append(" ".join(name.lower().split()))
    return ("(?:" + "|".join(refs) + ")" if refs else None), tuple(needles)


def _gap(n: int, *, parts: bool = False) -> str:
    """Up to ``n`` words between a cue and the name, with no punctuation and (unless ``parts``) none
    of them a preposition that makes the name the place of a part ("replaces the limits *in* PEP 8")."""
    word = r"[\w'-]+\s+" if parts else r"(?!(?:in|of|from|by|with|on|at|for|described|defined)\b)[\w'-]+\s+"
    return rf"(?:{word}){{0,{n}}}"


def _says_replaced(text: str, reference: tuple[str | None, tuple[str, ...]], patterns: tuple[str, ...]) -> bool:
    """One of ``patterns`` (with ``{ref}`` the other entry's name) matches ``text``, the name not
    read as a part of the other ("PEP 8's limits") and the cue not turned round by "not", "never",
    "rather than"."""
    ref, needles = reference
    lower = _folded(text)
    if not ref or not any(n in lower for n in needles):
        return False
    text = text.replace("*", "")  # emphasis: "would *supersede* PEP 8"
    names = list(_compiled(ref).finditer(text))
    if not names:  # most pairs: the other is not named at all
        return False
    # each pattern is read around each place the name is written: what comes before it (the cue and
    # its gap, anchored where the name starts) and after it, with the tables' parts compiled once
    # rather than one pattern per entry and cue
    for pattern in patterns:
        before_re, after_re = _sides(pattern)
        for name in names:
            start, end = name.span()
            after = after_re.match(text, end) if after_re else None
            before = before_re.search(text, max(0, start - _CUE_REACH), start) if before_re else None
            if (after_re and not after) or (before_re and not before):
                continue
            if re.match(r"['’]s\b", text[end:]):
                continue
            if not _NEGATED.search(text[max(0, (before.start() if before else start) - 40):(after.end() if after else end)]):
                return True
    return False


#: How far before a name a cue and its gap may start (characters): a cue and up to eight words.
_CUE_REACH = 400


@lru_cache(maxsize=64)
def _sides(pattern: str) -> tuple[re.Pattern | None, re.Pattern | None]:
    """A pattern of :data:`_REPLACES` / :data:`_SUCCEEDED` as what must come right before the name
    (anchored at its start) and what must come right after it."""
    before, after = pattern.split("{ref}")
    return (re.compile(f"(?:{before})\\Z", re.I) if before else None, re.compile(after, re.I) if after else None)


@lru_cache(maxsize=1 << 14)
def _folded(text: str) -> str:
    """``text`` lower-cased with its runs of white space as one space (what a name is looked for in)."""
    return " ".join(text.lower().split())


@lru_cache(maxsize=1 << 15)
def _compiled(pattern: str) -> re.Pattern:
    # an entry's name pattern is looked for in every pair it is in: the cache holds one per entry of
    # a big bank, so a run compiles each once
    return re.compile(pattern, re.I)


def _names_the_other(a: Mapping, b: Mapping) -> bool:
    """The texts say that ``b`` replaces ``a``, naming it (by id, reference or title, see
    :func:`_reference`) as the object of a word of replacement: ``b`` "supersedes / replaces /
    obsoletes / updates / reverts PEP 333", "is a successor to ...", "instead of ...", "PEP 333 was
    withdrawn in favour of this one"; or ``a`` "is superseded by / replaced by ...", "withdrawn in
    favour of ...", "use ... instead". A word of replacement elsewhere in the sentence is not enough
    ("replaces the limits in PEP 8", "PEP 8, which replaced ...")."""
    newer, older = str(b.get("content") or ""), str(a.get("content") or "")
    return _says_replaced(newer, _reference(a), _REPLACES) or _says_replaced(older, _reference(b), _SUCCEEDED)


#: Other documents named before the one looked for, in a list ("obsoletes RFC 7230, RFC 7231 and
#: {ref}", "replace :pep:`397` ("Python launcher for Windows") and {ref}"): each a reference (a
#: ``PEP 8`` / ``RFC-2616`` / role / hash / ``#12``) with its title in brackets, then a comma or "and".
_LISTED = (r"(?:(?:[A-Z]{2,6}[ -]?\d{1,6}|:[a-z]+:`[^`]{1,80}`|[0-9a-f]{7,40}|#\d+)(?:\s*\([^()]{0,120}\))?"
           r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)){1,4}")

#: How a newer text says it replaces the one it names (``{ref}``).
_REPLACES: tuple[str, ...] = (
    r"\b(?:supersed(?:es|e|ing)|replac(?:es|e|ing)|obsolet(?:es|e|ing)|updates|revises|revert(?:s|ing)?|retires|"
    r"deprecat(?:es|e|ing)(?:\s*(?:/|and)\s*remov(?:es|e|ing))?|rescinds?)\s+" + _gap(2) + r"{ref}",
    r"\b(?:successor|replacement|revision|update)\s+(?:to|of|for)\s+" + _gap(2) + r"{ref}",
    r"\b(?:instead of|in place of)\s+" + _gap(1) + r"{ref}",
    r"{ref},?\s+(?:which\s+)?(?:is|was|has been|had been|will be|is now|are|were)?\s*(?:\w+ly\s+)?(?:superseded|replaced|"
    r"obsoleted|withdrawn|retired|deprecated|rejected)\s+(?:by|in favou?r of)\s+(?:this|the present|the new)\b",
    r"{ref}\s+(?:is|will|would|should|shall|must)\s+(?:now\s+|then\s+)?(?:be\s+)?(?:\w+ly\s+)?(?:superseded|replaced|obsoleted|"
    r"deprecated|retired|rescinded|removed)\b",
    r"\b(?:supersed(?:es|e|ing)|replac(?:es|e|ing)|obsolet(?:es|e|ing)|updates|revises)\s+" + _gap(2) + _LISTED
    + r"{ref}",
)
#: How an older text says it was replaced by the one it names (``{ref}``).
_SUCCEEDED: tuple[str, ...] = (
    r"\b(?:superseded|replaced|obsoleted|succeeded)\s+by\s+" + _gap(2) + r"{ref}",
    r"\b(?:superseded|replaced|obsoleted|succeeded)\s+by\s+" + _gap(2) + _LISTED + r"{ref}",
    r"\bin favou?r of\s+" + _gap(8, parts=True) + r"{ref}",
    r"\b(?:use|see|read)\s+{ref}\s+instead\b",
    r"\bcontinu(?:es|ed)\s+" + _gap(4, parts=True) + r"in\s+{ref}",
    r"\bmerged\s+into\s+" + _gap(2) + r"{ref}",
    r"\b(?:is|are|now|fully|already)\s+(?:now\s+|fully\s+)?covered\s+by\s+" + _gap(1) + r"{ref}",
)
_NEGATED = re.compile(r"\b(?:not|never|nor|unable|failed)\b|n't\b|\brather than\b", re.I)


def _body(row: Mapping) -> str:
    return str(row.get("content") or row.get("title") or "")


def compare_rows(a: Mapping, b: Mapping, *, frame: float = 0.6) -> Comparison:
    """How the older entry ``a`` and the newer ``b`` relate (:func:`kbtools.judging.sameness.compare`
    over their content; a title marked as a correction is read with it). The one reading of a pair
    that the candidates, the rule judge and ``kb health`` share.

    >>> compare_rows({"content": "Room 114 for the sync."}, {"content": "Room 116 for the sync."}).conflicts
    ('114',)
    """
    marked = bool(_MARKERS.search(str(b.get("title") or "")))
    ta, tb = _body(a), _body(b)
    reading = compare(f"{a.get('title') or ''}. {ta}" if marked else ta,
                      f"{b.get('title') or ''}. {tb}" if marked else tb, frame=frame)
    if marked or not (reading.same or reading.equal):
        return reading
    differ = _titles_differ(a, b)
    if differ is None:
        return reading
    # "test1527: enable for hyper" / "test1528: ..." over one "Closes #8128": two facts
    return replace(reading, same=False, equal=False, conflicts=tuple(sorted(set(reading.conflicts) | set(differ))))


def _titles_differ(a: Mapping, b: Mapping) -> tuple[str, ...] | None:
    """How two entries' titles tell apart the facts their bodies say alike (None where they do not): a
    commit's subject or a section's heading states what its body may leave out. The titles differ
    when each has a value the other lacks (a value changed: "PEP 8" / "PEP 20" over one copyright
    paragraph), or, where a body says less than its title (a subject over "Closes #9328"), when the
    titles do not say the same words ("libssh: ..." / "libssh2: ..."). The values that differ, else ()."""
    title_a, title_b = str(a.get("title") or ""), str(b.get("title") or "")
    fa, fb = facts(title_a), facts(title_b)
    if fa.values - fb.values and fb.values - fa.values:
        return tuple(sorted(fa.values ^ fb.values))
    thin = any(len(facts(_body(row)).words) < len(f.words) for row, f in ((a, fa), (b, fb)))
    if thin and title_a and title_b:
        titles = compare(title_a, title_b)
        if not titles.equal:  # a subject that adds a word names another change ("fix http servers")
            return titles.conflicts
    return None


def rule_judge(a: Mapping, b: Mapping, *, frame: float = 0.6, merge_confidence: float = MERGE_CONFIDENCE) -> Verdict:
    """The built-in judge of a pair (``a`` older, ``b`` newer; entries rows as dicts), reading both
    through :func:`kbtools.judging.sameness.compare` (values, framing-free content words, cues):

    - different systems or tasks: ``distinct``;
    - ``b`` marked as replacing ``a``: metadata naming ``a``, ``b`` naming ``a`` (id, "PEP 333",
      title) as what it "supersedes" / "replaces" / "obsoletes" / "updates" / "reverts" / is "a
      successor to" / does "instead of", or ``a`` naming ``b`` as what it was "superseded by" /
      "withdrawn in favour of" / "merged into": ``supersede``;
    - ``b`` taking up ``a``'s subject: ``a``'s own status says it was replaced (metadata
      :data:`STATUS_FIELDS`) and ``b`` names it by id or reference and restates half its title, or
      ``b`` names it and restates all of a title of three words or more, or ``b``'s title is ``a``'s
      with a higher version ("v2.0"): ``supersede``;
    - the same read the other way round (``a`` replaces ``b``): ``supersede`` with ``reverse``;
      two parts of one document (titles opening with one reference) never replace each other by it;
    - ``b`` changes a value of ``a`` and says so ("Correction:", "now", "instead of 30 s", "from 30 s
      to 60 s") in the sentences that differ, over ``a``'s restated frame: ``supersede``, the change
      in the note ("changes 30 s to 60 s");
    - ``b`` one part of ``a`` at most half its length, sentences said word for word: ``split``;
    - pages of ingested documents (metadata ``doc``): ``merge`` below ``merge_confidence`` (``kb
      judge`` writes ``supersedes``) only when they say the same, else ``distinct``;
    - one says everything the other says and no value differs: ``merge``; at or above
      ``merge_confidence`` only when the two say exactly the same (framing aside), below it when the
      larger adds context (``kb judge`` then writes ``supersedes``, nothing is deleted);
    - otherwise ``distinct`` (a value, name or word differs: a different fact).

    >>> a = {"id": "a", "title": "T", "content": "Set lock_timeout to 5s. Run ALTER TABLE off-peak. Watch pg_locks.",
    ...      "systems": ["postgres"], "tasks": ["migrate"]}
    >>> rule_judge(a, dict(a, id="b", content="Watch pg_locks.")).action
    'split'
    >>> rule_judge(a, dict(a, id="c", title="Correction: T", content="Set lock_timeout to 2s, not 5s. Run ALTER TABLE off-peak."))
    Verdict(action='supersede', note='Newer correction of that entry: changes 5 s to 2 s.', confidence=0.917, reverse=False)
    >>> rule_judge(a, dict(a, systems=["mysql"])).action
    'distinct'
    >>> rule_judge(a, dict(a, content="Heads up: set lock_timeout to 5s. Run ALTER TABLE off-peak. Watch pg_locks.")).action
    'merge'
    """
    if set(a.get("systems") or ()) != set(b.get("systems") or ()) or set(a.get("tasks") or ()) != set(b.get("tasks") or ()):
        return Verdict("distinct", "Different systems or tasks: not the same knowledge.", 0.8)
    named = not _one_document(a, b)  # two parts of one document name it alike; that says nothing of each other
    if _metadata_points_at(b, str(a.get("id"))) or (named and _names_the_other(a, b)):
        return Verdict("supersede", "Newer entry that replaces that one; read this one first.", 0.9)
    if named and (_successor(a, b) or _new_version(a, b)):
        return Verdict("supersede", "Newer entry that takes up that one's subject by name; read this one first.", 0.8)
    if _metadata_points_at(a, str(b.get("id"))) or (named and (_names_the_other(b, a) or _successor(b, a)
                                                                or _new_version(b, a))):
        return Verdict("supersede", "Older entry that replaces this one; read that one first.", 0.8, reverse=True)
    ta, tb = _body(a), _body(b)
    c = compare_rows(a, b, frame=frame)
    # a correction is newer than what it corrects: two entries written at one instant (the sections
    # of one ingest) change nothing of each other
    written_together = a.get("created_at") is not None and a.get("created_at") == b.get("created_at")
    if c.changed and not written_together:
        return Verdict("supersede", f"Newer correction of that entry: {c.change_note()}.",
                       round(min(0.95, 0.5 + c.overlap / 2), 3))
    pages = _document_pages(a, b)
    if pages:
        # pages of documents are written on purpose: pages alike by a template (a property of a
        # directory and of a target, a command and its "-entry" variant) or one quoting a part of
        # another are different pages. Only two that say the same (a copied page, one boilerplate
        # paragraph) fold: the newer under the other, nothing deleted, nothing split out
        if c.equal or (c.same and not c.added and c.containment == 1.0 and facts(ta).words == facts(tb).words):
            return Verdict("merge", f"The same knowledge in {pages}.", round(merge_confidence - 0.05, 3))
        return Verdict("distinct", f"Pages of {pages} that say different things.", round(1.0 - c.containment / 2, 3))
    inside = _sentences_inside(a, b)
    if inside:
        return Verdict("split", "One part of that entry, on its own.", round(c.containment, 3))
    if c.same:
        if c.equal or (not c.added and c.containment == 1.0 and _few_extra(ta, tb)):
            return Verdict("merge", "The same knowledge reported twice.", 0.95)
        return Verdict("merge", "The same knowledge reported twice; the fuller one adds context.",
                       round(min(merge_confidence - 0.05, 0.5 + c.containment * 0.35), 3))
    differ = ", ".join(c.conflicts[:5]) + (f" (and {len(c.conflicts) - 5} more)" if len(c.conflicts) > 5 else "")
    return Verdict("distinct", "Same topic, different fact." + (f" Values differ: {differ}." if differ else ""),
                   round(1.0 - c.containment / 2, 3))


def _few_extra(a: str, b: str) -> bool:
    """The larger side adds at most one content word to the smaller (framing aside)."""
    fa, fb = facts(a), facts(b)
    return len(fa.words ^ fb.words) <= 1


# ----------------------------------------------------------------------------------- LLM judge

#: The prompt of an LLM judge; fields are filled from the pair's rows by :func:`judge_prompt`.
JUDGE_PROMPT = """You are deduplicating an engineering team's knowledge bank. Two entries follow; A is older, B newer.

A [{a_id}] {a_title}
systems: {a_systems}; tasks: {a_tasks}
{a_content}

B [{b_id}] {b_title}
systems: {b_systems}; tasks: {b_tasks}
{b_content}

Decide one action:
- "merge": A and B state the same knowledge; nothing in B adds or changes a fact.
- "supersede": B corrects or replaces A (B is the one to read); add "reverse": true where A replaces B.
- "split": B is one part of A, on its own.
- "distinct": same topic at most, but a different fact; keep both unlinked.

Write a note that says how B pertains to A, never what either says (no facts, values or names from them).
Answer with one JSON object and nothing else: {{"action": "...", "note": "...", "confidence": 0.0-1.0}}"""


def judge_prompt(a: Mapping, b: Mapping, *, template: str = JUDGE_PROMPT) -> str:
    """The prompt for the pair (``a`` older, ``b`` newer).

    >>> "[b0000002]" in judge_prompt({"id": "a0000001"}, {"id": "b0000002"})
    True
    """
    def side(row: Mapping, p: str) -> dict:
        return {f"{p}_id": row.get("id", ""), f"{p}_title": row.get("title") or "",
                f"{p}_content": row.get("content") or "", f"{p}_systems": ", ".join(row.get("systems") or ()) or "-",
                f"{p}_tasks": ", ".join(row.get("tasks") or ()) or "-"}

    return template.format(**side(a, "a"), **side(b, "b"))


def parse_verdict(text: str) -> Verdict:
    """The verdict in a completion: its first JSON object with ``action``, ``note``, ``confidence``.

    >>> parse_verdict('Sure. {"action": "split", "note": "One part of it.", "confidence": 0.7}').action
    'split'
    >>> parse_verdict("I think they are the same")
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: completion='I think they are the same': an LLM judge answers with one JSON object {"action", "note", "confidence"}
    """
    rule = 'an LLM judge answers with one JSON object {"action", "note", "confidence"}'
    match = re.search(r"\{.*\}", text or "", re.S)
    if not match:
        raise ValidationError("completion", text, rule)
    try:
        obj = json.loads(match.group(0))
    except ValueError:
        raise ValidationError("completion", text, rule) from None
    if not isinstance(obj, dict) or "action" not in obj:
        raise ValidationError("completion", text, rule)
    conf = obj.get("confidence", 1.0)
    try:
        conf = min(1.0, max(0.0, float(conf)))
    except (TypeError, ValueError):
        raise ValidationError("confidence", conf, "a verdict's confidence is a number in [0, 1]") from None
    return Verdict(str(obj["action"]).strip().lower(), obj.get("note"), conf, reverse=obj.get("reverse") is True)


def llm_judge(complete: Callable[[str], str], *, template: str = JUDGE_PROMPT) -> JudgeFn:
    """A judge that asks a language model: ``complete(prompt) -> str`` is any client (kbtools makes
    no network call of its own); the answer is parsed by :func:`parse_verdict`.

    >>> judge = llm_judge(lambda prompt: '{"action": "merge", "note": "Same report twice.", "confidence": 0.95}')
    >>> judge({"id": "a"}, {"id": "b"})
    Verdict(action='merge', note='Same report twice.', confidence=0.95, reverse=False)
    """
    if not callable(complete):
        raise ValidationError("complete", complete, "an LLM judge needs a callable complete(prompt) -> str")

    def judge(a: Mapping, b: Mapping) -> Verdict:
        return parse_verdict(complete(judge_prompt(a, b, template=template)))

    judge.__name__ = f"llm_judge({getattr(complete, '__name__', 'complete')})"
    return judge


# ------------------------------------------------------------------------------ verdict -> plan


def plan_verdicts(judged: pl.DataFrame, *, merge_confidence: float = MERGE_CONFIDENCE) -> pl.DataFrame:
    """What each verdict writes (columns :data:`DECISION_SCHEMA`), from pairs with ``a``, ``b``,
    ``score``, ``action``, ``note``, ``confidence`` (and ``reverse``, optional): a ``supersedes``
    edge for ``supersede`` (newer over older, older over newer where ``reverse``), a ``split_from`` edge (part from whole) for ``split``, a merge (``b`` into the
    older ``a``) for ``merge`` at or above ``merge_confidence`` and a ``supersedes`` edge below it,
    nothing for ``distinct``. An entry takes part in one write per run (best score first): a later
    pair that touches it is skipped and says why.

    >>> j = pl.DataFrame({"a": ["a1", "a1"], "b": ["b2", "c3"], "score": [0.9, 0.8], "action": ["merge", "split"],
    ...                   "note": ["Same.", "Part."], "confidence": [0.95, 0.9]})
    >>> plan_verdicts(j).select("write", "type", "skipped").rows()
    [('merge', None, None), ('none', None, 'a1 already takes part in a write of this run')]
    """
    out, busy = [], set()
    for r in judged.sort(["score", "a", "b"], descending=[True, False, False]).iter_rows(named=True):
        row = {"a": r["a"], "b": r["b"], "score": r["score"], "action": r["action"], "note": r["note"],
               "confidence": r["confidence"], "write": "none", "src": None, "dst": None, "type": None, "skipped": None}
        if r["action"] != "distinct":
            taken = next((x for x in (r["a"], r["b"]) if x in busy), None)
            if taken:
                row["skipped"] = f"{taken} already takes part in a write of this run"
            elif r["action"] == "merge" and r["confidence"] >= merge_confidence:
                row.update(write="merge", src=r["b"], dst=r["a"])
            elif r["action"] == "supersede" and r.get("reverse"):
                row.update(write="edge", src=r["a"], dst=r["b"], type="supersedes")
            else:
                type_ = "split_from" if r["action"] == "split" else "supersedes"
                row.update(write="edge", src=r["b"], dst=r["a"], type=type_)
            if row["write"] != "none":
                busy.update((r["a"], r["b"]))
        out.append(row)
    return pl.DataFrame(out, schema=DECISION_SCHEMA) if out else pl.DataFrame(schema=DECISION_SCHEMA)
