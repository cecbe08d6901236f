"""The leak check: a hop task only measures the hop when its proof token is out of sight.

The seed's first hop lab reported a triumph that was a leak: the edge notes restated B's fact, so
agents answered without fetching B. :func:`check_leaks` runs before any agent does and lists, per
task, every place the proof token shows without fetching ``b``: an edge note (any note in the bank),
entry ``a`` (any text field), ``b``'s own displayed fields (title, summary, useful-for line, which a
pointer may show), and (given by the hop lab) each rendered answer text. Leaking tasks are reported
by id and excluded.

:func:`leaky_notes` is the bank-side view: notes that restate an end's fact, either by sharing one
of its rare tokens (a token of that entry's content found in no other entry) or by covering a large
share of its distinctive terms. Each is a data problem for the bank owner, whatever the lab does.
A note that names an end's own id or key ("the fixes in 6c915c3f") cites it; that is not flagged.
Citation backfill stores the citing sentence as the note (seed 000): a sentence of the citing entry
by construction, where it names the other, so only its target is checked.

>>> contains_token("Tracked as ZX-4471-Q; quote it.", "zx-4471-q")
True
>>> contains_token("AZX-4471-Q", "ZX-4471-Q")
False
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping

import polars as pl

from kbtools.evaluate.agents import terms
from kbtools.evaluate.tasks import HopTask, as_tasks

__all__ = ["LEAK_SCHEMA", "LEAKY_NOTE_SCHEMA", "QUOTES_ITS_SOURCE", "contains_token", "check_leaks", "answer_leaks",
           "leaky_notes"]

#: Columns of :func:`check_leaks`: which task leaks, where, through which entry or edge, and how.
LEAK_SCHEMA = {"task": pl.String, "where": pl.String, "entry": pl.String, "detail": pl.String}
#: Columns of :func:`leaky_notes`.
LEAKY_NOTE_SCHEMA = {"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String,
                     "note": pl.String, "restates": pl.String, "reason": pl.String, "share": pl.Float64}
_TEXT_FIELDS = ("title", "summary", "content", "useful_for")
#: Edge sources whose note is a sentence of the edge's source entry by construction (the citing
#: sentence that citation backfill stores): restating that entry is what the note is.
QUOTES_ITS_SOURCE = frozenset({"citation_backfill"})
_SHOWN_FIELDS = ("title", "summary", "useful_for")


def contains_token(text: str | None, token: str) -> bool:
    """Whether ``token`` occurs in ``text`` as a whole token (case-insensitive).

    >>> contains_token("see ZX-1-Q.", "ZX-1-Q"), contains_token(None, "x")
    (True, False)
    """
    if not text or not token:
        return False
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(token)}(?![A-Za-z0-9])", text, flags=re.IGNORECASE) is not None


def check_leaks(tasks: Iterable[HopTask | dict], entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Every place a task's proof token shows without fetching ``b`` (columns :data:`LEAK_SCHEMA`).

    Also reported: a task whose ``a`` or ``b`` is not an entry, and one whose proof token is not in
    ``b``'s content (no fetch could prove it).

    >>> entries = pl.DataFrame({"id": ["a1", "b2"], "title": ["Recipe", "Quirk"], "summary": ["How.", "Why."],
    ...                         "content": ["Steps.", "Tracked as ZX-1-Q."], "useful_for": [None, None]})
    >>> edges = pl.DataFrame({"src": ["a1"], "dst": ["b2"], "type": ["cites"], "note": ["Reference ZX-1-Q."]})
    >>> check_leaks([HopTask("t1", "q", "a1", "b2", "cites", "ZX-1-Q")], entries, edges).rows()
    [('t1', 'note', 'a1 cites b2', 'Reference ZX-1-Q.')]
    """
    found: list[tuple[str, str, str, str]] = []
    rows = {r["id"]: r for r in entries.select([c for c in ("id", *_TEXT_FIELDS, "steps") if c in entries.columns])
            .iter_rows(named=True)}
    notes = edges.filter(pl.col("note").is_not_null()).select("src", "dst", "type", "note") if "note" in edges.columns \
        else pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String, "note": pl.String})
    for task in as_tasks(tasks):
        a, b = rows.get(task.a), rows.get(task.b)
        if a is None or b is None:
            missing = task.a if a is None else task.b
            found.append((task.id, "missing entry", missing, f"{missing} is not an entry of this bank"))
            continue
        if not contains_token(b.get("content"), task.proof):
            found.append((task.id, "no proof in b", task.b, f"{task.proof} is not in {task.b}'s content"))
        for field, text in _fields(a):
            if contains_token(text, task.proof):
                found.append((task.id, f"entry a ({field})", task.a, _excerpt(text, task.proof)))
        for field, text in _fields(b, _SHOWN_FIELDS):
            if contains_token(text, task.proof):
                found.append((task.id, f"entry b ({field})", task.b, _excerpt(text, task.proof)))
        pattern = rf"(?i)(?:^|[^A-Za-z0-9]){re.escape(task.proof)}(?:[^A-Za-z0-9]|$)"
        hits = notes.filter(pl.col("note").str.contains(pattern))
        for src, dst, type_, note in hits.iter_rows():
            found.append((task.id, "note", f"{src} {type_} {dst}", note))
    return pl.DataFrame(found, schema=LEAK_SCHEMA, orient="row")


