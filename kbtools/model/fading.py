"""The one fading rule of the bank: an automatic link loses half its weight after ``HALF_LIFE_DAYS``
days without being seen; trusted links never fade and weigh 1.0 (the store enforces it).

Every place that fades a link (the graph views, the decay job, the linker's degree cap) calls
:func:`fade` or :func:`faded_weight_expr` from here. Stored weights never change with time: the
faded weight is computed when read; ``plan_decay`` lists the links to prune, ``reinforce`` strengthens.

>>> fade(0.8, 180.0)
0.4
>>> import numpy as np
>>> fade(np.array([1.0, 1.0]), np.array([0.0, 360.0])).tolist()
[1.0, 0.25]
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.schema import SCHEMAS, conform
from kbtools.model.vocab import FADING_SOURCES

__all__ = ["HALF_LIFE_DAYS", "MIN_WEIGHT", "fade", "faded_weight_expr", "faded_weight", "faded_expr", "reinforce",
           "DecayPlan", "plan_decay", "plan_reinforce"]

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


#: Below this faded weight a link is pruned
MIN_WEIGHT = 0.1
_DAY_US = 86_400_000_000


def _days(seen_at, now) -> np.ndarray:
    """Days from seen_at to now; numbers are days already, datetimes are converted."""
    if isinstance(now, dt.datetime):
        seen = pl.Series(seen_at) if not isinstance(seen_at, pl.Series) else seen_at
        if seen.dtype == pl.Object or not isinstance(seen.dtype, pl.Datetime):
            seen = seen.cast(pl.Datetime("us", "UTC"))
        if now.tzinfo is None:
            now = now.replace(tzinfo=dt.timezone.utc)
        now_us = int(round(now.timestamp() * 1_000_000))
        us = seen.dt.replace_time_zone(None).dt.epoch("us") if seen.dtype.time_zone is None else seen.dt.epoch("us")
        us = us.to_numpy().astype(np.float64)
        return np.where(np.isnan(us), 0.0, (now_us - np.nan_to_num(us)) / _DAY_US)
    return np.asarray(now, np.float64) - np.asarray(seen_at, np.float64)


def faded_weight(weights, seen_at, now, *, half_life_days: float = HALF_LIFE_DAYS, sources=None) -> np.ndarray:
    """``w * 0.5 ** (days since seen / half_life_days)``; trusted sources and unseen links keep w.

    ``seen_at``/``now`` are datetimes (a Series and a datetime) or numbers of days. With ``sources``,
    only fading sources (auto, feedback, review) fade. A link seen in the future does not grow.

    >>> import datetime as dt, polars as pl
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> seen = pl.Series([t, t], dtype=pl.Datetime("us", "UTC"))
    >>> faded_weight([0.6, 1.0], seen, t + dt.timedelta(days=360), sources=["auto", "manual"]).round(3)
    array([0.15, 1.  ])
    """
    if half_life_days <= 0:
        raise ValidationError("half_life_days", half_life_days, "must be positive")
    w = np.asarray(weights, dtype=np.float64)
    out = fade(w, _days(seen_at, now), half_life_days=half_life_days)
    if sources is not None:
        fading = np.isin(np.asarray(list(sources), dtype=object), list(FADING_SOURCES))
        out = np.where(fading, out, w)
    return out


def faded_expr(now: dt.datetime, *, half_life_days: float = HALF_LIFE_DAYS) -> pl.Expr:
    """A polars expression of the faded weight of edges-table rows (trusted rows keep their weight).

    >>> import datetime as dt, polars as pl
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> e = pl.DataFrame({"weight": [0.8], "source": ["auto"], "seen_at": [t]})
    >>> e.select(faded_expr(t + dt.timedelta(days=180)))["faded"].round(3).to_list()
    [0.4]
    """
    days = (pl.lit(now) - pl.col("seen_at")).dt.total_microseconds() / _DAY_US
    return faded_weight_expr(days, half_life_days=half_life_days).alias("faded")


def reinforce(weights, *, rate: float = 0.2):
    """Hebbian strengthening: ``w + rate * (1 - w)``.

    >>> reinforce([0.0, 0.5, 1.0]).tolist()
    [0.2, 0.6, 1.0]
    """
    w = np.asarray(weights, dtype=np.float64)
    return w + rate * (1.0 - w)


@dataclass(frozen=True)
class DecayPlan:
    """Links to prune (edges-schema rows plus ``reason``: "faded" or "dangling", and ``faded``)."""

    remove: pl.DataFrame
    report: dict


def plan_decay(edges: pl.DataFrame, entry_ids, *, now: dt.datetime, half_life_days: float = HALF_LIFE_DAYS,
               min_weight: float = MIN_WEIGHT) -> DecayPlan:
    """Links whose faded weight is below ``min_weight`` and links to entries that no longer exist.

    >>> import datetime as dt, polars as pl
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> e = pl.DataFrame({"src": ["a", "a"], "dst": ["b", "x"], "type": ["see_also", "cites"],
    ...                   "source": ["auto", "author"], "weight": [0.3, 1.0], "seen_at": [t, t]})
    >>> plan_decay(e, ["a", "b"], now=t + dt.timedelta(days=365)).remove["reason"].to_list()
    ['faded', 'dangling']
    """
    if not isinstance(edges, pl.DataFrame):
        raise ValidationError("edges", type(edges).__name__, "must be a polars DataFrame")
    edges = conform(edges, "edges")
    ids = pl.Series("id", list(entry_ids), dtype=pl.String)
    scored = edges.with_columns(faded_expr(now, half_life_days=half_life_days))
    dangling = ~(pl.col("src").is_in(ids.implode()) & pl.col("dst").is_in(ids.implode()))
    reason = pl.when(dangling).then(pl.lit("dangling")).when(pl.col("faded") < min_weight).then(pl.lit("faded"))
    remove = scored.with_columns(reason.alias("reason")).filter(pl.col("reason").is_not_null())
    remove = remove.select(*SCHEMAS["edges"], "reason", "faded")
    return DecayPlan(remove=remove, report={"edges": edges.height, "faded": int((remove["reason"] == "faded").sum()),
                                            "dangling": int((remove["reason"] == "dangling").sum())})


def plan_reinforce(edges: pl.DataFrame, ids, *, now: dt.datetime, rate: float = 0.2,
                   half_life_days: float = HALF_LIFE_DAYS) -> pl.DataFrame:
    """The fading links among ``ids`` (used together, successfully) with weight
    ``f + rate (1 - f)`` of their faded weight f and ``seen_at = now``; replace those rows.

    >>> import datetime as dt, polars as pl
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> e = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["see_also"], "source": ["auto"],
    ...                   "weight": [0.5], "seen_at": [t]})
    >>> plan_reinforce(e, ["a", "b"], now=t)["weight"].to_list()
    [0.6]
    """
    edges = conform(edges, "edges")
    ids = pl.Series("id", list(ids), dtype=pl.String).implode()
    chosen = edges.filter(pl.col("src").is_in(ids) & pl.col("dst").is_in(ids) & pl.col("source").is_in(list(FADING_SOURCES)))
    f = chosen.select(faded_expr(now, half_life_days=half_life_days))["faded"].to_numpy()
    return chosen.with_columns(pl.Series("weight", reinforce(f, rate=rate)), pl.lit(now).cast(SCHEMAS["edges"]["seen_at"]).alias("seen_at"))
