"""Hop-lab tasks and replay query logs: read from a ground-truth sidecar or a file, or mined.

A hop task asks for a fact (the *proof token*) that only base entry ``b`` holds; ``b`` is not in
the flat top-k for the task's query, but one trusted edge away from an entry ``a`` that is.
:func:`hop_tasks` mines such tasks from any bank and plants nothing: it walks the trusted edges,
takes a query derived from ``a`` (its title, else its useful-for line), keeps the pair when ``a`` is
in the flat top-k and ``b`` is not, and picks as proof a rare token of ``b``'s content that no
other entry, no edge note and none of ``b``'s own displayed fields (title, summary, useful-for
line) contains. A pair without such a token is skipped.

>>> t = tasks_from_truth({"hop_tasks": [{"id": "hop-1", "query": "rotate the key", "a": "a1", "b": "b2",
...                                      "relation": "cites", "proof": "ZX-1-Q"}]})
>>> t[0].b, t[0].proof
('b2', 'ZX-1-Q')
>>> proof_candidates(pl.DataFrame({"id": ["b2", "c3"], "title": ["Clock drift", "Other"],
...     "summary": ["Hosts drift.", "x"], "content": ["Hosts drift. Tracked as ZX-4471-Q.", "drift"],
...     "useful_for": [None, None]}), notes=[]).rows()
[('b2', 'ZX-4471-Q')]
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import polars as pl

from kbtools.model import vocab
from kbtools.errors import KbError, ValidationError

__all__ = [
    "HopTask", "tasks_from_truth", "as_tasks", "hop_tasks", "proof_candidates", "read_queries", "queries_from_truth",
    "as_queries", "TOKEN_PATTERN", "mined_queries", "MINED_SOURCES",
]

#: Edge sources hop tasks and replay queries are mined from by default: the trusted ones an author,
#: a citation or a header declared, not the document structure ingest writes (``part_of`` between
#: sections of one document is not a hop anybody chose).
MINED_SOURCES = tuple(sorted(vocab.TRUSTED_SOURCES - {"structure"}))

#: What counts as a token for proof tokens: word characters joined by - . _ (``ZX-4471-Q``, ``v1.2``).
TOKEN_PATTERN = r"[A-Za-z0-9]+(?:[-._][A-Za-z0-9]+)*"
_DISPLAY_FIELDS = ("title", "summary", "useful_for")
_MIN_PROOF_CHARS = 5


@dataclass(frozen=True)
class HopTask:
    """One hop-lab task: ``query`` matches ``a``; the proof token lives only in ``b``'s content.

    ``leaky`` is the sidecar's own mark (``None`` when mined or unmarked); the leak check does not
    trust it, it checks.

    >>> HopTask("t1", "q", "a1", "b2", "cites", "ZX-1-Q").to_dict()["relation"]
    'cites'
    """

    id: str
    query: str
    a: str
    b: str
    relation: str
    proof: str
    leaky: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The task as a JSON-ready dict."""
        return asdict(self)


def tasks_from_truth(truth: dict) -> list[HopTask]:
    """The ``hop_tasks`` of a ground-truth sidecar (as read by ``kb.demo.read_truth``), checked.

    >>> tasks_from_truth({"queries": []})
    []
    """
    rows = truth.get("hop_tasks") or []
    return [_task(row, i) for i, row in enumerate(rows)]


