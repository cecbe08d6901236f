"""The one HTML renderer of an answer (a notebook's ``Answer._repr_html_`` and the explorer widget both
use it), and the small themed table that the other rich reprs share. Pure functions of values.

Colours come from JupyterLab's CSS variables (``--jp-ui-font-color1``, ``--jp-border-color2``, …)
with light fallbacks, so the same HTML reads in light and dark themes, in VS Code and on nbviewer.

>>> from kbtools.model.answer import Answer, Result, Pointer
>>> a = Answer("q", [Result("a1", 1, 0.9, title="T", related=[Pointer("b2", "cites", "out", "see step 2")])])
>>> "<details" in answer_html(a) and "see step 2" in answer_html(a)
True
"""

from __future__ import annotations

import dataclasses
import html

__all__ = ["answer_html", "compare_html", "html_table", "jp", "linked_text", "MUTED_TEXT"]


def jp(name: str, fallback: str) -> str:
    """A JupyterLab theme variable with a fallback for pages without the theme.

    >>> jp("ui-font-color1", "#222")
    'var(--jp-ui-font-color1, #222)'
    """
    return f"var(--jp-{name}, {fallback})"


MUTED_TEXT = jp("ui-font-color2", "#616161")
_ROLE_COLORS = {"folded": jp("warn-color0", "#b26b00"), "neighbor": jp("info-color0", "#0077a3")}
_TABLE = (f"border-collapse:collapse;font-size:12px;color:{jp('ui-font-color1', '#212121')};"
          f"background:transparent")
_CELL = f"border-bottom:1px solid {jp('border-color2', '#ddd')};padding:3px 6px;text-align:left;vertical-align:top"
_CODE = f"background:{jp('layout-color2', '#eee')};color:{jp('content-font-color1', '#212121')};padding:0 3px;border-radius:3px"


def answer_html(answer, *, title: str | None = None) -> str:
    """The answer as the agent reads it: ranked results with summary and steps, each result's folded
    pointers and neighbours in an expandable ``<details>``, then the links section."""
    esc = html.escape
    head = title or (f"Answer for: {answer.query}" if answer.query else "Answer")
    method = f"{answer.method}, {len(answer.results)} result{'s' if len(answer.results) != 1 else ''}"
    out = [f'<div class="kb-answer" style="color:{jp("ui-font-color1", "#212121")}">'
           f'<p><b>{esc(head)}</b> <small style="color:{MUTED_TEXT}">({esc(method)})</small></p>']
    if not answer.results:
        out.append("<p><i>No results.</i></p>")
    else:
        out.append("<ol>")
        out.extend(_result_html(r) for r in answer.results)
        out.append("</ol>")
    if answer.linked:
        out.append("<details><summary>Brought in by links</summary><ul>")
        out.extend(f"<li>{esc(linked_text(item))}</li>" for item in answer.linked)
        out.append("</ul></details>")
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


def html_table(header: list[str], rows: list[list], *, caption: str | None = None) -> str:
    """A small table in the notebook's theme; every cell is escaped.

    >>> html_table(["a"], [["<b>"]]).count("&lt;b&gt;")
    1
    """
    esc = html.escape
    out = [f"<table class='kb-table' style='{_TABLE}'>"]
    if caption:
        out.append(f"<caption style='text-align:left;font-weight:bold'>{esc(caption)}</caption>")
    out.append("<tr>" + "".join(f"<th style='{_CELL}'>{esc(str(h))}</th>" for h in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td style='{_CELL}'>{esc(str(v))}</td>" for v in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _result_html(r) -> str:
    esc = html.escape
    kind = f" <small style='color:{MUTED_TEXT}'>{esc(r.entry_kind)}</small>" if r.entry_kind else ""
    score = f" <small style='color:{MUTED_TEXT}'>score {float(r.score):.3f}</small>" if r.score is not None else ""
    out = [f"<li><b>{esc(r.title or r.id)}</b> <code style='{_CODE}'>{esc(r.id)}</code>{kind}{score}"]
    if r.summary:
        out.append(f"<br>{esc(r.summary)}")
    if r.steps:
        out.append("<ol>" + "".join(f"<li>{esc(s)}</li>" for s in r.steps) + "</ol>")
    if r.pointers():
        label = ", ".join(part for part in (_count(len(r.dominated_by), "result above it"),
                                            _count(len(r.related), "folded pointer"),
                                            _count(len(r.neighbors), "neighbour")) if part)
        out.append(f"<details><summary>{esc(label)}</summary><ul style='list-style:none;padding-left:1em'>")
        out.extend(_pointer_html(p) for p in r.pointers())
        out.append("</ul></details>")
    out.append("</li>")
    return "".join(out)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}" if n else ""


def _pointer_html(p) -> str:
    """One pointer; its plain words (``↳ folded: id relation (direction)``) read as :meth:`Pointer.line`."""
    esc = html.escape
    color = _ROLE_COLORS.get(p.kind, MUTED_TEXT)
    via = f" via <code style='{_CODE}'>{esc(p.via)}</code>" if p.via else ""
    note = f" — <i>{esc(p.note)}</i>" if p.note else ""
    text = p.summary or p.title
    return (f"<li><span style='color:{color}'>↳ {esc(p.kind)}:</span> <code style='{_CODE}'>{esc(p.id)}</code> "
            f"<b>{esc(p.relation)}</b> ({esc(p.direction)}){via}{note}{' — ' + esc(text) if text else ''}</li>")


def linked_text(item) -> str:
    """One line of plain text for an entry brought in by links: its id, title and summary, and its
    activation when it has one (the text answer and the HTML answer both list them so).

    >>> linked_text({"id": "a1b2c3d4", "title": "Retry the upload", "activation": 0.25})
    'a1b2c3d4 — Retry the upload (linked 0.25)'
    """
    if dataclasses.is_dataclass(item):
        item = dataclasses.asdict(item)
    if isinstance(item, dict):
        bits = [str(item.get("id", "")), item.get("title") or "", item.get("summary") or ""]
        text = " — ".join(b for b in bits if b)
        if item.get("activation") is not None:
            text += f" (linked {float(item['activation']):.2f})"
        return text
    return str(item)
