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
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import polars as pl
import scipy.sparse as sp

from kbtools.errors import ValidationError

__all__ = [
    "ACTIONS", "Verdict", "JudgeFn", "PAIR_SCHEMA", "DUPLICATE_THRESHOLD", "MERGE_CONFIDENCE",
    "candidate_pairs", "rule_judge", "JUDGE_PROMPT", "judge_prompt", "parse_verdict", "llm_judge",
    "plan_verdicts", "DECISION_SCHEMA",
]

#: What a judge may decide about a pair (older, newer).
ACTIONS: tuple[str, ...] = ("merge", "supersede", "split", "distinct")
#: Similarity at or above which a pair becomes a candidate (``kb judge``'s default operating point).
DUPLICATE_THRESHOLD: float = 0.5
#: A merge verdict deletes an entry only at or above this confidence; below it the judge writes a
#: ``supersedes`` edge instead (nothing is lost). See the README for the precision measured there.
MERGE_CONFIDENCE: float = 0.9

PAIR_SCHEMA = {"a": pl.String, "b": pl.String, "lexical": pl.Float64, "vector": pl.Float64, "score": pl.Float64,
               "same_systems": pl.Boolean, "same_tasks": pl.Boolean}
DECISION_SCHEMA = {"a": pl.String, "b": pl.String, "score": pl.Float64, "action": pl.String, "note": pl.String,
                   "confidence": pl.Float64, "write": pl.String, "src": pl.String, "dst": pl.String,
                   "type": pl.String, "skipped": pl.String}


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on a pair (older ``a``, newer ``b``): ``action`` in :data:`ACTIONS`, the
    ``note`` that the written edge carries (how the two pertain, never what they say) and a
    ``confidence`` in [0, 1].

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

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise ValidationError("action", self.action, f"a verdict's action is one of {', '.join(ACTIONS)}")
        if not isinstance(self.confidence, (int, float)) or not 0.0 <= float(self.confidence) <= 1.0:
            raise ValidationError("confidence", self.confidence, "a verdict's confidence is a number in [0, 1]")
        if self.note is not None and not isinstance(self.note, str):
            raise ValidationError("note", self.note, "a verdict's note is a string or None")


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


