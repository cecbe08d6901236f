"""Masking held-out citations: a link the text names outright is not a link to recover.

A held-out human edge was often made from text: backfill turned ``As PEP 484 says`` or ``Follow-up
to 1086f513b8`` into a ``cites`` edge, with the citing sentence as its note. Left in place, that
token lets any arm re-find the edge by matching the cited entry's title or id, which measures
backfill, not linking. :func:`mask_citations` removes, from both ends of every held-out edge, each
token that names the other end by the rules backfill resolves with:

- a hex token (7 to 40 characters) equal to the other end's id, or a prefix (7 characters or more)
  of its id or of its document key (a commit's full hash);
- a match of one of the bank's citation patterns (``--cite``, ``{"pattern": regex}``, group 1 a
  document key) whose key resolves to the other end (exactly, or by unique prefix for a pattern
  with ``"resolve": "prefix"``);
- the pull-request or issue numbers written right after a masked token (``Follow-up to 1086f513b8
  #17840``): they name the same commit (whose message says ``Closes #17840``) in another form.

Every text the linker and the baselines read (title, summary, content, useful_for, steps) is
masked alike. The masked token is replaced by :data:`MASK`. A summary or title shows a link as
its text (``:ref:`the filters <filters>``` reads "the filters", see
:func:`~kbtools.ops.sections.as_read`): what a masked token of the content shows is masked there
too.

A held-out edge can also be named outside the text: :func:`unmark_held_out` takes back the dedup
metadata that names the other end (``{"replaces": "b2c3d4e5"}``, which backfill turned into the
edge and the linker reads as a structural link).

>>> import polars as pl
>>> e = pl.DataFrame({"id": ["a1b2c3d4", "b2c3d4e5"], "title": ["Notes", "PEP 8: Style"],
...                   "content": ["As b2c3d4e5 and PEP 8 say, indent.", "Indent."],
...                   "metadata": ['{}', '{"key": "8", "head": true}']})
>>> held = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["b2c3d4e5"]})
>>> masked, report = mask_citations(e, held, patterns=[{"pattern": r"PEP\\s*(\\d+)"}])
>>> masked["content"][0], report["tokens_masked"]
('As [ref] and [ref] say, indent.', 2)
>>> held = pl.DataFrame({"src": ["b2c3d4e5"], "dst": ["a1b2c3d4"]})
>>> e = e.with_columns(pl.Series("content", ["Closes #17840", "Follow-up to a1b2c3d (#17840), #9 too"]))
>>> masked, report = mask_citations(e, held)
>>> masked["content"].to_list(), report["by_rule"]
(['Closes #17840', 'Follow-up to [ref], #9 too'], {'id': 1, 'pattern': 0, 'number': 1})
"""

from __future__ import annotations

import json
import re
from typing import Iterable

import polars as pl

from kbtools.model.vocab import METADATA_LINK_TYPES
from kbtools.ops.citations import document_keys, entry_documents, entry_labels, link_definitions, pattern_resolver
from kbtools.ops.sections import as_read

__all__ = ["MASK", "MASKED_FIELDS", "mask_citations", "unmark_held_out"]

#: What a masked citation token becomes.
MASK = "[ref]"
#: The text columns masked (those present).
MASKED_FIELDS: tuple[str, ...] = ("title", "summary", "content", "useful_for", "steps")
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{7,40}(?![0-9A-Za-z])")
#: Numbers written right after a masked token, ``#17840``, ``(#17840)``, ``#22386 #21239``: part of
#: the citation.
_NUMBER_AFTER = r"(?:[ \t]*\(?#\d+\)?(?![0-9A-Za-z]))+"


def _partners(held: pl.DataFrame) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, b in held.select("src", "dst").iter_rows():
        if a != b:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
    return out


def _doc_keys_of(entries: pl.DataFrame) -> dict[str, str]:
    """Entry id -> its document key (lower case), from the metadata ingest writes."""
    if "metadata" not in entries.columns:
        return {}
    keys = entries.select("id", pl.col("metadata").str.json_path_match("$.key").alias("key")).drop_nulls()
    return {i: str(k).strip().lower() for i, k in keys.iter_rows()}


def _matchers(entries: pl.DataFrame, patterns: Iterable[dict]):
    """``(regex, resolve)`` per pattern: ``resolve(citing entry id, match) -> entry id or None``,
    as backfill resolves it (:func:`~kbtools.ops.citations.pattern_resolver`)."""
    keys = document_keys(entries)
    docs = entry_documents(entries)
    labels, definitions = entry_labels(entries), link_definitions(entries)
    return [(re.compile(spec["pattern"]), pattern_resolver(spec, keys, docs, labels, definitions)) for spec in patterns]


