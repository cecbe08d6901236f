"""Thin JupyterLab widgets over the pure figure builders: explorer, graph, holes and communities views.

Each view keeps its state in plain attributes (the controls, ``.figure`` as a ``go.Figure``, the
current ``.answer``), so tests drive it by setting widget values and reading them back. A view
displays itself in a notebook (``_repr_mimebundle_``), and ``.save_html(path)`` writes a standalone
offline page. Plotly's ``FigureWidget`` (which needs the ``anywidget`` package) is used when it is
installed and updated under ``batch_update()``; otherwise the figure is shown in an ``Output``.

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.explorer(kb.open_bank("data/demo/engineering"))  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Callable

import ipywidgets as widgets
import plotly.graph_objects as go
import polars as pl
from IPython.display import display

from kbtools.ops import analytics
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.views.answer_html import answer_html, compare_html, entry_detail_html, holes_table_html
from kbtools.views.export import save_html
from kbtools.views.figures import COLOR_BY, community_figure, graph_figure
from kbtools.views.flows import holes_figure
from kbtools.views.layout import bank_layout

__all__ = ["explorer", "graph_view", "holes_view", "community_view", "Explorer", "GraphView", "HolesView",
           "CommunityView", "HOLE_SORT_KEYS", "sort_holes"]

#: Sort keys of the holes table (severity sorts high, medium, low).
HOLE_SORT_KEYS = ("severity", "flow", "hole", "title")


class _View:
    """Common plumbing: ``.widget`` (what a notebook shows), ``.figure``, ``.save_html(path)``."""

    widget: widgets.Widget
    figure: go.Figure | None = None

    def save_html(self, path: str | os.PathLike):
        """Write the current figure as a standalone offline HTML page; returns the path."""
        return save_html(self.figure, path)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class _FigureBox:
    """A FigureWidget when anywidget is installed, else an Output that re-displays the figure."""

    def __init__(self, figure: go.Figure):
        try:
            self.figure_widget = go.FigureWidget(data=figure.data, layout=figure.layout)
            self.widget = self.figure_widget
        except ImportError:
            self.figure_widget = None
            self.widget = widgets.Output()
            self._display(figure)

    def show(self, figure: go.Figure) -> None:
        if self.figure_widget is None:
            self._display(figure)
            return
        fw = self.figure_widget
        with fw.batch_update():
            same = len(fw.data) == len(figure.data) and all(a.type == b.type for a, b in zip(fw.data, figure.data))
            if same:
                for old, new in zip(fw.data, figure.data):
                    old.update(new.to_plotly_json(), overwrite=True)
            else:
                fw.data = []
                fw.add_traces(list(figure.data))
            fw.layout = figure.layout

    def _display(self, figure: go.Figure) -> None:
        self.widget.clear_output(wait=True)
        with self.widget:
            display(figure)


# -- explorer ------------------------------------------------------------------------------------

class Explorer(_View):
    """Ask the bank and read the answer as the agent reads it; pick a result to see its links and events.

    Controls: ``query_box``, ``ask_button``, ``fold_toggle``, ``k_slider``, ``lexical_toggle``,
    ``compare_toggle`` (flat beside folded), ``result_select``. Output: ``output_html`` (the answer),
    ``detail_html`` (the selected entry's edges and events). State: ``answer`` (and ``flat_answer``
    in compare mode).
    """

    def __init__(self, bank, *, query_fn: Callable | None = None, k: int = 8):
        self.bank = bank
        self.query_fn = query_fn or _default_query(bank)
        self.answer = None
        self.flat_answer = None
        self.query_box = widgets.Text(placeholder="Ask the bank…", description="query", continuous_update=False,
                                      layout=widgets.Layout(width="60%"))
        self.ask_button = widgets.Button(description="Ask", button_style="primary", icon="search")
        self.fold_toggle = widgets.ToggleButton(value=True, description="fold", tooltip="fold along trusted links")
        self.k_slider = widgets.IntSlider(value=k, min=1, max=20, description="k")
        self.lexical_toggle = widgets.ToggleButton(value=False, description="lexical arm", tooltip="add the BM25 arm")
        self.compare_toggle = widgets.ToggleButton(value=False, description="flat vs folded")
        self.output_html = widgets.HTML("<i>Type a question and press Enter.</i>")
        self.result_select = widgets.Dropdown(options=[], description="entry", layout=widgets.Layout(width="70%"))
        self.detail_html = widgets.HTML()
        self.query_box.observe(lambda change: self.ask(), names="value")
        self.ask_button.on_click(lambda _: self.ask())
        for control in (self.fold_toggle, self.k_slider, self.lexical_toggle, self.compare_toggle):
            control.observe(lambda change: self.ask() if self.query_box.value.strip() else None, names="value")
        self.result_select.observe(lambda change: self.show_entry(change["new"]), names="value")
        controls = widgets.HBox([self.fold_toggle, self.k_slider, self.lexical_toggle, self.compare_toggle])
        self.widget = widgets.VBox([widgets.HBox([self.query_box, self.ask_button]), controls, self.output_html,
                                    self.result_select, self.detail_html])

    def ask(self, text: str | None = None):
        """Run the query in the box (or ``text``, which is put in the box) with the current settings."""
        if text is not None and text != self.query_box.value:
            self.query_box.value = text  # the observer asks
            return self.answer
        text = self.query_box.value.strip()
        if not text:
            return None
        options = {"k": self.k_slider.value, "lexical": self.lexical_toggle.value}
        if self.compare_toggle.value:
            self.flat_answer = self.query_fn(text, fold=False, **options)
            self.answer = self.query_fn(text, fold=True, **options)
            self.output_html.value = compare_html(self.flat_answer, self.answer)
        else:
            self.flat_answer = None
            self.answer = self.query_fn(text, fold=self.fold_toggle.value, **options)
            self.output_html.value = answer_html(self.answer)
        self._fill_select()
        return self.answer

    def show_entry(self, entry_id: str | None) -> None:
        """Show an entry's edges (type, source, note, who, when) and its events under the answer."""
        if not entry_id:
            self.detail_html.value = ""
            return
        self.detail_html.value = entry_detail_html(entry_id, self.bank.entries, self.bank.edges, self.bank.events)

    def graph(self, **options) -> "GraphView":
        """The constellation view with the current answer lit."""
        return GraphView(self.bank, answer=self.answer, **options)

    @property
    def figure(self):  # the explorer has no figure of its own: its graph view's
        return self.graph().figure

    def _fill_select(self) -> None:
        options = [("(pick an entry to see its links and events)", None)]
        for r in self.answer.results:
            options.append((f"{r.rank}. {r.title or r.id} [{r.id}]", r.id))
            options.extend((f"    ↳ {p.kind}: {p.title or p.summary or p.id} [{p.id}]"[:120], p.id)
                           for p in r.pointers())
        seen, unique = set(), []
        for label, value in options:
            if value not in seen:
                seen.add(value)
                unique.append((label, value))
        self.result_select.options = unique
        self.result_select.value = None


