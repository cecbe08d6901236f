"""Confidence intervals for the evaluation reports: Wilson 95 % for proportions, a seeded
percentile bootstrap for means, and paired bootstrap draws of ratios of sums (a recovered share
over entries, and the difference between two arms on the same resamples).

Both are deterministic: the same counts (and, for the bootstrap, the same values and seed) give
the same interval. An empty sample has no estimate: the rate or mean is ``None`` and the interval
is the widest one (``(0.0, 1.0)`` for a proportion, ``(None, None)`` for a mean).

>>> lo, hi = wilson_interval(5, 10)
>>> round(lo, 4), round(hi, 4)
(0.2366, 0.7634)
>>> proportion(0, 10)["hi"] > 0.0   # no successes still leaves room above zero
True
>>> mean_summary([2.0, 2.0, 2.0], seed=1)
{'n': 3, 'mean': 2.0, 'lo': 2.0, 'hi': 2.0}
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from kbtools.errors import ValidationError

__all__ = ["Z95", "BOOTSTRAP_SAMPLES", "wilson_interval", "bootstrap_mean_interval", "bootstrap_ratios", "proportion",
           "mean_summary"]

#: The two-sided 95 % normal quantile.
Z95: float = 1.959963984540054
#: Resamples drawn by :func:`bootstrap_mean_interval` unless told otherwise.
BOOTSTRAP_SAMPLES: int = 2000


def wilson_interval(successes: int, n: int, *, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (95 % by default).

    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    >>> [round(x, 4) for x in wilson_interval(0, 10)]
    [0.0, 0.2775]
    >>> [round(x, 4) for x in wilson_interval(10, 10)]
    [0.7225, 1.0]
    """
    _check_counts(successes, n)
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean_interval(values: Sequence[float], *, seed: int = 0, samples: int = BOOTSTRAP_SAMPLES,
                            level: float = 0.95) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval of the mean, from ``samples`` resamples drawn with ``seed``.

    >>> bootstrap_mean_interval([1.0, 1.0])
    (1.0, 1.0)
    >>> bootstrap_mean_interval([0, 1, 0, 1], seed=3) == bootstrap_mean_interval([0, 1, 0, 1], seed=3)
    True
    >>> bootstrap_mean_interval([])
    (None, None)
    """
    if not isinstance(samples, int) or samples < 1:
        raise ValidationError("samples", samples, "the bootstrap draws at least one resample")
    if not 0.0 < level < 1.0:
        raise ValidationError("level", level, "a confidence level lies strictly between 0 and 1")
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return (None, None)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(samples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def proportion(successes: int, n: int) -> dict:
    """A proportion with its Wilson 95 % interval: ``{"k", "n", "rate", "lo", "hi"}``.

    >>> proportion(3, 4)["rate"]
    0.75
    >>> proportion(0, 0)["rate"] is None
    True
    """
    lo, hi = wilson_interval(successes, n)
    return {"k": int(successes), "n": int(n), "rate": successes / n if n else None, "lo": lo, "hi": hi}


def mean_summary(values: Sequence[float], *, seed: int = 0) -> dict:
    """A mean with its seeded bootstrap 95 % interval: ``{"n", "mean", "lo", "hi"}``.

    >>> mean_summary([], seed=0)
    {'n': 0, 'mean': None, 'lo': None, 'hi': None}
    """
    data = [float(v) for v in values]
    lo, hi = bootstrap_mean_interval(data, seed=seed)
    return {"n": len(data), "mean": float(np.mean(data)) if data else None, "lo": lo, "hi": hi}


def _check_counts(successes, n) -> None:
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValidationError(name, value, "a count is an integer >= 0")
    if successes > n:
        raise ValidationError("successes", successes, f"cannot exceed the number of trials ({n})")


def bootstrap_ratios(numerators, denominators, *, seed: int = 0, samples: int = BOOTSTRAP_SAMPLES) -> np.ndarray:
    """Seeded bootstrap draws of ratios of sums over units: ``numerators`` is ``(arms, units)``,
    ``denominators`` ``(units,)``; each draw resamples the units with replacement (the same units
    for every arm, so that differences between arms are paired) and gives ``sum(num) / sum(den)``
    per arm: an ``(arms, samples)`` array (nan where a draw's denominators sum to 0).

    >>> d = bootstrap_ratios([[1, 0, 1, 1], [1, 1, 1, 1]], [1, 1, 1, 1], seed=0, samples=200)
    >>> d.shape, bool((d[1] == 1.0).all()), bool((d[0] <= d[1]).all())
    ((2, 200), True, True)
    """
    if not isinstance(samples, int) or samples < 1:
        raise ValidationError("samples", samples, "the bootstrap draws at least one resample")
    num = np.atleast_2d(np.asarray(numerators, dtype=np.float64))
    den = np.asarray(denominators, dtype=np.float64)
    if num.shape[1] != den.shape[0]:
        raise ValidationError("numerators", num.shape, f"needs one column per unit ({den.shape[0]})")
    if den.size == 0:
        return np.full((num.shape[0], samples), np.nan)
    rng = np.random.default_rng(seed)
    out = np.empty((num.shape[0], samples))
    step = max(1, 4_000_000 // den.size)
    for lo in range(0, samples, step):
        idx = rng.integers(0, den.size, size=(min(step, samples - lo), den.size))
        d = den[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            for a in range(num.shape[0]):
                out[a, lo : lo + len(idx)] = np.where(d > 0, num[a][idx].sum(axis=1) / d, np.nan)
    return out
