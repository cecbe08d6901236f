"""Standalone HTML for sharing a figure with people who do not run Jupyter: plotly.js is embedded,
no script is fetched from a CDN, so the file opens offline. (The embedded plotly.js source itself
mentions cdn.plot.ly as the default map-topology URL; only geo maps would fetch it, and no kbtools
figure is a map.)

>>> import plotly.graph_objects as go, tempfile, pathlib
>>> path = save_html(go.Figure(go.Bar(x=[1], y=[2])), pathlib.Path(tempfile.mkdtemp()) / "bar.html")
>>> "<script src=" in path.read_text(), "Plotly.newPlot" in path.read_text()
(False, True)
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import plotly.graph_objects as go

from kbtools.views.theme import BACKGROUND, FOREGROUND

__all__ = ["save_html", "figure_html"]

_CONFIG = {"displaylogo": False, "responsive": True}


def figure_html(fig: go.Figure, *, title: str | None = None, extra_html: str | None = None) -> str:
    """A whole offline HTML page: the figure with plotly.js embedded, then ``extra_html`` (a table,
    notes) below it.

    >>> import plotly.graph_objects as go
    >>> page = figure_html(go.Figure(), title="t", extra_html="<p>notes</p>")
    >>> page.startswith("<!DOCTYPE html>"), "<p>notes</p>" in page
    (True, True)
    """
    body = fig.to_html(full_html=False, include_plotlyjs=True, config=_CONFIG, auto_play=False)
    heading = html.escape(title or _figure_title(fig) or "kbtools figure")
    return ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{heading}</title>\n"
            f"<style>body{{margin:0;background:{BACKGROUND};color:{FOREGROUND};"
            "font-family:system-ui,-apple-system,Segoe UI,sans-serif}"
            ".kb-extra{padding:8px 16px}.kb-extra table{border-collapse:collapse;font-size:13px}"
            ".kb-extra td,.kb-extra th{border-bottom:1px solid #2a3350;padding:4px 8px;text-align:left;"
            "vertical-align:top}</style>\n"
            f"</head>\n<body>\n{body}\n"
            + (f"<div class=\"kb-extra\">{extra_html}</div>\n" if extra_html else "")
            + "</body>\n</html>\n")


def save_html(fig: go.Figure, path: str | os.PathLike, *, title: str | None = None,
              extra_html: str | None = None) -> Path:
    """Write :func:`figure_html` to ``path`` (its folder is created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(figure_html(fig, title=title, extra_html=extra_html), encoding="utf-8")
    return path


def _figure_title(fig: go.Figure) -> str | None:
    title = fig.layout.title
    return title.text if title is not None and title.text else None
