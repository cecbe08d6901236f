"""HTML the widgets show: an answer as the agent reads it (the model's one renderer,
:mod:`kbtools.model.answer_html`, re-exported), flat beside folded, one entry's edges and events, and
the holes table. Pure functions of values, themed with JupyterLab's CSS variables.

>>> from kbtools.model.answer import Answer, Result, Pointer
>>> a = Answer("q", [Result("a1", 1, 0.9, title="T", related=[Pointer("b2", "cites", "out", "see step 2")])])
>>> "<details" in answer_html(a) and "see step 2" in answer_html(a)
True
"""

from __future__ import annotations

import html

import polars as pl

from kbtools.model.answer_html import answer_html, compare_html, html_table as _table

__all__ = ["answer_html", "compare_html", "entry_detail_html", "holes_table_html"]


def entry_detail_html(entry_id: str, entries: pl.DataFrame, edges: pl.DataFrame, events: pl.DataFrame) -> str:
    """One entry: its title and summary, its edges both ways (type, other entry, source, note, who
    wrote it, when) and the events that name it.

    >>> import polars as pl
    >>> from kbtools.model.schema import empty
    >>> e = pl.DataFrame({"id": ["a"], "title": ["A"], "summary": ["s"]})
    >>> "no links" in entry_detail_html("a", e, empty("edges"), empty("events"))
    True
    """
    esc = html.escape
    row = entries.filter(pl.col("id") == entry_id)
    title = row["title"][0] if row.height else entry_id
    summary = row["summary"][0] if row.height and "summary" in row.columns else None
    titles = entries.select(pl.col("id").alias("other"), pl.col("title").alias("other_title"))
    mine = pl.concat([
        edges.filter(pl.col("src") == entry_id).with_columns(pl.lit("out").alias("direction"), pl.col("dst").alias("other")),
        edges.filter(pl.col("dst") == entry_id).with_columns(pl.lit("in").alias("direction"), pl.col("src").alias("other")),
    ]).join(titles, on="other", how="left").sort("created_at", "type", "other")
    out = [f"<h4 style='margin:6px 0'>{esc(title or entry_id)} <code>{esc(entry_id)}</code></h4>"]
    if summary:
        out.append(f"<p>{esc(summary)}</p>")
    if mine.height == 0:
        out.append("<p><i>no links</i></p>")
    else:
        out.append(_table(["edge", "other entry", "source", "note", "written by", "when"], [
            [f"{'this' if d == 'out' else 'other'} {t} {'other' if d == 'out' else 'this'}",
             f"{ot or o} [{o}]", s, n or "", by or "", str(at)[:19]]
            for d, t, o, ot, s, n, by, at in zip(mine["direction"], mine["type"], mine["other"], mine["other_title"],
                                                 mine["source"], mine["note"], mine["created_by"], mine["created_at"])],
            caption=f"{mine.height} links"))
    named = events.filter((pl.col("src") == entry_id) | (pl.col("dst") == entry_id)).sort("at")
    if named.height:
        out.append(_table(["when", "who", "action", "src", "dst", "type", "reason"], [
            [str(at)[:19], a or "", act, s or "", d or "", t or "", r or ""]
            for at, a, act, s, d, t, r in named.select("at", "actor", "action", "src", "dst", "type", "reason").iter_rows()],
            caption=f"{named.height} events"))
    return "".join(out)


def holes_table_html(holes: pl.DataFrame) -> str:
    """The holes as an HTML table: severity, flow, hole, entry, the question to ask, the explanation.

    >>> import polars as pl
    >>> h = pl.DataFrame({"id": ["a"], "title": ["A"], "flow": ["f"], "hole": ["dead_end"], "severity": ["high"],
    ...                   "explanation": ["x"], "question": ["Ask y"]})
    >>> "Ask y" in holes_table_html(h)
    True
    """
    if holes.height == 0:
        return "<p><i>No holes.</i></p>"
    rows = [[sev, flow, hole, f"{title} [{i}]", q, expl]
            for i, title, flow, hole, sev, expl, q in holes.select(
                "id", "title", "flow", "hole", "severity", "explanation", "question").iter_rows()]
    return _table(["severity", "flow", "hole", "entry", "question to ask", "why"], rows,
                  caption=f"{holes.height} holes")
