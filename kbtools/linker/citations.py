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
import re
from dataclasses import dataclass, field

import polars as pl

from kbtools.model.schema import SCHEMAS
from kbtools.model.vocab import METADATA_LINK_TYPES

__all__ = ["BackfillPlan", "plan_backfill", "citing_sentence"]

_TOKEN = r"\b[0-9a-f]{7,8}\b"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class BackfillPlan:
    """Edges to add and a report of what was found and skipped."""

    add: pl.DataFrame
    report: dict = field(default_factory=dict)


def citing_sentence(text: str, token: str) -> str:
    """The sentence of ``text`` that holds ``token`` (trimmed to 300 characters).

    >>> citing_sentence("First. The cookie jar in a1b2c3d4 is the pattern! Last.", "a1b2c3d4")
    'The cookie jar in a1b2c3d4 is the pattern!'
    """
    for sentence in _SENTENCE_END.split(text):
        if token in sentence:
            s = sentence.strip()
            return s if len(s) <= 300 else s[:299] + "…"
    return text.strip()[:300]


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


def plan_backfill(entries: pl.DataFrame, edges: pl.DataFrame) -> BackfillPlan:
    """The ``cites`` and metadata edges the bank's prose and dedup metadata imply and it lacks."""
    if entries.height == 0:
        return BackfillPlan(pl.DataFrame(schema=SCHEMAS["edges"]), {"edges_planned": 0})
    cites, rep1 = _citations(entries)
    meta, rep2 = _metadata_links(entries)
    add = pl.concat([cites.with_columns(pl.lit("{}").alias("evidence")), meta], how="diagonal_relaxed")
    add = add.unique(subset=["src", "dst", "type"], keep="first", maintain_order=True)
    existing = edges.select("src", "dst", "type") if edges.height else pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})
    already = add.join(existing, on=["src", "dst", "type"], how="semi").height
    add = add.join(existing, on=["src", "dst", "type"], how="anti")
    add = add.with_columns(pl.lit(1.0).alias("weight"))
    report = {**rep1, **rep2, "already_present": already, "edges_planned": add.height,
              "by_type": dict(add.group_by("type").len().sort("type").iter_rows()) if add.height else {}}
    return BackfillPlan(add, report)
