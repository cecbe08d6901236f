"""Backfill: citations in prose and dedup metadata become typed, trusted edges (seed 000: "The
existing citations and dedup metadata were backfilled as edges with the citing sentence stored as
the note").

- An entry that cites another by its 8-character id, or by any unique prefix of at least 7 hex
  characters, gets ``cites`` edges (``source = citation_backfill``) whose note is the citing
  sentence. Self-citations, ids that resolve to nothing and prefixes that resolve to two entries are
  skipped (and counted).
- Dedup metadata keys become typed edges (``source = metadata_backfill``): ``split_from`` ->
  split_from, ``replaces`` -> supersedes, ``supersedes`` -> supersedes, ``recovered_from`` ->
  derived_from; the value is an id or a list of ids.
- An edge already in the bank (same src, dst and type, any source) is not written again, so a
  second run writes nothing.

>>> e = pl.DataFrame({"id": ["a1b2c3d4", "b2c3d4e5"], "content": ["See b2c3d4e for the pattern. Done.", "x"],
...                   "metadata": ['{"replaces": "b2c3d4e5"}', "{}"]})
>>> plan_backfill(e, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})).add.select("src", "dst", "type", "note").rows()
[('a1b2c3d4', 'b2c3d4e5', 'cites', 'See b2c3d4e for the pattern.'), ('a1b2c3d4', 'b2c3d4e5', 'supersedes', None)]
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

import polars as pl

from kbtools.ops.sections import sentences
from kbtools.model.schema import SCHEMAS
from kbtools.model.vocab import METADATA_LINK_TYPES

__all__ = ["BackfillPlan", "plan_backfill", "citing_sentence", "plan_pattern_citations", "document_keys", "normalize_key",
           "prefix_resolver", "NOTE_LIMIT", "MARKDOWN_LINK", "MARKDOWN_REF_LINK", "RST_DOC_LINK", "RST_REF_LINK",
           "path_key",
           "pattern_resolver",
           "entry_documents", "entry_labels", "label_key", "link_definitions"]

_TOKEN = r"\b[0-9a-f]{7,8}\b"


@dataclass(frozen=True)
class BackfillPlan:
    """Edges to add and a report of what was found and skipped."""

    add: pl.DataFrame
    report: dict = field(default_factory=dict)


#: The longest note backfill writes, in characters (a longer citing sentence is trimmed around the reference).
NOTE_LIMIT = 300


def citing_sentence(text: str, token: str, *, limit: int = NOTE_LIMIT) -> str:
    """The whole sentence of ``text`` that holds ``token``: hard-wrapped lines joined, cut at
    sentence boundaries (:func:`~kbtools.ops.sections.sentences`); a sentence over ``limit``
    characters is trimmed at word boundaries around the reference, which is always kept.

    >>> citing_sentence("First. The cookie jar in a1b2c3d4 is the pattern! Last.", "a1b2c3d4")
    'The cookie jar in a1b2c3d4 is the pattern!'
    >>> citing_sentence("Intro.\\nE.g., the fixes in 6c915c3f (fetch: do not ask for\\ntags) matter.", "6c915c3f")
    'E.g., the fixes in 6c915c3f (fetch: do not ask for tags) matter.'
    """
    for sentence in sentences(text):
        if token in sentence:
            return _around(sentence, token, limit)
    flat = " ".join(text.split())
    return _around(flat, token, limit) if token in flat else flat[:limit]


def _around(sentence: str, token: str, limit: int) -> str:
    """``sentence`` if it fits in ``limit``, else a window of whole words around ``token`` marked
    with an ellipsis where cut."""
    if len(sentence) <= limit:
        return sentence
    at = sentence.index(token)
    budget = max(limit - len(token) - 2, 0)
    start = max(0, at - budget // 2)
    end = min(len(sentence), start + len(token) + budget)
    start = max(0, end - len(token) - budget)
    if start > 0:
        nxt = sentence.find(" ", start)
        start = nxt + 1 if 0 <= nxt < at else start
    if end < len(sentence):
        prev = sentence.rfind(" ", at + len(token), end)
        end = prev if prev > 0 else end
    return ("…" if start > 0 else "") + sentence[start:end].strip() + ("…" if end < len(sentence) else "")


def _citations(entries: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    ids = entries.select("id")
    tokens = (
        entries.select("id", "content", pl.col("content").str.extract_all(_TOKEN).alias("token"))
        .explode("token")
        .drop_nulls("token")
        .unique(subset=["id", "token"], keep="first", maintain_order=True)
    )
    full = tokens.filter(pl.col("token").str.len_chars() == 8).join(ids, left_on="token", right_on="id", how="semi")
    full = full.with_columns(pl.col("token").alias("dst"))
    prefixes = ids.with_columns(pl.col("id").str.slice(0, 7).alias("prefix"))
    unique_prefix = prefixes.group_by("prefix").agg(pl.col("id").first().alias("dst"), pl.len().alias("n"))
    short = tokens.filter(pl.col("token").str.len_chars() == 7).join(unique_prefix, left_on="token", right_on="prefix", how="left")
    ambiguous = short.filter(pl.col("n") > 1).height
    short = short.filter(pl.col("n") == 1).drop("n")
    found = pl.concat([full.select("id", "content", "token", "dst"), short.select("id", "content", "token", "dst")])
    self_cites = found.filter(pl.col("id") == pl.col("dst")).height
    found = found.filter(pl.col("id") != pl.col("dst")).unique(subset=["id", "dst"], keep="first", maintain_order=True)
    notes = [citing_sentence(c, t) for c, t in found.select("content", "token").iter_rows()]
    edges = found.select(pl.col("id").alias("src"), "dst", pl.lit("cites").alias("type"),
                         pl.lit("citation_backfill").alias("source")).with_columns(pl.Series("note", notes, dtype=pl.String))
    unresolved = tokens.height - full.height - short.height - ambiguous - 0
    return edges, {"citations_found": found.height, "self_citations": self_cites, "ambiguous_prefixes": ambiguous,
                   "unresolved_tokens": max(unresolved, 0)}


def _metadata_links(entries: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    rows = []
    bad_json = 0
    for eid, meta in entries.select("id", "metadata").iter_rows():
        if not meta or meta == "{}":
            continue
        try:
            data = json.loads(meta)
        except ValueError:
            bad_json += 1
            continue
        if not isinstance(data, dict):
            continue
        for key, type_ in METADATA_LINK_TYPES.items():
            values = data.get(key)
            if values is None:
                continue
            for v in values if isinstance(values, list) else [values]:
                if isinstance(v, str):
                    rows.append((eid, v.strip().lower(), type_, key))
    frame = pl.DataFrame(rows, schema={"src": pl.String, "dst": pl.String, "type": pl.String, "key": pl.String}, orient="row")
    known = frame.join(entries.select(pl.col("id").alias("dst")), on="dst", how="semi").filter(pl.col("src") != pl.col("dst"))
    evidence = [json.dumps({"metadata_key": k}) for k in known["key"].to_list()]
    edges = known.select("src", "dst", "type", pl.lit("metadata_backfill").alias("source"),
                         pl.lit(None, dtype=pl.String).alias("note")).with_columns(pl.Series("evidence", evidence, dtype=pl.String))
    return edges, {"metadata_links_found": frame.height, "metadata_unknown_ids": frame.height - known.height,
                   "metadata_bad_json": bad_json}


def normalize_key(value) -> str:
    """A reference key as compared: stripped, lower case, leading zeros dropped from a number.

    >>> normalize_key(" 0484 "), normalize_key("RFC-822")
    ('484', 'rfc-822')
    """
    text = str(value).strip().lower()
    return str(int(text)) if text.isdigit() else text


def document_keys(entries: pl.DataFrame) -> dict[str, str]:
    """Reference key -> the id of its document's first entry, from the metadata ingest writes
    (``"key"`` on every entry of a document, ``"head": true`` on its first)."""
    if entries.height == 0 or "metadata" not in entries.columns:
        return {}
    meta = entries.select("id", pl.col("metadata").str.json_path_match("$.key").alias("key"),
                          pl.col("metadata").str.json_path_match("$.head").alias("head"))
    heads = meta.filter((pl.col("head") == "true") & pl.col("key").is_not_null())
    return {normalize_key(k): i for i, k in heads.select("id", "key").iter_rows()}


#: A Markdown link to another file of the corpus (``[text](other.md#part)``, or from the corpus
#: root, ``[text](/guides/install)``, as a docs site links its pages): group 1 the path (no scheme,
#: no fragment); ingest records it with ``"resolve": "path"`` for a folder of Markdown.
MARKDOWN_LINK = r"(?<!!)\[[^\]\n]*\]\(\s*<?(?![a-zA-Z][a-zA-Z0-9+.\-]*:|#|//)([^)\s>#?]+)[^)\n]*\)"
#: A reStructuredText reference to another document of a Sphinx tree (``:doc:`install``` or
#: ``:doc:`the guide </guides/install>```): group 1 the path, from the corpus root when it starts
#: with ``/``; recorded with ``"resolve": "path"`` for a folder of reST.
RST_DOC_LINK = r":doc:`(?:[^`<]*<)?([^`<>]+?)>?`"
#: A Markdown reference link (``[text][label]``, or ``[text][]`` where the text is the label): the
#: file a ``[label]: other.md#part`` line of the same document names; recorded with ``"resolve":
#: "reference"`` for a folder of Markdown (a reference to a web page or to a place of the same
#: document is no link between the files).
MARKDOWN_REF_LINK = r"(?<![!\]])\[([^\]\n]+)\]\[([^\]\n]*)\]"
_LINK_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:[ \t]*<?([^\s>]+)>?", re.M)
#: A reStructuredText cross-reference to a labelled place of a Sphinx tree (``:ref:`install``` or
#: ``:ref:`how to install <install>```): group 1 the label that a ``.. _install:`` line defines
#: (ingest keeps each entry's labels in its metadata); recorded with ``"resolve": "label"`` for a
#: folder of reST.
RST_REF_LINK = r":ref:`(?:[^`<]*<)?([^`<>]+?)>?`"
_DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".text")


def path_key(citing_doc: str, target: str) -> str | None:
    """The key a relative link ``target`` from the document ``citing_doc`` (its path in the corpus)
    names: the linked file's path from the corpus root, without its suffix, as a folder ingest
    keys documents; None for a file that is no document (an image, a PDF, ...).

    >>> path_key("guides/deploy.md", "../ops/rollback.md"), path_key("deploy.md", "./faq"), path_key("a.md", "i.png")
    ('ops/rollback', 'faq', None)
    >>> path_key("guides/deploy.rst", "/ops/rollback")
    'ops/rollback'
    """
    target = unquote(target.strip())
    if target.startswith("/"):  # from the corpus root
        joined = posixpath.normpath(target.lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(citing_doc.replace("\\", "/")), target))
    for suffix in _DOCUMENT_SUFFIXES:
        if joined.lower().endswith(suffix):
            return joined[: -len(suffix)]
    return None if "." in posixpath.basename(joined).lstrip(".") else joined


def label_key(label: str) -> str:
    """A reST label as Sphinx compares it: lower case, runs of white space one space.

    >>> label_key("  Visual Studio\\n  Generators ")
    'visual studio generators'
    """
    return " ".join(str(label).lower().split())


def entry_labels(entries: pl.DataFrame) -> dict[str, str]:
    """Label (:func:`label_key`) -> the id of the entry that defines it, from the metadata
    ``labels`` ingest writes; a label two entries define is left out (never guessed).

    >>> e = pl.DataFrame({"id": ["a", "b", "c"], "metadata": ['{"labels": ["Install"]}', '{"labels": ["faq", "x"]}',
    ...                                                       '{"labels": ["x"]}']})
    >>> entry_labels(e)
    {'install': 'a', 'faq': 'b'}
    """
    if entries.height == 0 or "metadata" not in entries.columns:
        return {}
    found: dict[str, str | None] = {}
    listed = entries.select("id", pl.col("metadata").str.json_path_match("$.labels")).drop_nulls()
    for eid, text in listed.iter_rows():
        try:
            labels = json.loads(text)
        except ValueError:
            continue
        for label in labels if isinstance(labels, list) else ():
            key = label_key(label)
            found[key] = eid if key not in found or found[key] == eid else None
    return {k: v for k, v in found.items() if v is not None}


def link_definitions(entries: pl.DataFrame) -> dict[str, dict[str, str]]:
    """Each document's Markdown link definitions (``[label]: target`` lines in any of its entries),
    as document path -> label (:func:`label_key`) -> target.

    >>> e = pl.DataFrame({"id": ["a", "b"], "content": ["See [`fs.open()`][].", "[`fs.open()`]: fs.md#open"],
    ...                   "metadata": ['{"doc": "api/x.md"}', '{"doc": "api/x.md"}']})
    >>> link_definitions(e)
    {'api/x.md': {'`fs.open()`': 'fs.md#open'}}
    """
    docs = entry_documents(entries)
    out: dict[str, dict[str, str]] = {}
    if not docs:
        return out
    for eid, content in entries.select("id", "content").iter_rows():
        doc = docs.get(eid)
        if doc is None or not content or "]:" not in content:
            continue
        for m in _LINK_DEFINITION.finditer(content):
            out.setdefault(doc, {}).setdefault(label_key(m.group(1)), m.group(2))
    return out


def _reference_key(doc: str, m: re.Match, definitions: dict[str, dict[str, str]]) -> str | None:
    """The corpus key a reference link ``m`` in the document ``doc`` names through the document's
    definitions; None for a label it does not define, a web page or a place of the same document."""
    target = (definitions.get(doc) or {}).get(label_key(m.group(2) or m.group(1)))
    if not target or target.startswith("#") or re.match(r"[a-zA-Z][a-zA-Z0-9+.\-]*:|//", target):
        return None
    return path_key(doc, target.split("#", 1)[0].split("?", 1)[0])


def pattern_resolver(spec: dict, keys: dict[str, str], docs: dict[str, str] | None = None,
                     labels: dict[str, str] | None = None, definitions: dict | None = None):
    """``resolve(citing entry id, match) -> entry id or None`` for one citation pattern ``spec``:
    group 1 a key (normalised), a unique prefix of one (``"resolve": "prefix"``), a path
    relative to the citing entry's document (``"resolve": "path"``; ``docs``: entry id -> its
    document's path, the metadata ``doc`` ingest writes), or a reST label (``"resolve": "label"``;
    ``labels``: :func:`entry_labels`), or a Markdown reference link (``"resolve": "reference"``;
    ``definitions``: :func:`link_definitions`)."""
    how = spec.get("resolve")
    if how == "reference":
        docs, definitions = docs or {}, definitions or {}

        def by_reference(eid, m):
            key = _reference_key(docs.get(eid, ""), m, definitions)
            return None if key is None else keys.get(normalize_key(key))
        return by_reference
    if how == "label":
        labels = labels or {}
        return lambda eid, m: labels.get(label_key(m.group(1)))
    if how == "prefix":
        look = prefix_resolver(keys)
        return lambda eid, m: look(m.group(1))
    if how == "path":
        docs = docs or {}
        def by_path(eid, m):
            key = path_key(docs.get(eid, ""), m.group(1))
            return None if key is None else keys.get(normalize_key(key))
        return by_path
    return lambda eid, m: keys.get(normalize_key(m.group(1)))


def entry_documents(entries: pl.DataFrame) -> dict[str, str]:
    """Entry id -> the path of its document (metadata ``doc``), for the entries that have one."""
    if entries.height == 0 or "metadata" not in entries.columns:
        return {}
    return dict(entries.select("id", pl.col("metadata").str.json_path_match("$.doc")).drop_nulls().iter_rows())


def plan_pattern_citations(entries: pl.DataFrame, pattern: str, keys: dict[str, str], *,
                           limit: int = NOTE_LIMIT, prefix: bool = False,
                           resolve: str | None = None) -> tuple[pl.DataFrame, dict]:
    """``cites`` edges for references matched by ``pattern`` (its first group is the key),
    resolved through ``keys`` (key -> entry id, see :func:`document_keys`); the note is the whole
    citing sentence. A reference to the citing entry's own document is skipped; unresolved keys
    are counted and listed. ``prefix``: a reference names a key by any unique prefix of at least 7
    characters (an abbreviated commit hash; see :func:`prefix_resolver`); a prefix two keys share
    is counted as ambiguous and left out. ``resolve="path"``: group 1 is a path relative to the
    citing entry's document (a Markdown link, :data:`MARKDOWN_LINK`; see :func:`path_key`).

    >>> e = pl.DataFrame({"id": ["a1", "b2"], "content": ["As PEP 8\\nsays, indent. See PEP 999.", "x"],
    ...                   "metadata": ['{"key": "1"}', '{"key": "8", "head": true}']})
    >>> edges, rep = plan_pattern_citations(e, r"PEP\\s*(\\d+)", {"8": "b2"})
    >>> edges.select("src", "dst", "note").rows(), rep["unresolved_keys"]
    ([('a1', 'b2', 'As PEP 8 says, indent.')], ['999'])
    """
    try:
        rx = re.compile(pattern)
    except re.error as err:
        raise ValueError(f"citation pattern {pattern!r}: not a regular expression ({err})") from None
    if rx.groups < 1:
        raise ValueError(f"citation pattern {pattern!r}: needs one group, the key (e.g. 'PEP\\s*(\\d+)')")
    own = {}
    if "metadata" in entries.columns:
        own = dict(entries.select("id", pl.col("metadata").str.json_path_match("$.key")).drop_nulls().iter_rows())
    resolve = "prefix" if prefix else resolve
    norm = ((lambda v: str(v).strip().lower()) if resolve == "prefix" else label_key if resolve == "label"
            else normalize_key)
    docs = entry_documents(entries) if resolve in ("path", "reference") else {}
    definitions = link_definitions(entries) if resolve == "reference" else {}
    lookup = pattern_resolver({"resolve": resolve}, keys, labels=entry_labels(entries) if resolve == "label" else None)
    rows, unresolved, self_cites, found = [], {}, 0, 0
    for eid, content in entries.select("id", "content").iter_rows():
        seen: set[str] = set()
        for m in rx.finditer(content or ""):
            raw = (path_key(docs.get(eid, ""), m.group(1)) if resolve == "path"
                   else _reference_key(docs.get(eid, ""), m, definitions) if resolve == "reference" else m.group(1))
            if raw is None:  # a link to a file that is no document (or a reference to none)
                continue
            key = norm(raw)
            found += 1
            # a path's key is read once
            dst = keys.get(key) if resolve in ("path", "reference") else lookup(eid, m)
            if dst is None:
                unresolved[key] = unresolved.get(key, 0) + 1
                continue
            mine = norm(own[eid]) if eid in own and resolve != "label" else None  # (a label names a place)
            if dst == eid or (mine is not None and (mine.startswith(key) if resolve == "prefix" else mine == key)):
                self_cites += 1
                continue
            if dst in seen:
                continue
            seen.add(dst)
            rows.append((eid, dst, citing_sentence(content, m.group(0), limit=limit)))
    edges = pl.DataFrame(rows, schema={"src": pl.String, "dst": pl.String, "note": pl.String}, orient="row")
    edges = edges.select("src", "dst", pl.lit("cites").alias("type"), pl.lit("citation_backfill").alias("source"), "note")
    report = {"pattern": pattern, "references_found": found, "resolved": edges.height, "own_document": self_cites,
              "unresolved_keys": sorted(unresolved, key=lambda k: (-unresolved[k], k))}
    return edges, report


def prefix_resolver(keys: dict[str, str], *, shortest: int = 7):
    """A lookup ``prefix -> entry id`` over ``keys`` (key -> entry id): a prefix of at least
    ``shortest`` characters that starts exactly one key resolves to its entry; shorter, unknown
    or shared prefixes resolve to None.

    >>> look = prefix_resolver({"5c61e168698a72b8": "e1", "5c61e1aa00000000": "e2"})
    >>> look("5c61e16869"), look("5c61e1"), look("5c61e1a")
    ('e1', None, 'e2')
    """
    import bisect

    ordered = sorted((str(k).strip().lower(), v) for k, v in keys.items())
    names = [k for k, _ in ordered]

    def lookup(token: str):
        token = str(token).strip().lower()
        if len(token) < shortest:
            return None
        i = bisect.bisect_left(names, token)
        if i >= len(names) or not names[i].startswith(token):
            return None
        if i + 1 < len(names) and names[i + 1].startswith(token):
            return None
        return ordered[i][1]

    return lookup


def plan_backfill(entries: pl.DataFrame, edges: pl.DataFrame, *, patterns=()) -> BackfillPlan:
    """The ``cites`` and metadata edges the bank's prose and dedup metadata imply and it lacks.

    ``patterns``: citation patterns recorded by ingest (``{"pattern": regex}``, group 1 the key),
    resolved through the documents' keys (:func:`plan_pattern_citations`); ``"resolve": "prefix"``
    in a pattern resolves a key by its unique prefix (abbreviated commit hashes), ``"resolve": "path"``
    a path relative to the citing document (Markdown links between the files of a folder).
    """
    if entries.height == 0:
        return BackfillPlan(pl.DataFrame(schema=SCHEMAS["edges"]), {"edges_planned": 0})
    cites, rep1 = _citations(entries)
    meta, rep2 = _metadata_links(entries)
    parts = [cites]
    keys = document_keys(entries) if patterns else {}
    for spec in patterns:
        found, rep = plan_pattern_citations(entries, spec["pattern"], keys, resolve=spec.get("resolve"))
        parts.append(found)
        rep1 = {**rep1, "patterns": [*rep1.get("patterns", []), {**rep, "unresolved_keys": rep["unresolved_keys"][:20]}]}
    cites = pl.concat(parts, how="diagonal_relaxed")
    add = pl.concat([cites.with_columns(pl.lit("{}").alias("evidence")), meta], how="diagonal_relaxed")
    add = add.unique(subset=["src", "dst", "type"], keep="first", maintain_order=True)
    existing = edges.select("src", "dst", "type") if edges.height else pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})
    already = add.join(existing, on=["src", "dst", "type"], how="semi").height
    add = add.join(existing, on=["src", "dst", "type"], how="anti")
    add = add.with_columns(pl.lit(1.0).alias("weight"))
    report = {**rep1, **rep2, "already_present": already, "edges_planned": add.height,
              "by_type": dict(add.group_by("type").len().sort("type").iter_rows()) if add.height else {}}
    return BackfillPlan(add, report)