def mask_citations(entries: pl.DataFrame, held: pl.DataFrame, *, patterns: Iterable[dict] = (),
                   mask: str = MASK) -> tuple[pl.DataFrame, dict]:
    """``(entries with every held-out citation token masked, report)`` (pure; see the module
    docstring). ``held``: the held-out edges (``src``, ``dst``); ``patterns``: the bank's citation
    patterns (``bank.settings["citations"]``). The report counts the entries and tokens masked, by
    rule (``id`` for hex ids and hashes, ``pattern`` for citation-pattern matches, ``number`` for a
    number written right after one of them), and lists the
    masked entries' row numbers (``rows``)."""
    partners = _partners(held)
    report = {"entries_masked": 0, "tokens_masked": 0, "by_rule": {"id": 0, "pattern": 0, "number": 0}, "rows": []}
    if not partners or entries.height == 0:
        return entries, report
    ids = entries["id"].to_list()
    doc_key = _doc_keys_of(entries)
    matchers = _matchers(entries, patterns)
    counts = {"id": 0, "pattern": 0, "number": 0}
    number_after = re.compile(re.escape(mask) + _NUMBER_AFTER)

    def names_partner_hex(token: str, mine: set[str]) -> bool:
        for p in mine:
            if token == p or (len(token) >= 7 and (p.startswith(token) or doc_key.get(p, "").startswith(token))):
                return True
        return False

    shown: set[str] = set()  # what the row's masked tokens read as where markup is rendered

    def masked_text(text, mine: set[str], eid: str):
        if not text:
            return text
        for rx, resolve in matchers:
            def sub(m, resolve=resolve):
                if resolve(eid, m) in mine:
                    counts["pattern"] += 1
                    read = as_read(m.group(0)).strip()
                    if len(read) >= 3 and read != m.group(0):
                        shown.add(read)
                    return mask
                return m.group(0)
            text = rx.sub(sub, text)

        def sub_hex(m):
            if names_partner_hex(m.group(0), mine):
                counts["id"] += 1
                return mask
            return m.group(0)
        text = _HEX.sub(sub_hex, text)
        if mask in text:
            def sub_numbers(m):
                counts["number"] += m.group(0).count("#")
                return mask
            text = number_after.sub(sub_numbers, text)
        return text

    fields = [f for f in MASKED_FIELDS if f in entries.columns]
    fields.sort(key=lambda f: f != "content")  # the content first: the rest may show its tokens as read
    columns = {f: entries[f].to_list() for f in fields}
    touched: list[int] = []
    for row, eid in enumerate(ids):
        mine = partners.get(eid)
        if not mine:
            continue
        before = sum(counts.values())
        shown.clear()
        for f in fields:
            value = columns[f][row]
            if isinstance(value, list):
                columns[f][row] = [masked_text(v, mine, eid) for v in value]
            elif isinstance(value, str):
                columns[f][row] = masked_text(value, mine, eid)
            if f in ("title", "summary") and shown and isinstance(columns[f][row], str):
                for read in sorted(shown, key=len, reverse=True):
                    columns[f][row] = columns[f][row].replace(read, mask)
        if sum(counts.values()) > before:
            touched.append(row)
    out = entries.with_columns([pl.Series(f, columns[f], dtype=entries.schema[f]) for f in fields])
    report = {"entries_masked": len(touched), "tokens_masked": counts["id"] + counts["pattern"], "by_rule": dict(counts),
              "rows": touched}
    return out, report


def unmark_held_out(entries: pl.DataFrame, held: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """``(entries, report)`` with each dedup metadata key
    (:data:`~kbtools.model.vocab.METADATA_LINK_TYPES`) rid of the ids of the entry's held-out
    partners (the key goes when none is left); pure. ``held``: the held-out edges (``src``,
    ``dst``). The report counts ``metadata_ids_dropped``. (The ``superseded`` status a held-out
    edge left is undone where the edges are held out,
    :func:`~kbtools.evaluate.links.held_out_frames`.)

    >>> e = pl.DataFrame({"id": ["new1", "old1"], "metadata": ['{"replaces": "old1", "team": "ops"}', "{}"]})
    >>> out, report = unmark_held_out(e, pl.DataFrame({"src": ["new1"], "dst": ["old1"]}))
    >>> out["metadata"].to_list(), report
    (['{"team": "ops"}', '{}'], {'metadata_ids_dropped': 1})
    """
    report = {"metadata_ids_dropped": 0}
    partners = _partners(held)
    if not partners or entries.height == 0 or "metadata" not in entries.columns:
        return entries, report
    metadata = entries["metadata"].to_list()
    for row, eid in enumerate(entries["id"].to_list()):
        mine, text = partners.get(eid), metadata[row]
        if not mine or not text or not any(key in text for key in METADATA_LINK_TYPES):
            continue
        try:
            meta = json.loads(text)
        except ValueError:
            continue
        if not isinstance(meta, dict):
            continue
        dropped = 0
        for key in METADATA_LINK_TYPES:
            value = meta.get(key)
            named = value if isinstance(value, list) else [value]
            left = [v for v in named if str(v) not in mine]
            if value is None or len(left) == len(named):
                continue
            dropped += len(named) - len(left)
            if left:
                meta[key] = left if isinstance(value, list) else left[0]
            else:
                del meta[key]
        if dropped:
            metadata[row] = json.dumps(meta)
            report["metadata_ids_dropped"] += dropped
    return entries.with_columns(pl.Series("metadata", metadata, dtype=entries.schema["metadata"])), report
