"""The one fading rule of the bank: an automatic link loses half its weight after ``HALF_LIFE_DAYS``
days without being seen; trusted links never fade and weigh 1.0 (the store enforces it).

Every place that fades a link (the graph views, the decay job, the linker's degree cap) calls
:func:`fade` or :func:`faded_weight_expr` from here.

>>> fade(0.8, 180.0)
0.4
>>> import numpy as np
>>> fade(np.array([1.0, 1.0]), np.array([0.0, 360.0])).tolist()
[1.0, 0.25]
"""

from __future__ import annotations

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.vocab import FADING_SOURCES

__all__ = ["HALF_LIFE_DAYS", "fade", "faded_weight_expr"]

#: Fading links lose half their weight after this many days without being seen (seed 001, section 7).
HALF_LIFE_DAYS: float = 180.0


def fade(weight, age_days, *, half_life_days: float = HALF_LIFE_DAYS):
    """``weight * 0.5 ** (age_days / half_life_days)``, the age clipped at 0 (a link seen in the
    future does not grow). Takes numbers, numpy arrays or polars expressions."""
    if not half_life_days > 0:
        raise ValidationError("half_life_days", half_life_days, "must be a positive number of days")
    if type(age_days) is float and type(weight) is float:  # the linker's state asks this link by link
        return weight * 0.5 ** (max(age_days, 0.0) / half_life_days)
    if isinstance(age_days, pl.Expr) or isinstance(weight, pl.Expr):
        age = age_days if isinstance(age_days, pl.Expr) else pl.lit(age_days)
        return weight * pl.lit(0.5).pow(age.clip(lower_bound=0.0) / half_life_days)
    if np.ndim(age_days) == 0 and np.ndim(weight) == 0:
        return float(weight) * 0.5 ** (max(float(age_days), 0.0) / half_life_days)
    return np.asarray(weight, dtype=np.float64) * np.power(0.5, np.maximum(np.asarray(age_days, np.float64), 0.0)
                                                           / half_life_days)


def faded_weight_expr(age_days: pl.Expr, *, half_life_days: float = HALF_LIFE_DAYS) -> pl.Expr:
    """The faded weight of edges-table rows: fading sources fade from their stored weight (null
    counts as 1.0; an unknown age does not fade), trusted sources weigh 1.0."""
    weight = pl.col("weight").cast(pl.Float64).fill_null(1.0)
    faded = fade(weight, age_days.fill_null(0.0), half_life_days=half_life_days)
    return pl.when(pl.col("source").is_in(sorted(FADING_SOURCES))).then(faded).otherwise(1.0).cast(pl.Float64)