def answer_leaks(task: HopTask, texts: Mapping[str, str]) -> pl.DataFrame:
    """Arms whose rendered answer text shows the task's proof token (columns :data:`LEAK_SCHEMA`).

    >>> answer_leaks(HopTask("t1", "q", "a", "b", "cites", "ZX-1-Q"), {"flat": "x", "snippet": "ZX-1-Q"}).rows()
    [('t1', 'answer (snippet)', 'b', 'ZX-1-Q')]
    """
    arms = [arm for arm, text in texts.items() if contains_token(text, task.proof)]
    rows = [(task.id, f"answer ({', '.join(arms)})", task.b, _excerpt(texts[arms[0]], task.proof))] if arms else []
    return pl.DataFrame(rows, schema=LEAK_SCHEMA, orient="row")


def _fields(row: dict, names=_TEXT_FIELDS):
    for name in names:
        if row.get(name):
            yield name, row[name]
    if names is _TEXT_FIELDS and row.get("steps"):
        yield "steps", "\n".join(row["steps"])


def _excerpt(text: str, token: str, width: int = 60) -> str:
    at = text.lower().find(token.lower())
    if at < 0:
        return text[: 2 * width]
    start, end = max(0, at - width), min(len(text), at + len(token) + width)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def leaky_notes(entries, edges: pl.DataFrame | None = None, *, share: float = 0.6, top: int = 8) -> pl.DataFrame:
    """Edge notes that restate what an end entry says (columns :data:`LEAKY_NOTE_SCHEMA`).

    A note restates entry X (either end of its edge) when it holds one of X's rare tokens (a token
    of X's content with letters and digits, at least five characters, found in no other entry and
    not in X's own title: a code, a version, a proof token; an id, key or commit hash that names an
    entry is a citation, not a fact), or when it covers at least ``share`` of X's distinctive terms:
    X's ``top`` rarest stemmed content words that the other end does not use (at least two of them).
    A note of :data:`QUOTES_ITS_SOURCE` (the citing sentence) is checked against its target only.
    ``leaky_notes(bank)`` reads the bank's entries and edges.

    >>> entries = pl.DataFrame({"id": ["a1", "b2"], "title": ["Recipe", "Quirk"], "summary": ["How.", "Why."],
    ...                         "content": ["Steps.", "Tracked as ZX-1-Q."], "useful_for": [None, None]})
    >>> edges = pl.DataFrame({"src": ["a1"], "dst": ["b2"], "type": ["cites"], "source": ["author"],
    ...                       "note": ["Reference ZX-1-Q."]})
    >>> leaky_notes(entries, edges).select("restates", "reason").rows()
    [('b2', 'rare token ZX-1-Q')]
    """
    if edges is None:
        entries, edges = entries.entries, entries.edges
    if "note" not in edges.columns or entries.height == 0:
        return pl.DataFrame(schema=LEAKY_NOTE_SCHEMA)
    noted = edges.filter(pl.col("note").str.strip_chars().str.len_chars().fill_null(0) > 0)
    if noted.height == 0:
        return pl.DataFrame(schema=LEAKY_NOTE_SCHEMA)
    rare = dict(_rare_tokens(entries).iter_rows())
    keys = _keys(entries)
    refs = _references(entries["id"].to_list(), keys)
    said = _entry_terms(entries)  # each entry's terms read once: an entry is the end of many notes
    df = _document_frequency(said.values())
    total = max(entries.height, 1)
    out = []
    source_col = pl.col("source") if "source" in noted.columns else pl.lit(None, pl.String).alias("source")
    for src, dst, type_, source, note in noted.select("src", "dst", "type", source_col, "note").iter_rows():
        own = {src, dst, src[:7], dst[:7], *keys.get(src, ()), *keys.get(dst, ())}
        quoted = source in QUOTES_ITS_SOURCE
        flagged = _restated_token(note, (dst,) if quoted else (dst, src), rare, own, refs) or _restated_terms(
            terms(note), ((dst, src),) if quoted else ((dst, src), (src, dst)), said, df, total, share, top)
        if flagged:
            out.append((src, dst, type_, source, note, *flagged))
    return pl.DataFrame(out, schema=LEAKY_NOTE_SCHEMA, orient="row")


