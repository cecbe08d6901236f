"""JupyterLab views of a bank: a cached 3D layout, pure plotly figure builders, thin ipywidgets over
them, and standalone offline HTML for sharing.

>>> from kbtools import views
>>> sorted(views.__all__)[:3]
['bank_layout', 'community_figure', 'community_view']
"""

from kbtools.views.export import save_html
from kbtools.views.figures import community_figure, graph_figure
from kbtools.views.flows import holes_figure
from kbtools.views.layout import bank_layout, layout_3d
from kbtools.views.widgets import community_view, explorer, graph_view, holes_view

__all__ = [
    "layout_3d",
    "bank_layout",
    "graph_figure",
    "holes_figure",
    "community_figure",
    "save_html",
    "explorer",
    "graph_view",
    "holes_view",
    "community_view",
]
