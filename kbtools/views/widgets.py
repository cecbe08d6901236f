"""Thin JupyterLab widgets over the pure figure builders: explorer, graph, holes and communities views.

Each view **is** an ipywidgets container (a ``VBox``), so it displays on its own and composes with other
widgets: ``widgets.VBox([kb.explorer(bank), kb.graph_view(bank)])``. Its state lives in plain
attributes (the controls, ``.figure``, the current ``.answer``), so tests drive a view by setting
widget values and reading them back.

- ``view.figure`` is the figure on screen: a plotly ``FigureWidget`` (updated in place under
  ``batch_update()``), so ``view.figure.update_layout(title="…")`` changes what the notebook shows.
  Without the ``anywidget`` package it is a ``go.Figure`` drawn into an ``Output``: edit it, then
  call ``view.redraw()``.
- An error inside a callback (a bad query, a locked bank) shows inside the view, in the
  ``KbError``'s own words (``view.error`` holds the exception); a call from code still raises.
- The display bundle carries ``text/html`` too (the answer, the holes table, the communities), so a
  saved notebook shows something on nbviewer and GitHub, where no kernel runs the widgets.
- ``view.save_html(path)`` writes the figure as a standalone offline page.

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.explorer(kb.open_bank("data/demo/engineering"))  # doctest: +SKIP
"""

from __future__ import annotations

import html
import os
from typing import Callable

import ipywidgets as widgets
import plotly.graph_objects as go
import polars as pl
from IPython.display import display

from kbtools.errors import KbError
from kbtools.model.answer_html import MUTED_TEXT, html_table, jp
from kbtools.ops import analytics
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.views.answer_html import answer_html, compare_html, entry_detail_html, holes_table_html
from kbtools.views.export import save_html
from kbtools.views.figures import COLOR_BY, community_figure, graph_figure
from kbtools.views.flows import holes_figure
from kbtools.views.layout import bank_layout

__all__ = ["explorer", "graph_view", "holes_view", "community_view", "Explorer", "GraphView", "HolesView",
           "CommunityView", "HOLE_SORT_KEYS", "sort_holes", "error_html"]

#: Sort keys of the holes table (severity sorts high, medium, low).
HOLE_SORT_KEYS = ("severity", "flow", "hole", "title")

_HINT = ("<p style='color:{muted}'><small>kbtools {name}: interactive in a notebook with a running kernel "
         "(JupyterLab, VS Code, Colab); this is its static copy. <code>view.save_html(path)</code> writes "
         "the figure as an offline page.</small></p>")


def error_html(error: BaseException) -> str:
    """An error as a view shows it: a kbtools error in its own words (it names the value and the rule);
    anything else with its type, as a bug to report.

    >>> from kbtools.errors import ValidationError
    >>> "a query is a non-empty string" in error_html(ValidationError("text", "", "a query is a non-empty string"))
    True
    """
    if isinstance(error, KbError):
        text = f"{type(error).__name__}: {error}"
    else:
        text = f"{type(error).__name__}: {error} (unexpected: a bug in kbtools or in your callback)"
    return (f"<div class='kb-error' style='color:{jp('error-color1', '#d32f2f')};"
            f"border-left:3px solid {jp('error-color1', '#d32f2f')};padding:2px 8px;margin:4px 0'>"
            f"{html.escape(text)}</div>")