def _task(row: Any, i: int) -> HopTask:
    if isinstance(row, HopTask):
        return row
    if not isinstance(row, dict):
        raise ValidationError("hop_tasks", type(row).__name__, "a hop task is a dict", row=i)
    for key in ("id", "query", "a", "b", "proof"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise ValidationError(key, row.get(key), "a hop task needs a non-empty string here", row=i)
    return HopTask(row["id"], row["query"], row["a"], row["b"], str(row.get("relation") or ""), row["proof"],
                   row.get("leaky"))


def as_tasks(tasks: Iterable[HopTask | dict]) -> list[HopTask]:
    """Tasks given as :class:`HopTask` or dicts, checked, ids unique.

    >>> as_tasks([{"id": "t", "query": "q", "a": "a1", "b": "b2", "proof": "ZX-1-Q"}])[0].relation
    ''
    """
    out = [_task(t, i) for i, t in enumerate(tasks)]
    seen: set[str] = set()
    for i, t in enumerate(out):
        if t.id in seen:
            raise ValidationError("id", t.id, "hop task ids must be unique", row=i)
        seen.add(t.id)
    return out


def proof_candidates(entries: pl.DataFrame, *, notes: Iterable[str | None]) -> pl.DataFrame:
    """One proof token per entry that has one: ``(id, proof)``.

    A proof token is a token of the entry's ``content`` (at least five characters) that occurs in
    no other entry's text, in none of the entry's own displayed fields, in no note, and is no
    entry's id (a cited id shows whenever the cited entry does). Among several, tokens holding both letters and digits
    come first, then longer ones, then alphabetical order.
    """
    text_cols = [c for c in ("title", "summary", "content", "useful_for") if c in entries.columns]
    if entries.height == 0 or "content" not in text_cols:
        return pl.DataFrame(schema={"id": pl.String, "proof": pl.String})
    tokens = text_tokens(entries, text_cols)
    note_tokens = set(_token_list(" \n ".join(n for n in notes if n)))
    everywhere = tokens.group_by("token").agg(pl.col("id").n_unique().alias("holders"))
    shown = tokens.filter(pl.col("field") != "content").select("id", "token").unique()
    return (
        tokens.filter(pl.col("field") == "content")
        .join(everywhere.filter(pl.col("holders") == 1), on="token", how="semi")
        .join(shown, on=["id", "token"], how="anti")
        .filter(~pl.col("token").is_in(sorted(note_tokens)) & (pl.col("surface").str.len_chars() >= _MIN_PROOF_CHARS)
                & ~pl.col("token").is_in(entries["id"].cast(pl.String).str.to_lowercase().implode()))
        .with_columns(
            (pl.col("surface").str.contains(r"[0-9]") & pl.col("surface").str.contains(r"[A-Za-z]")).alias("mixed"),
            pl.col("surface").str.len_chars().alias("length"),
        )
        .sort(["id", "mixed", "length", "surface"], descending=[False, True, True, False])
        .group_by("id", maintain_order=True)
        .agg(pl.col("surface").first().alias("proof"))
    )


def _token_list(text: str) -> list[str]:
    import re

    return [t.lower() for t in re.findall(TOKEN_PATTERN, text)]


def text_tokens(entries: pl.DataFrame, text_cols: list[str]) -> pl.DataFrame:
    """(id, field, surface, token) rows for every token of every text column in ``text_cols`` (and of
    ``steps`` when present), token being the lower-case surface: what proofs and leaks are counted in."""
    parts = [
        entries.select(pl.col("id"), pl.lit(col).alias("field"),
                       pl.col(col).cast(pl.String).fill_null("").str.extract_all(TOKEN_PATTERN).alias("surface"))
        for col in text_cols
    ]
    if "steps" in entries.columns:
        parts.append(entries.select(pl.col("id"), pl.lit("steps").alias("field"),
                                    pl.col("steps").list.join(" ").fill_null("").str.extract_all(TOKEN_PATTERN)
                                    .alias("surface")))
    return (
        pl.concat(parts).explode("surface").drop_nulls("surface")
        .with_columns(pl.col("surface").str.to_lowercase().alias("token"))
    )


def hop_tasks(bank, *, n: int = 30, seed: int = 0, k: int = 8, sources: Iterable[str] | None = None,
              max_tries: int | None = None) -> list[HopTask]:
    """Mine up to ``n`` hop tasks from ``bank`` (nothing is planted); deterministic for a ``seed``.

    Pairs ``(a, b)`` joined by one trusted edge (``sources``, default :data:`MINED_SOURCES`) are tried in a seeded
    order, each ``b`` and each ``a`` at most once; the query is ``a``'s title (else its useful-for
    line); a pair is kept when ``a`` is in the flat top-``k`` and ``b`` is not, and ``b`` has a
    proof token (:func:`proof_candidates`). At most ``max_tries`` queries are run (default ``50 * n``).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> [t.id for t in kb.hop_tasks(bank, n=3, seed=1)]  # doctest: +SKIP
    ['mined-001', 'mined-002', 'mined-003']
    """
    from kbtools.retrieval.search import ranked_pool

    if not isinstance(n, int) or n < 0:
        raise ValidationError("n", n, "the number of tasks is an integer >= 0")
    if not isinstance(k, int) or k < 1:
        raise ValidationError("k", k, "k is a positive integer")
    pairs = _candidate_pairs(bank.entries, bank.edges, sources)
    if n == 0 or pairs.height == 0:
        return []
    order = np.random.default_rng(seed).permutation(pairs.height)
    tries = 50 * n if max_tries is None else max_tries
    tasks: list[HopTask] = []
    used_a: set[str] = set()
    used_b: set[str] = set()
    for row in order.tolist():
        if len(tasks) == n or tries <= 0:
            break
        a, b, relation, query, proof = pairs.row(row)
        if a in used_a or b in used_b or a in used_b or b in used_a:
            continue
        tries -= 1
        top = ranked_pool(bank, query, pool=k)["id"].to_list()
        if a in top and b not in top:
            used_a.add(a)
            used_b.add(b)
            tasks.append(HopTask(f"mined-{len(tasks) + 1:03d}", query, a, b, relation, proof, None))
    return tasks


def _candidate_pairs(entries: pl.DataFrame, edges: pl.DataFrame, sources) -> pl.DataFrame:
    """(a, b, relation, query, proof) for both orientations of every trusted edge between active
    entries where ``b`` has a proof token and ``a`` a query; sorted for a stable seeded order."""
    allowed = sorted(MINED_SOURCES if sources is None else set(sources))
    active = entries.filter(pl.col("status") == "active") if "status" in entries.columns else entries
    proofs = proof_candidates(active, notes=edges["note"].to_list() if "note" in edges.columns else [])
    query = pl.coalesce(
        pl.col("title").str.strip_chars().replace("", None), pl.col("useful_for").str.strip_chars().replace("", None)
    ).alias("query")
    queries = active.select("id", query).drop_nulls("query")
    trusted = edges.filter(pl.col("source").is_in(allowed) & (pl.col("src") != pl.col("dst"))).select(
        "src", "dst", pl.col("type").replace(vocab.TYPE_ALIASES).alias("relation"))
    both = pl.concat([
        trusted.select(pl.col("src").alias("a"), pl.col("dst").alias("b"), "relation"),
        trusted.select(pl.col("dst").alias("a"), pl.col("src").alias("b"), "relation"),
    ]).unique(subset=["a", "b"], keep="first", maintain_order=True)
    return (
        both.join(queries.rename({"id": "a"}), on="a", how="inner")
        .join(proofs.rename({"id": "b"}), on="b", how="inner")
        .sort("a", "b", "relation")
        .select("a", "b", "relation", "query", "proof")
    )


def mined_queries(bank, *, n: int = 60, seed: int = 0, k: int = 8, types: Iterable[str] = ("cites", "supersedes"),
                  sources: Iterable[str] | None = None, max_tries: int | None = None) -> list[dict]:
    """A labelled query log mined from the bank's own citations and supersessions, for the replay.

    For an edge ``a <type> b`` (``types``; trusted ``sources``, default :data:`MINED_SOURCES`),
    the query is ``a``'s title; it is kept when ``a`` is in the flat top-``k`` and ``b`` is not,
    and ``relevant`` is ``[a, b]`` (the cited or superseded entry is what the reader of ``a`` needs
    next). Each ``a`` and ``b`` is used once; seeded order; at most ``max_tries`` queries run
    (default ``20 * n``).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.mined_queries(kb.open_bank("banks/peps"), n=2)[0]["relevant"]  # doctest: +SKIP
    ['3c0f1a2b', '9d8e7f60']
    """
    from kbtools.retrieval.search import ranked_pool

    allowed = sorted(MINED_SOURCES if sources is None else set(sources))
    edges = bank.edges.filter(pl.col("source").is_in(allowed) & pl.col("type").is_in(list(types))
                              & (pl.col("src") != pl.col("dst")))
    titles = bank.entries.select("id", pl.col("title").str.strip_chars().alias("query")).drop_nulls("query")
    pairs = (edges.select(pl.col("src").alias("a"), pl.col("dst").alias("b"), "type")
             .join(titles.rename({"id": "a"}), on="a", how="inner").sort("a", "b", "type"))
    if n <= 0 or pairs.height == 0:
        return []
    order = np.random.default_rng(seed).permutation(pairs.height)
    tries = 20 * n if max_tries is None else max_tries
    used: set[str] = set()
    out: list[dict] = []
    for row in order.tolist():
        if len(out) == n or tries <= 0:
            break
        a, b, type_, query = pairs.row(row)
        if a in used or b in used:
            continue
        tries -= 1
        top = ranked_pool(bank, query, pool=k)["id"].to_list()
        if a in top and b not in top:
            used.update((a, b))
            out.append({"id": f"mined-{len(out) + 1:03d}", "query": query, "relevant": [a, b], "relation": type_})
    return out


def read_queries(path: str | os.PathLike) -> list[dict]:
    """A query log from a file: one query per line, or JSON lines with ``query`` (and optionally
    ``id`` and ``relevant`` ids), or a ground-truth sidecar (a JSON object with ``queries``).

    Blank lines and lines starting with ``#`` are skipped; ids default to ``q001``, ``q002``, ...
    """
    p = Path(path)
    if not p.exists():
        raise KbError(f"{p}: no such query file")
    text = p.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("{") and '"queries"' in stripped[:200_000]:
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and "queries" in whole:
            return queries_from_truth(whole)
    rows: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValidationError("query", line, f"line {number} of {p} is not valid JSON ({err.msg})") from None
        else:
            rows.append(line)
    return as_queries(rows)


def queries_from_truth(truth: dict) -> list[dict]:
    """The query log of a ground-truth sidecar: ``[{"id", "query", "relevant"}]``.

    >>> queries_from_truth({"queries": [{"id": "q1", "query": "x", "relevant": ["a"]}]})
    [{'id': 'q1', 'query': 'x', 'relevant': ['a']}]
    """
    return as_queries(truth.get("queries") or [])


def as_queries(rows: Sequence[str | dict]) -> list[dict]:
    """Queries given as strings or dicts, normalised to ``{"id", "query", "relevant"}``
    (``relevant`` is ``None`` when unlabelled).

    >>> as_queries(["how do I log in"])
    [{'id': 'q001', 'query': 'how do I log in', 'relevant': None}]
    """
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, str):
            row = {"query": row}
        if not isinstance(row, dict) or not isinstance(row.get("query"), str) or not row["query"].strip():
            raise ValidationError("query", row, "a query is a non-empty string or a dict with one", row=i)
        relevant = row.get("relevant")
        if relevant is not None and not (isinstance(relevant, list) and all(isinstance(x, str) for x in relevant)):
            raise ValidationError("relevant", relevant, "relevant ids are a list of strings", row=i)
        out.append({"id": str(row.get("id") or f"q{i + 1:03d}"), "query": row["query"].strip(),
                    "relevant": list(relevant) if relevant is not None else None})
    return out
