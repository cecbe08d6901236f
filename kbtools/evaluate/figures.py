"""Plotly figures of the evaluation reports (pure: a report in, a ``go.Figure`` out).

>>> from kbtools.evaluate.report import HopLabReport
>>> r = HopLabReport(params={}, agent="simulated reader agent, not a model", simulated=True, arms=[], tasks=[],
...                  leaks=[], excluded=[], invalid=[], outcomes=[], summary=[])
>>> "simulated" in hoplab_figure(r).layout.title.text
True
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kbtools.evaluate.report import HopLabReport, ReplayReport, lost_warning

__all__ = ["hoplab_figure", "replay_figure"]

_HOP_METRICS = (("reached", "needed hop reached"), ("tangential", "tangential hop taken"),
                ("correct", "answers correct"))


def _bar(name: str, labels: list[str], props: list[dict], color: str | None = None) -> go.Bar:
    """A bar per label with asymmetric Wilson error bars (missing rates drawn as 0, no bar)."""
    rate = [p["rate"] if p.get("rate") is not None else 0.0 for p in props]
    return go.Bar(
        name=name, x=labels, y=rate, marker_color=color,
        error_y=dict(type="data", symmetric=False,
                     array=[max(0.0, p["hi"] - r) for p, r in zip(props, rate)],
                     arrayminus=[max(0.0, r - p["lo"]) for p, r in zip(props, rate)]),
        customdata=[[p["k"], p["n"]] for p in props],
        hovertemplate="%{x}<br>" + name + ": %{y:.0%} (%{customdata[0]}/%{customdata[1]})<extra></extra>",
    )


def hoplab_figure(report: HopLabReport) -> go.Figure:
    """Grouped bars per arm: needed hop reached, tangential hop taken, answers correct (Wilson 95 %).

    The title names the agent, and says "simulated" when it is the built-in reader.
    """
    labels = [s["label"] for s in report.summary]
    fig = go.Figure([_bar(title, labels, [s[key] for s in report.summary]) for key, title in _HOP_METRICS])
    who = report.agent + (" (simulation)" if report.simulated and "simulated" not in report.agent else "")
    tasks = len({o["task"] for o in report.outcomes})
    fig.update_layout(
        title=dict(text=f"Hop lab · {tasks} tasks · agent: {who}"), barmode="group",
        yaxis=dict(title="share of tasks", tickformat=".0%", range=[0, 1.05]), legend=dict(orientation="h"),
        template="plotly_white",
    )
    return fig


def replay_figure(report: ReplayReport) -> go.Figure:
    """Two panels: the headline shares (folding on vs off) and pointer precision / note coverage by
    edge source, all with Wilson 95 % intervals; the title carries the lost-entries line.

    >>> from kbtools.evaluate.replay import summarize_replay
    >>> h, a, s, r = summarize_replay([])
    >>> fig = replay_figure(ReplayReport({}, "gold labels", [], h, a, s, r))
    >>> fig.layout.title.text.startswith("Folding replay")
    True
    """
    h = report.headline
    fig = make_subplots(rows=1, cols=2, subplot_titles=("folding on vs off", "pointers by edge source"),
                        column_widths=[0.55, 0.45])
    heads = [("pointer_share", "queries with a pointer"), ("gained_share", "queries gaining"),
             ("pointer_precision", "pointer precision"), ("note_coverage", "note coverage")]
    fig.add_trace(_bar("headline", [t for _, t in heads], [h[k] for k, _ in heads], "#4C78A8"), row=1, col=1)
    sources = [r["source"] for r in report.by_source]
    for name, key, color in (("pointer precision", "precision", "#F58518"), ("note coverage", "note_coverage", "#54A24B")):
        fig.add_trace(_bar(name, sources, [r[key] for r in report.by_source], color), row=1, col=2)
    gain = h["gain"]["mean"]
    fig.update_layout(
        title=dict(text=f"Folding replay · {h['queries']} queries · judge: {report.judge} · mean gain "
                        f"{'–' if gain is None else f'{gain:.2f}'} · {lost_warning(report.lost)}"),
        barmode="group", template="plotly_white", legend=dict(orientation="h"),
    )
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
    return fig
