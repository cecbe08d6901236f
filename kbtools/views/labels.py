"""Labels of lit results in the 3D view that do not overlap: each label takes the first of eight
places around its point (above, below, right, left, then the corners) whose box touches no lit point
and no label already placed, in rank order; a label with no free place, and every label past
``limit``, is left to the hover. Pure: numpy arrays in, positions out.

The boxes are laid out on the screen of the view's opening camera (plotly's perspective, field of
view 45°); turning the scene can make labels meet again, which is the price of a rotatable view.

>>> import numpy as np
>>> xy = np.array([[0.0, 0.0], [0.0, 0.0], [300.0, 0.0]])  # two results on one spot, one far away
>>> place_labels(xy, [80, 80, 80])
['top center', 'bottom center', 'top center']
"""

from __future__ import annotations

import numpy as np

__all__ = ["LABEL_LIMIT", "TEXT_POSITIONS", "place_labels", "label_box", "project"]

#: Past this many results, labels are hover-only (the answer's top ranks keep theirs).
LABEL_LIMIT = 10
#: Where a label may sit around its point, in order of preference (plotly's ``textposition`` values).
TEXT_POSITIONS = ("top center", "bottom center", "middle right", "middle left",
                  "top right", "top left", "bottom right", "bottom left")
_FOVY = np.pi / 4  # plotly's 3D camera


def label_box(x: float, y: float, width: float, position: str, *, height: float = 14.0,
              radius: float = 8.0) -> tuple[float, float, float, float]:
    """The screen box (x0, y0, x1, y1; y up) of a label of ``width`` px at ``position`` around (x, y).

    >>> label_box(0, 0, 40, "middle right")
    (8.0, -7.0, 48.0, 7.0)
    """
    vertical, horizontal = position.split()
    if horizontal == "center":
        x0 = x - width / 2
    elif horizontal == "right":
        x0 = x + radius
    else:
        x0 = x - radius - width
    if vertical == "top":
        y0 = y + radius
    elif vertical == "bottom":
        y0 = y - radius - height
    else:
        y0 = y - height / 2
    return (float(x0), float(y0), float(x0 + width), float(y0 + height))


def place_labels(xy: np.ndarray, widths, *, height: float = 14.0, radius: float = 8.0,
                 limit: int = LABEL_LIMIT) -> list[str | None]:
    """A ``textposition`` per point (screen px, rank order), or None where the label is hover-only.

    >>> place_labels(np.zeros((3, 2)), [50, 50, 50], limit=2)[2] is None
    True
    """
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    points = [(x - radius, y - radius, x + radius, y + radius) for x, y in xy]
    placed: list[tuple[float, float, float, float]] = []
    out: list[str | None] = []
    for n, ((x, y), width) in enumerate(zip(xy, widths)):
        choice = None
        if n < limit:
            for position in TEXT_POSITIONS:
                box = label_box(x, y, width, position, height=height, radius=radius)
                if not any(_overlap(box, other) for other in placed) and not any(
                        _overlap(box, p) for m, p in enumerate(points) if m != n):
                    choice = position
                    placed.append(box)
                    break
        out.append(choice)
    return out


def project(xyz: np.ndarray, eye: dict, *, height_px: float = 720.0, bounds: np.ndarray | None = None) -> np.ndarray:
    """Screen px (x right, y up) of 3D points as the opening camera of a plotly scene with
    ``aspectmode="data"`` shows them: the data box scaled to unit size, seen from ``eye`` towards its
    centre in perspective. ``bounds``: the scene's points (all drawn entries), by default ``xyz``.

    >>> p = project(np.array([[0.0, 0, 0], [1, 0, 0]]), {"x": 0, "y": -2, "z": 0})
    >>> bool(p[1, 0] > p[0, 0]), float(abs(p[0, 1])) < 1e-9
    (True, True)
    """
    xyz = np.asarray(xyz, dtype=float).reshape(-1, 3)
    if len(xyz) == 0:
        return np.zeros((0, 2))
    scene = xyz if bounds is None or len(bounds) == 0 else np.asarray(bounds, dtype=float).reshape(-1, 3)
    lo, hi = scene.min(axis=0), scene.max(axis=0)
    scale = float((hi - lo).max()) or 1.0
    points = (xyz - (lo + hi) / 2) / scale
    camera = np.array([eye["x"], eye["y"], eye["z"]], dtype=float)
    forward = -camera / (np.linalg.norm(camera) or 1.0)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    if np.linalg.norm(right) < 1e-9:  # looking straight down
        right = np.array([1.0, 0.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rel = points - camera
    depth = np.maximum(rel @ forward, 1e-6)
    pixels = (height_px / 2) / np.tan(_FOVY / 2)
    return np.column_stack([rel @ right / depth, rel @ up / depth]) * pixels


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