def explorer(bank, *, query_fn: Callable | None = None, k: int = 8) -> Explorer:
    """The query explorer of a bank (see :class:`Explorer`). ``query_fn(text, *, k, fold, lexical)``
    returns an Answer; by default ``kb.query`` without recording usage.

    >>> import kbtools as kb  # doctest: +SKIP
    >>> ex = kb.explorer(bank); ex.ask("how do I deploy?"); ex.answer.ids()  # doctest: +SKIP
    """
    return Explorer(bank, query_fn=query_fn, k=k)


def _default_query(bank) -> Callable:
    from kbtools.retrieval.pipeline import query

    def run(text: str, *, k: int, fold: bool, lexical: bool):
        return query(bank, text, k=k, fold=fold, lexical=lexical, record_usage=False)

    return run


# -- graph -----------------------------------------------------------------------------------------

class GraphView(_View):
    """The 3D constellation view: ``color_dropdown`` (community or kind), ``answer``, ``figure``."""

    def __init__(self, bank, *, answer=None, color_by: str = "community", max_nodes: int = 10000, seed: int = 0):
        self.bank = bank
        self.answer = answer
        self.max_nodes = max_nodes
        self.seed = seed
        self.layout = bank_layout(bank, seed=seed)
        self.communities = analytics.communities(bank)
        self.color_dropdown = widgets.Dropdown(options=list(COLOR_BY), value=color_by, description="colour by")
        self.figure = self._build()
        self.box = _FigureBox(_without_frames(self.figure))
        self.color_dropdown.observe(lambda change: self.refresh(), names="value")
        self.widget = widgets.VBox([self.color_dropdown, self.box.widget])

    def set_answer(self, answer) -> None:
        """Light another answer (None: the whole bank, unlit)."""
        self.answer = answer
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the figure from the current settings and show it."""
        self.figure = self._build()
        self.box.show(_without_frames(self.figure))

    def _edges(self) -> pl.DataFrame:
        """The links drawn: trusted ones (agent-declared, citations, structure), as in the seed's view;
        automatic links only between entries of the answer (they brought linked entries in)."""
        edges = self.bank.edges
        lit = set()
        if self.answer is not None:
            lit = {r.id for r in self.answer.results}
            lit |= {p.id for r in self.answer.results for p in (*r.related, *r.neighbors)}
            lit |= {item["id"] if isinstance(item, dict) else getattr(item, "id", None) for item in self.answer.linked}
        trusted = pl.col("source").is_in(sorted(TRUSTED_SOURCES))
        between = pl.col("src").is_in(sorted(lit)) & pl.col("dst").is_in(sorted(lit))
        return edges.filter(trusted | between)

    def _build(self) -> go.Figure:
        return graph_figure(self.bank.entries, self._edges(), self.layout, answer=self.answer,
                            color_by=self.color_dropdown.value, communities=self.communities,
                            max_nodes=self.max_nodes, seed=self.seed)


def graph_view(bank, answer=None, color_by: str = "community", *, max_nodes: int = 10000, seed: int = 0) -> GraphView:
    """The 3D constellation view of a bank, optionally with an answer lit (see :class:`GraphView`).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.graph_view(bank, kb.query(bank, "deploy")).save_html("graph.html")  # doctest: +SKIP
    """
    return GraphView(bank, answer=answer, color_by=color_by, max_nodes=max_nodes, seed=seed)


def _without_frames(figure: go.Figure) -> go.Figure:
    """FigureWidget does not take animation frames: the widget shows the still figure."""
    still = go.Figure(figure)
    still.frames = []
    still.layout.updatemenus = []
    return still


# -- holes -----------------------------------------------------------------------------------------

class HolesView(_View):
    """Process flows with their holes beside a sortable table of holes and the question to ask.

    Controls: ``flow_dropdown`` ("all" or one flow), ``sort_dropdown`` (:data:`HOLE_SORT_KEYS`).
    State: ``holes`` (the table's rows in display order), ``table_html``, ``figure``.
    """

    def __init__(self, bank, *, flow: str | None = None):
        self.bank = bank
        self.all_holes = analytics.workflow_holes(bank)
        flows = sorted(analytics.process_flows(bank)["flow"].to_list())
        self.flow_dropdown = widgets.Dropdown(options=["all", *flows], value=flow or "all", description="flow")
        self.sort_dropdown = widgets.Dropdown(options=list(HOLE_SORT_KEYS), value="severity", description="sort by")
        self.table_html = widgets.HTML()
        self.figure = self._build_figure()
        self.box = _FigureBox(self.figure)
        self._fill_table()
        self.flow_dropdown.observe(lambda change: self.refresh(), names="value")
        self.sort_dropdown.observe(lambda change: self._fill_table(), names="value")
        table = widgets.VBox([self.sort_dropdown, self.table_html],
                             layout=widgets.Layout(width="40%", max_height="900px", overflow="auto"))
        diagram = widgets.Box([self.box.widget], layout=widgets.Layout(width="60%"))
        self.widget = widgets.VBox([self.flow_dropdown, widgets.HBox([diagram, table])])

    @property
    def flow(self) -> str | None:
        return None if self.flow_dropdown.value == "all" else self.flow_dropdown.value

    def refresh(self) -> None:
        """Redraw the diagram and the table for the chosen flow."""
        self.figure = self._build_figure()
        self.box.show(self.figure)
        self._fill_table()

    def save_html(self, path: str | os.PathLike):
        """The diagram and the holes table as one standalone offline HTML page."""
        return save_html(self.figure, path, extra_html=holes_table_html(self.holes))

    def _build_figure(self) -> go.Figure:
        return holes_figure(self.bank.entries, self.bank.edges, self.all_holes, flow=self.flow)

    def _fill_table(self) -> None:
        holes = self.all_holes if self.flow is None else self.all_holes.filter(pl.col("flow") == self.flow)
        self.holes = sort_holes(holes, self.sort_dropdown.value)
        self.table_html.value = holes_table_html(self.holes)


def sort_holes(holes: pl.DataFrame, key: str) -> pl.DataFrame:
    """Holes sorted by ``key`` (severity high first), then flow, hole, title.

    >>> h = pl.DataFrame({"severity": ["low", "high"], "flow": ["a", "b"], "hole": ["x", "y"], "title": ["t", "u"]})
    >>> sort_holes(h, "severity")["severity"].to_list()
    ['high', 'low']
    """
    rank = pl.col("severity").replace_strict({"high": 0, "medium": 1, "low": 2}, default=3, return_dtype=pl.Int64)
    keys = {"severity": rank, "flow": pl.col("flow"), "hole": pl.col("hole"), "title": pl.col("title")}
    order = [keys[key]] + [keys[k] for k in HOLE_SORT_KEYS if k != key]
    return holes.sort(order)


def holes_view(bank, *, flow: str | None = None) -> HolesView:
    """The workflow-hole view of a bank (see :class:`HolesView`).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.holes_view(kb.open_bank("data/demo/business")).holes.height  # doctest: +SKIP
    18
    """
    return HolesView(bank, flow=flow)


# -- communities -----------------------------------------------------------------------------------

class CommunityView(_View):
    """Community sizes with labels and the hubs; ``top_slider`` picks how many communities show."""

    def __init__(self, bank, *, top: int = 20):
        self.bank = bank
        self.communities = analytics.communities(bank)
        self.centrality = analytics.centrality(bank)
        self.top_slider = widgets.IntSlider(value=top, min=5, max=60, step=5, description="top")
        self.figure = self._build()
        self.box = _FigureBox(self.figure)
        self.top_slider.observe(lambda change: self.refresh(), names="value")
        self.widget = widgets.VBox([self.top_slider, self.box.widget])

    def refresh(self) -> None:
        """Redraw with the current number of communities."""
        self.figure = self._build()
        self.box.show(self.figure)

    def _build(self) -> go.Figure:
        return community_figure(self.communities, self.centrality, entries=self.bank.entries, top=self.top_slider.value)


def community_view(bank, *, top: int = 20) -> CommunityView:
    """Communities with labels and sizes, and the hubs (see :class:`CommunityView`).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.community_view(kb.open_bank("data/demo/engineering")).save_html("communities.html")  # doctest: +SKIP
    """
    return CommunityView(bank, top=top)