def _top_pairs(scores_of_chunk, n: int, k: int, floor: float, chunk: int | None = None) -> dict[tuple[int, int], float]:
    """{(i, j): score} for i < j, each row's ``k`` best partners at or above ``floor``; rows are
    scored in blocks of about four million cells (memory stays bounded on a large bank)."""
    out: dict[tuple[int, int], float] = {}
    chunk = chunk or max(16, min(1024, 4_000_000 // max(n, 1)))
    for start in range(0, n, chunk):
        block = scores_of_chunk(start, min(n, start + chunk))  # dense (rows, n)
        rows = np.arange(start, start + block.shape[0])
        block[np.arange(block.shape[0]), rows] = -1.0
        kk = min(k, n - 1)
        if kk <= 0:
            continue
        best = np.argpartition(-block, kk - 1, axis=1)[:, :kk]
        for r, cols in zip(rows.tolist(), best.tolist()):
            for c in cols:
                s = float(block[r - start, c])
                if s >= floor:
                    key = (min(r, c), max(r, c))
                    out[key] = max(out.get(key, -1.0), s)
    return out


def candidate_pairs(entries: pl.DataFrame, *, vectors: tuple[np.ndarray, np.ndarray] | None = None,
                    edges: pl.DataFrame | None = None, threshold: float = DUPLICATE_THRESHOLD,
                    k: int = 5) -> pl.DataFrame:
    """Candidate duplicate pairs (columns :data:`PAIR_SCHEMA`): each entry's ``k`` most similar
    others by TF-IDF cosine of title, summary and content (``lexical``) and, when ``vectors`` =
    (ids, matrix) are given, by embedding cosine (``vector``); ``score`` is the larger, kept at or
    above ``threshold``. ``a`` is the older entry, ``b`` the newer. Pairs already joined by an edge
    (either way) are left out: the agents have said how those two relate. Evidence only: a pair
    is never an edge by itself.

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
    x = _tfidf([_text(r) for r in rows])
    lexical = _top_pairs(lambda s, e: (x[s:e] @ x.T).toarray(), n, k, threshold)
    vector: dict[tuple[int, int], float] = {}
    vec_matrix = None
    if vectors is not None and len(vectors[0]):
        pos = {v: i for i, v in enumerate(np.asarray(vectors[0]).astype(str).tolist())}
        data = np.asarray(vectors[1], np.float32)
        if data.ndim == 3:
            data = data[:, 0, :]
        vec_matrix = np.zeros((n, data.shape[1]), np.float32)
        for i, eid in enumerate(ids):
            if eid in pos:
                vec_matrix[i] = data[pos[eid]]
        norms = np.linalg.norm(vec_matrix, axis=1)
        norms[norms == 0] = 1.0
        vec_matrix = vec_matrix / norms[:, None]
        vector = _top_pairs(lambda s, e: vec_matrix[s:e] @ vec_matrix.T, n, k, threshold)
    keys = sorted(set(lexical) | set(vector))
    if not keys:
        return pl.DataFrame(schema=PAIR_SCHEMA)
    i_idx = np.array([a for a, _ in keys])
    j_idx = np.array([b for _, b in keys])
    lex = np.asarray(x[i_idx].multiply(x[j_idx]).sum(axis=1)).ravel()
    vec = (np.einsum("ij,ij->i", vec_matrix[i_idx], vec_matrix[j_idx]) if vec_matrix is not None
           else np.full(len(keys), np.nan))
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
    if edges is not None and edges.height:
        linked = pl.concat([edges.select(pl.col("src").alias("a"), pl.col("dst").alias("b")),
                            edges.select(pl.col("dst").alias("a"), pl.col("src").alias("b"))]).unique()
        frame = frame.join(linked, on=["a", "b"], how="anti")
    return frame.sort(["score", "a", "b"], descending=[True, False, False]).select(list(PAIR_SCHEMA))


def _same(entries: pl.DataFrame, pairs: pl.DataFrame, column: str) -> pl.Series:
    if column not in entries.columns:
        return pl.Series(column, [True] * pairs.height)
    sets = {r[0]: frozenset(r[1] or ()) for r in entries.select("id", column).iter_rows()}
    return pl.Series([sets.get(a, frozenset()) == sets.get(b, frozenset())
                      for a, b in pairs.select("a", "b").iter_rows()], dtype=pl.Boolean)


# ---------------------------------------------------------------------------------- rule judge

_MARKERS = re.compile(r"\b(correction|corrected|correcting|supersedes|replaces|no longer|not when|"
                      r"was wrong|is wrong|turns out|actually|update:|updated:)\b", re.I)
#: Words that change no fact: two reports of the same thing differ in these and nothing else.
_FILLER = frozenset("""again also reported report restated restating duplicate same note noted as earlier
    above before another agent by confirmed confirm confirms seen once more the a an this that it is""".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


_MARKER_WORDS = frozenset("""correction corrected correcting supersedes replaces longer wrong turns out actually update
    updated earlier entry had this not when was is""".split())


def _sentences_inside(a: Mapping, b: Mapping) -> bool:
    """Every sentence of ``b`` is (almost word for word) a sentence of ``a``, and ``a`` has more."""
    sa = [set(_tokens(x)) for x in _SENTENCE.split(str(a.get("content") or "").strip()) if x]
    sb = [set(_tokens(x)) for x in _SENTENCE.split(str(b.get("content") or "").strip()) if x]
    return len(sa) > len(sb) >= 1 and all(any(_jaccard(x, y) >= 0.8 for y in sa) for x in sb)


def _content_tokens(row: Mapping) -> list[str]:
    return _tokens(str(row.get("content") or ""))


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _metadata_points_at(row: Mapping, other: str) -> bool:
    try:
        meta = json.loads(row.get("metadata") or "{}")
    except (TypeError, ValueError):
        return False
    return isinstance(meta, dict) and any(meta.get(k) == other for k in ("supersedes", "replaces", "corrects"))


def rule_judge(a: Mapping, b: Mapping) -> Verdict:
    """The built-in judge of a pair (``a`` older, ``b`` newer; entries rows as dicts).

    - different systems or tasks: ``distinct``;
    - ``b`` marked as a correction of ``a`` (a marker word such as "Correction", "no longer", "turns
      out", or metadata naming ``a`` as replaced) over shared content: ``supersede`` (b over a);
    - ``b``'s words almost all inside a longer ``a``: ``split`` (b is one part of a);
    - near-identical content whose differing words change no fact (no number, name or term differs):
      ``merge``, with the content overlap as confidence;
    - otherwise ``distinct`` (same topic, different fact).

    >>> a = {"id": "a", "title": "T", "content": "Set lock_timeout to 5s. Run ALTER TABLE off-peak. Watch pg_locks.",
    ...      "systems": ["postgres"], "tasks": ["migrate"]}
    >>> rule_judge(a, dict(a, id="b", content="Watch pg_locks.")).action
    'split'
    >>> rule_judge(a, dict(a, id="c", title="Correction: T", content="Set lock_timeout to 2s, not 5s. Run ALTER TABLE off-peak.")).action
    'supersede'
    >>> rule_judge(a, dict(a, systems=["mysql"])).action
    'distinct'
    """
    if set(a.get("systems") or ()) != set(b.get("systems") or ()) or set(a.get("tasks") or ()) != set(b.get("tasks") or ()):
        return Verdict("distinct", "Different systems or tasks: not the same knowledge.", 0.8)
    ta, tb = _content_tokens(a), _content_tokens(b)
    sa, sb = set(ta), set(tb)
    overlap = _jaccard(sa, sb)
    contained = len(sa & sb) / len(sb) if sb else 0.0
    marked = bool(_MARKERS.search(f"{b.get('title') or ''} {b.get('content') or ''}")) and not _MARKERS.search(
        f"{a.get('title') or ''} {a.get('content') or ''}")
    body = _jaccard(sa - _MARKER_WORDS, sb - _MARKER_WORDS)  # what the two say, the correction's framing aside
    if (marked and body >= 0.6) or (_metadata_points_at(b, str(a.get("id"))) and body >= 0.25):
        return Verdict("supersede", "Newer correction of that entry on the same systems and tasks; read this one first.",
                       round(min(1.0, 0.4 + body / 2), 3))
    if contained >= 0.9 and len(sb) <= 0.7 * len(sa) and _sentences_inside(a, b):
        return Verdict("split", "One part of that entry, on its own.", round(contained, 3))
    differing = (sa ^ sb) - _FILLER
    if overlap >= 0.6 and not differing:
        return Verdict("merge", "The same knowledge reported twice.", round(overlap, 3))
    return Verdict("distinct", "Same topic, different fact.", round(1.0 - overlap / 2, 3))


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
- "supersede": B corrects or replaces A (B is the one to read).
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
    return Verdict(str(obj["action"]).strip().lower(), obj.get("note"), conf)


def llm_judge(complete: Callable[[str], str], *, template: str = JUDGE_PROMPT) -> JudgeFn:
    """A judge that asks a language model: ``complete(prompt) -> str`` is any client (kbtools makes
    no network call of its own); the answer is parsed by :func:`parse_verdict`.

    >>> judge = llm_judge(lambda prompt: '{"action": "merge", "note": "Same report twice.", "confidence": 0.95}')
    >>> judge({"id": "a"}, {"id": "b"})
    Verdict(action='merge', note='Same report twice.', confidence=0.95)
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
    ``score``, ``action``, ``note``, ``confidence``: a ``supersedes`` edge (newer over older) for
    ``supersede``, a ``split_from`` edge (part from whole) for ``split``, a merge (``b`` into the
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
            else:
                type_ = "split_from" if r["action"] == "split" else "supersedes"
                row.update(write="edge", src=r["b"], dst=r["a"], type=type_)
            if row["write"] != "none":
                busy.update((r["a"], r["b"]))
        out.append(row)
    return pl.DataFrame(out, schema=DECISION_SCHEMA) if out else pl.DataFrame(schema=DECISION_SCHEMA)