class _View(widgets.VBox):
    """Common plumbing: an error line on top, ``.figure`` (the one displayed), ``.save_html(path)``,
    ``redraw()`` and the static ``text/html`` copy in the display bundle."""

    _kind = "view"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.error: BaseException | None = None
        self.error_html = widgets.HTML("", layout=widgets.Layout(display="none"))
        self.box: _FigureBox | None = None

    @property
    def widget(self) -> widgets.Widget:
        """The view itself (it is a widget; kept for code written when views wrapped one)."""
        return self

    @property
    def figure(self):
        """The figure on screen (a ``FigureWidget``; a ``go.Figure`` without anywidget: call ``redraw()``)."""
        return None if self.box is None else self.box.figure

    def redraw(self) -> None:
        """Show ``view.figure`` again after editing it (needed only without a ``FigureWidget``)."""
        if self.box is not None:
            self.box.redraw()

    def static_figure(self) -> go.Figure:
        """The figure as a plain ``go.Figure`` (edits made to ``view.figure`` included)."""
        return go.Figure(self.figure)

    def save_html(self, path: str | os.PathLike):
        """Write the current figure as a standalone offline HTML page; returns the path."""
        return save_html(self.static_figure(), path)

    def static_html(self) -> str:
        """What a page without a kernel shows (nbviewer, GitHub): plain HTML, no script."""
        return _HINT.format(muted=MUTED_TEXT, name=self._kind)

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = f"<div class='kb-static'>{self.static_html()}</div>"
        return bundle

    def __repr__(self) -> str:
        return f"<kbtools {self._kind} of {getattr(self.bank, 'path', self.bank)}>"

    def _compose(self, *children: widgets.Widget) -> None:
        self.children = (self.error_html, *children)

    def _run(self, fn: Callable, *args, reraise: bool = False):
        """Run ``fn``; an error shows in the view (and is raised again when code, not a click, called)."""
        try:
            result = fn(*args)
        except Exception as error:  # shown in the view: a callback's exception is otherwise invisible
            self.error = error
            self.error_html.value = error_html(error)
            self.error_html.layout.display = None
            if reraise:
                raise
            return None
        self.error = None
        self.error_html.value = ""
        self.error_html.layout.display = "none"
        return result

    def _on(self, fn: Callable) -> Callable:
        """A callback for ``observe``/``on_click`` that shows its errors in the view."""
        return lambda *_: self._run(fn)


class _FigureBox:
    """One figure object for the life of a view: a FigureWidget updated in place when anywidget is
    installed, else a ``go.Figure`` re-displayed in an Output."""

    def __init__(self, figure: go.Figure):
        try:
            self.figure = go.FigureWidget(data=figure.data, layout=figure.layout)
            self.widget = self.figure
            self.live = True
        except ImportError:
            self.figure = go.Figure(figure)
            self.widget = widgets.Output()
            self.live = False
            self.redraw()

    def show(self, figure: go.Figure) -> None:
        """Put ``figure``'s traces and layout into the displayed figure (the same object stays)."""
        fig = self.figure
        with fig.batch_update():
            same = len(fig.data) == len(figure.data) and all(a.type == b.type for a, b in zip(fig.data, figure.data))
            if same:
                for old, new in zip(fig.data, figure.data):
                    old.update(new.to_plotly_json(), overwrite=True)
            else:
                fig.data = []
                fig.add_traces(list(figure.data))
            fig.layout = figure.layout
        if not self.live:
            self.redraw()

    def redraw(self) -> None:
        if self.live:
            return
        self.widget.clear_output(wait=True)
        with self.widget:
            display(self.figure)


# -- explorer ------------------------------------------------------------------------------------

