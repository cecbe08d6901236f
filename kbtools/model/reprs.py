"""Rich notebook reprs of the bank's plain results: a summary table for a bank, the tables of
``bank_stats``, the problem list of ``check_bank``. The values stay what callers already use (a dict,
a list); these subclasses only add ``_repr_html_``. Pure HTML builders, no I/O.

>>> Problems([]) == [], "sound" in Problems([])._repr_html_()
(True, True)
>>> BankStats({"entries": 3})["entries"]
3
"""

from __future__ import annotations

import html

from kbtools.model.answer_html import MUTED_TEXT, html_table, jp

__all__ = ["Problems", "BankStats", "bank_summary_html"]

_BAD = jp("error-color1", "#d32f2f")
_GOOD = jp("success-color1", "#388e3c")


class Problems(list):
    """The broken invariants of a bank (a list of :class:`~kbtools.model.rules.Problem`, empty when the
    bank is sound) that a notebook shows as a table.

    >>> from kbtools.model.rules import Problem
    >>> p = Problems([Problem("edges", 3, "type", "cousin_of", "unknown edge type")])
    >>> len(p), "cousin_of" in p._repr_html_()
    (1, True)
    """

    def _repr_html_(self) -> str:
        if not self:
            return f"<p style='color:{_GOOD}'><b>✓ The bank is sound</b> (check found no problem).</p>"
        rows = [[p.table, "" if p.row is None else p.row, p.column, _short(repr(p.value)), p.rule] for p in self]
        head = (f"<p style='color:{_BAD}'><b>✗ {len(self)} problem{'s' if len(self) != 1 else ''}</b>"
                " (each names the table, the row, the value and the rule it breaks)</p>")
        return head + html_table(["table", "row", "column", "value", "rule"], rows)


class BankStats(dict):
    """What :func:`~kbtools.evaluate.bank_stats.bank_stats` returns: a plain JSON-ready dict that a
    notebook shows as tables (totals, entries by kind, edges by source and type).

    >>> "entries by kind" in BankStats({"entries": 1, "entries_by_kind": {"fact": 1}})._repr_html_()
    True
    """

    def _repr_html_(self) -> str:
        totals = [(key.replace("_", " "), value) for key, value in self.items()
                  if isinstance(value, (int, float, str)) or value is None]
        parts = [html_table(["", "value"], [[k, _number(v)] for k, v in totals], caption="bank")]
        for key in ("entries_by_kind", "entries_by_status", "edges_by_source", "edges_by_type", "segments"):
            counts = self.get(key)
            if counts:
                parts.append(html_table([key.split("_by_")[-1], "count"], [[k, v] for k, v in counts.items()],
                                        caption=key.replace("_", " ")))
        leaky = self.get("notes_restating_their_target") or []
        if leaky:
            parts.append(f"<p style='color:{_BAD}'><b>Data problem:</b> {len(leaky)} edge note(s) restate the fact "
                         "they point at (a note says how, never what).</p>")
            parts.append(html_table(["src", "type", "dst", "why"],
                                    [[r.get("src"), r.get("type"), r.get("dst"), r.get("reason")] for r in leaky[:20]]))
        cell = "vertical-align:top;margin:0 18px 8px 0;display:inline-block"
        return "<div class='kb-stats'>" + "".join(f"<div style='{cell}'>{p}</div>" for p in parts) + "</div>"


def bank_summary_html(path: str, version: int, counts: dict[str, int], *, embedder: str | None = None) -> str:
    """A bank at a glance: where it is, its version, row counts per table, its embedder.

    >>> "12" in bank_summary_html("/b", 3, {"entries": 12})
    True
    """
    esc = html.escape
    head = (f"<p><b>Bank</b> <code>{esc(str(path))}</code> <small style='color:{MUTED_TEXT}'>version {version}"
            f" · embedder {esc(embedder or '–')}</small></p>")
    return "<div class='kb-bank'>" + head + html_table(["table", "rows"], [[k, f"{v:,}"] for k, v in counts.items()]) + "</div>"


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "–" if value is None else str(value)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
