"""HTML the widgets show: an answer as the agent reads it (pointers and neighbours in ``<details>``),
flat beside folded, one entry's edges and events, and the holes table. Pure functions of values.

>>> from kbtools.model.answer import Answer, Result, Pointer
>>> a = Answer("q", [Result("a1", 1, 0.9, title="T", related=[Pointer("b2", "cites", "out", "see step 2")])])
>>> "<details" in answer_html(a) and "see step 2" in answer_html(a)
True
"""

from __future__ import annotations

import html

import polars as pl

__all__ = ["answer_html", "compare_html", "entry_detail_html", "holes_table_html"]

_ROLE_COLORS = {"folded": "#b26b00", "neighbor": "#0077a3"}
_TABLE = "border-collapse:collapse;font-size:12px"
_CELL = "border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top"


def answer_html(answer, *, title: str | None = None) -> str:
    """The answer as the agent reads it: ranked results with summary and steps, each result's folded
    pointers and neighbours in an expandable ``<details>``, then the links section."""
    esc = html.escape
    head = title or (f"Answer for: {answer.query}" if answer.query else "Answer")
    method = f"{answer.method}, {len(answer.results)} results"
    out = [f'<div class="kb-answer"><p><b>{esc(head)}</b> <small>({esc(method)})</small></p>']
    if not answer.results:
        out.append("<p><i>No results.</i></p>")
    out.append("<ol>")
    for r in answer.results:
        kind = f" <small>{esc(r.entry_kind)}</small>" if r.entry_kind else ""
        score = f" <small>score {float(r.score):.3f}</small>" if r.score is not None else ""
        out.append(f"<li><b>{esc(r.title or r.id)}</b> <code>{esc(r.id)}</code>{kind}{score}")
        if r.summary:
            out.append(f"<br>{esc(r.summary)}")
        if r.steps:
            out.append("<ol>" + "".join(f"<li>{esc(s)}</li>" for s in r.steps) + "</ol>")
        if r.pointers():
            label = ", ".join(part for part in (_count(len(r.related), "folded pointer"),
                                                _count(len(r.neighbors), "neighbour")) if part)
            out.append(f"<details><summary>{esc(label)}</summary><ul style='list-style:none;padding-left:1em'>")
            out.extend(_pointer_html(p) for p in r.pointers())
            out.append("</ul></details>")
        out.append("</li>")
    out.append("</ol>")
    if answer.links:
        out.append("<details open><summary>How these entries connect</summary><ul>")
        out.extend(f"<li>{esc(line)}</li>" for line in answer.links)
        out.append("</ul></details>")
    out.append("</div>")
    return "".join(out)


def compare_html(flat, folded) -> str:
    """Flat and folded answers side by side (two columns).

    >>> from kbtools.model.answer import Answer
    >>> compare_html(Answer("q", [], folded=False, method="flat"), Answer("q", [])).count("kb-answer")
    2
    """
    column = "flex:1;min-width:0;padding:0 8px"
    return (f"<div style='display:flex;gap:12px'><div style='{column}'>{answer_html(flat, title='Flat')}</div>"
            f"<div style='{column}'>{answer_html(folded, title='Folded')}</div></div>")


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


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}" if n else ""


def _pointer_html(p) -> str:
    esc = html.escape
    color = _ROLE_COLORS.get(p.kind, "#555")
    via = f" via <code>{esc(p.via)}</code>" if p.via else ""
    note = f" — <i>{esc(p.note)}</i>" if p.note else ""
    text = p.summary or p.title
    return (f"<li><span style='color:{color}'>↳ {esc(p.kind)}</span> <code>{esc(p.id)}</code> "
            f"<b>{esc(p.relation)}</b> ({esc(p.direction)}){via}{note}{' — ' + esc(text) if text else ''}</li>")


def _table(header: list[str], rows: list[list], *, caption: str | None = None) -> str:
    esc = html.escape
    out = [f"<table style='{_TABLE}'>"]
    if caption:
        out.append(f"<caption style='text-align:left;font-weight:bold'>{esc(caption)}</caption>")
    out.append("<tr>" + "".join(f"<th style='{_CELL}'>{esc(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td style='{_CELL}'>{esc(str(v))}</td>" for v in row) + "</tr>")
    out.append("</table>")
    return "".join(out)
