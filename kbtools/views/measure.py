"""The views' cost for ``kb bench``: the 3D layout, the figure and its JSON at growing sizes
(measured, never asserted; a face, so it lives beside the views)."""

from __future__ import annotations

import time

from kbtools.demo import synthetic_bank
from kbtools.views.figures import graph_figure
from kbtools.views.layout import layout_3d

__all__ = ["bench_views"]


def bench_views(rows, *, sizes=(2_000, 10_000)) -> None:
    """Add the views' rows to a bench run (``rows.add(section, metric, value, unit, note=...)``)."""
    for size in sizes:
        demo = synthetic_bank(entries=size)
        start = time.perf_counter()
        layout = layout_3d(demo.entries, demo.edges)
        laid = time.perf_counter()
        fig = graph_figure(demo.entries, demo.edges, layout)
        built = time.perf_counter()
        payload = fig.to_json()
        done = time.perf_counter()
        tag = f"views {size // 1000}k"
        rows.add(tag, "3D layout (cached per bank version afterwards)", laid - start, "s",
                 note=f"{demo.edges.height} edges")
        rows.add(tag, "graph figure build", built - laid, "s")
        rows.add(tag, "figure to JSON", done - built, "s", note=f"{len(payload) / 1e6:.1f} MB")