def _keys(entries: pl.DataFrame) -> dict[str, tuple[str, ...]]:
    """Each entry's own reference key (metadata ``key``, as ingest records it), when it has one."""
    if "metadata" not in entries.columns:
        return {}
    keyed = entries.select("id", pl.col("metadata").str.json_path_match("$.key").alias("key")).drop_nulls("key")
    return {i: (k, k.lower()) for i, k in keyed.iter_rows()}


def _references(ids: list[str], keys: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """What names an entry of the bank: each id, a hash-like id's 7-character prefix, each key
    (lower case)."""
    refs = {i.lower() for i in ids} | {k.lower() for ks in keys.values() for k in ks}
    refs |= {i[:7].lower() for i in ids if _HEX_ID.fullmatch(i.lower())}
    return frozenset(refs)


_HEX_ID = re.compile(r"[0-9a-f]{7,64}")


def _cites(token: str, refs: frozenset[str]) -> bool:
    """``token`` names an entry of the bank (its id, key, or a commit hash written longer or shorter
    than the id): a reference, not a fact."""
    t = token.lower()
    return t in refs or (_HEX_ID.fullmatch(t) is not None and t[:7] in refs)


def _restated_token(note: str, ends, rare, own=frozenset(), refs=frozenset()) -> tuple | None:
    """The first rare token of an end that the note holds; an end's own id (or its 7-character
    prefix) or key, and any token naming an entry of the bank (``refs``), is a citation, not a
    restatement, and does not count."""
    for end in ends:
        token = next((t for t in rare.get(end, ()) if t.lower() not in own and t not in own
                      and not _cites(t, refs) and contains_token(note, t)), None)
        if token is not None:
            return (end, f"rare token {token}", 1.0)
    return None


def _restated_terms(note_terms, pairs, said, df, total, share, top) -> tuple | None:
    """The first end whose distinctive terms (its ``top`` rarest terms the other end lacks, at
    least two) the note covers to ``share`` or more (``said``: each entry's terms)."""
    for end, other in pairs:
        mine, theirs = said.get(end, frozenset()), said.get(other, frozenset())
        distinctive = sorted(mine - theirs, key=lambda t: (df.get(t, 0), t))[:top]
        distinctive = [t for t in distinctive if math.log(total / max(df.get(t, 1), 1)) > 0]
        if len(distinctive) >= 2:
            covered = sum(t in note_terms for t in distinctive) / len(distinctive)
            if covered >= share:
                return (end, f"covers {covered:.0%} of its distinctive terms", covered)
    return None


def _rare_tokens(entries: pl.DataFrame) -> pl.DataFrame:
    """(id, list of rare tokens): tokens of an entry's content with letters and digits (five
    characters or more) that no other entry holds and its own title does not."""
    from kbtools.evaluate.tasks import text_tokens

    cols = [c for c in _TEXT_FIELDS if c in entries.columns]
    if "content" not in cols:
        return pl.DataFrame(schema={"id": pl.String, "tokens": pl.List(pl.String)})
    tokens = text_tokens(entries, cols)
    holders = tokens.group_by("token").agg(pl.col("id").n_unique().alias("holders"))
    # a token of the entry's own title is its name ("DEP0111: process.binding"): naming it is how
    titled = tokens.filter(pl.col("field") == "title").select("id", "token").unique()
    return (
        tokens.filter(pl.col("field") == "content")
        .join(holders.filter(pl.col("holders") == 1), on="token", how="semi")
        .join(titled, on=["id", "token"], how="anti")
        .filter((pl.col("surface").str.len_chars() >= 5) & pl.col("surface").str.contains("[0-9]")
                & pl.col("surface").str.contains("[A-Za-z]"))
        .group_by("id", maintain_order=True).agg(pl.col("surface").unique(maintain_order=True).alias("tokens"))
    )


def _entry_text(entries: pl.DataFrame) -> pl.DataFrame:
    cols = [pl.col(c).cast(pl.String).fill_null("") for c in _TEXT_FIELDS if c in entries.columns]
    return entries.select("id", pl.concat_str(cols, separator="\n").alias("text"))


def _entry_terms(entries: pl.DataFrame) -> dict[str, frozenset[str]]:
    """Each entry's stemmed content words, by id."""
    frame = _entry_text(entries)
    return dict(zip(frame["id"].to_list(), map(terms, frame["text"].to_list())))


def _document_frequency(per_entry) -> dict[str, int]:
    """How many entries use each stemmed content word (``per_entry``: each entry's words)."""
    df: dict[str, int] = {}
    for words in per_entry:
        for w in words:
            df[w] = df.get(w, 0) + 1
    return df