class Explorer(_View):
    """Ask the bank and read the answer as the agent reads it; pick a result to see its links and events.

    Controls: ``query_box``, ``ask_button``, ``fold_toggle``, ``k_slider``, ``lexical_toggle``,
    ``compare_toggle`` (flat beside folded), ``result_select``. Output: ``output_html`` (the answer),
    ``detail_html`` (the selected entry's edges and events), ``error_html`` (a failed query, in the
    KbError's words). State: ``answer`` (and ``flat_answer`` in compare mode), ``error``. The explorer
    has no figure of its own: ``explorer.graph()`` is the 3D view with the current answer lit.
    """

    _kind = "explorer"

    def __init__(self, bank, *, query_fn: Callable | None = None, k: int = 8):
        super().__init__()
        self.bank = bank
        self.query_fn = query_fn or _default_query(bank)
        self.answer = None
        self.flat_answer = None
        self._asking = False
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
        self.query_box.observe(lambda change: None if self._asking else self._run(self._ask), names="value")
        self.ask_button.on_click(self._on(self._ask))
        for control in (self.fold_toggle, self.k_slider, self.lexical_toggle, self.compare_toggle):
            control.observe(self._on(lambda: self._ask() if self.query_box.value.strip() else None), names="value")
        self.result_select.observe(lambda change: self._run(self.show_entry, change["new"]), names="value")
        controls = widgets.HBox([self.fold_toggle, self.k_slider, self.lexical_toggle, self.compare_toggle])
        self._compose(widgets.HBox([self.query_box, self.ask_button]), controls, self.output_html,
                      self.result_select, self.detail_html)

    def ask(self, text: str | None = None):
        """Run the query in the box (or ``text``, which is put in the box) with the current settings.
        An error shows in the view and is raised."""
        if text is not None and text != self.query_box.value:
            self._asking = True
            try:
                self.query_box.value = text
            finally:
                self._asking = False
        return self._run(self._ask, reraise=True)

    def _ask(self):
        text = self.query_box.value.strip()
        if not text:
            return None
        options = {"k": self.k_slider.value, "lexical": self.lexical_toggle.value}
        if self.compare_toggle.value:
            flat = self.query_fn(text, fold=False, **options)
            folded = self.query_fn(text, fold=True, **options)
            self.flat_answer, self.answer = flat, folded
            self.output_html.value = compare_html(flat, folded)
        else:
            answer = self.query_fn(text, fold=self.fold_toggle.value, **options)
            self.flat_answer, self.answer = None, answer
            self.output_html.value = answer_html(answer)
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
    def figure(self):
        """None: the explorer shows HTML; ``explorer.graph().figure`` is its answer in 3D."""
        return None

    def save_html(self, path: str | os.PathLike):
        """The 3D view with the current answer lit, and the answer below it, as one offline page."""
        view = self.graph()
        return save_html(view.static_figure(), path, extra_html=answer_html(self.answer) if self.answer else None)

    def static_html(self) -> str:
        body = answer_html(self.answer) if self.answer is not None else "<p><i>No question asked yet.</i></p>"
        return (f"<p><b>kbtools explorer</b> <code>{html.escape(str(self.bank.path))}</code></p>" + body
                + super().static_html())

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
    """The 3D constellation view: ``color_dropdown`` (community or kind), ``answer``, ``figure`` (the
    displayed figure, without the particles: a FigureWidget cannot animate). ``build_figure()`` is the
    full figure with the particle frames, which ``save_html`` writes; ``positions`` the cached layout.
    """

    _kind = "graph view"

    def __init__(self, bank, *, answer=None, color_by: str = "community", max_nodes: int = 10000, seed: int = 0):
        super().__init__()
        self.bank = bank
        self.answer = answer
        self.max_nodes = max_nodes
        self.seed = seed
        self.positions = bank_layout(bank, seed=seed)
        self.communities = analytics.communities(bank)
        self.color_dropdown = widgets.Dropdown(options=list(COLOR_BY), value=color_by, description="colour by")
        self.box = _FigureBox(_without_frames(self.build_figure()))
        self.color_dropdown.observe(self._on(self.refresh), names="value")
        self._compose(self.color_dropdown, self.box.widget)

    def set_answer(self, answer) -> None:
        """Light another answer (None: the whole bank, unlit)."""
        self.answer = answer
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the figure from the current settings and show it."""
        self.box.show(_without_frames(self.build_figure()))

    def static_figure(self) -> go.Figure:
        """The displayed figure (edits included) with the particle frames and their play button."""
        full = self.build_figure()
        fig = go.Figure(self.figure)
        fig.frames = full.frames
        fig.layout.updatemenus = full.layout.updatemenus
        return fig

    def static_html(self) -> str:
        lit = answer_html(self.answer) if self.answer is not None else ""
        head = (f"<p><b>kbtools graph view</b> <code>{html.escape(str(self.bank.path))}</code>: "
                f"{self.bank.entries.height:,} entries, {self.bank.edges.height:,} links, "
                f"coloured by {html.escape(self.color_dropdown.value)}</p>")
        return head + lit + super().static_html()

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

    def build_figure(self) -> go.Figure:
        """The full figure for the current settings (a new ``go.Figure``, particle frames included)."""
        return graph_figure(self.bank.entries, self._edges(), self.positions, answer=self.answer,
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

    _kind = "holes view"

    def __init__(self, bank, *, flow: str | None = None):
        super().__init__()
        self.bank = bank
        self.all_holes = analytics.workflow_holes(bank)
        flows = sorted(analytics.process_flows(bank)["flow"].to_list())
        self.flow_dropdown = widgets.Dropdown(options=["all", *flows], value=flow or "all", description="flow")
        self.sort_dropdown = widgets.Dropdown(options=list(HOLE_SORT_KEYS), value="severity", description="sort by")
        self.table_html = widgets.HTML()
        self.box = _FigureBox(self.build_figure())
        self._fill_table()
        self.flow_dropdown.observe(self._on(self.refresh), names="value")
        self.sort_dropdown.observe(self._on(self._fill_table), names="value")
        table = widgets.VBox([self.sort_dropdown, self.table_html],
                             layout=widgets.Layout(width="40%", max_height="900px", overflow="auto"))
        diagram = widgets.Box([self.box.widget], layout=widgets.Layout(width="60%"))
        self._compose(self.flow_dropdown, widgets.HBox([diagram, table]))

    @property
    def flow(self) -> str | None:
        return None if self.flow_dropdown.value == "all" else self.flow_dropdown.value

    def refresh(self) -> None:
        """Redraw the diagram and the table for the chosen flow."""
        self.box.show(self.build_figure())
        self._fill_table()

    def save_html(self, path: str | os.PathLike):
        """The diagram and the holes table as one standalone offline HTML page."""
        return save_html(self.static_figure(), path, extra_html=holes_table_html(self.holes))

    def static_html(self) -> str:
        head = (f"<p><b>kbtools holes view</b> <code>{html.escape(str(self.bank.path))}</code>, flow "
                f"{html.escape(self.flow_dropdown.value)}</p>")
        return head + holes_table_html(self.holes) + super().static_html()

    def build_figure(self) -> go.Figure:
        """The diagram for the chosen flow (a new ``go.Figure``)."""
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

    _kind = "community view"

    def __init__(self, bank, *, top: int = 20):
        super().__init__()
        self.bank = bank
        self.communities = analytics.communities(bank)
        self.centrality = analytics.centrality(bank)
        self.top_slider = widgets.IntSlider(value=top, min=5, max=60, step=5, description="top")
        self.box = _FigureBox(self.build_figure())
        self.top_slider.observe(self._on(self.refresh), names="value")
        self._compose(self.top_slider, self.box.widget)

    def refresh(self) -> None:
        """Redraw with the current number of communities."""
        self.box.show(self.build_figure())

    def static_html(self) -> str:
        sizes = (self.communities.filter(pl.col("community") >= 0).group_by("community")
                 .agg(pl.len().alias("size"), pl.col("label").first())
                 .sort(["size", "community"], descending=[True, False]).head(self.top_slider.value))
        table = html_table(["community", "entries", "label"], sizes.select("community", "size", "label").rows(),
                           caption=f"the {sizes.height} largest communities")
        return (f"<p><b>kbtools community view</b> <code>{html.escape(str(self.bank.path))}</code></p>" + table
                + super().static_html())

    def build_figure(self) -> go.Figure:
        """The community figure for the current slider (a new ``go.Figure``)."""
        return community_figure(self.communities, self.centrality, entries=self.bank.entries, top=self.top_slider.value)


def community_view(bank, *, top: int = 20) -> CommunityView:
    """Communities with labels and sizes, and the hubs (see :class:`CommunityView`).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.views.community_view(kb.open_bank("data/demo/engineering")).save_html("communities.html")  # doctest: +SKIP
    """
    return CommunityView(bank, top=top)

