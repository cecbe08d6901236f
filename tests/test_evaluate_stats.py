"""Confidence intervals of the evaluation reports, checked on hand examples and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbtools.errors import ValidationError
from kbtools.evaluate.intervals import bootstrap_mean_interval, mean_summary, proportion, wilson_interval


@pytest.mark.parametrize("k, n, lo, hi", [
    (5, 10, 0.2366, 0.7634),   # symmetric around 0.5
    (0, 10, 0.0, 0.2775),      # no successes: the upper bound is still above zero
    (10, 10, 0.7225, 1.0),
    (8, 20, 0.2188, 0.6134),
    (1, 1, 0.2065, 1.0),
])
def test_wilson_matches_hand_computed_values(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_wilson_by_the_formula():
    # p = 0.3, n = 50: centre (p + z^2/2n)/(1 + z^2/n), half-width z/(1+z^2/n)*sqrt(p(1-p)/n + z^2/4n^2)
    z, p, n = 1.959963984540054, 0.3, 50
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(15, 50) == pytest.approx((centre - half, centre + half))


def test_empty_sample_has_no_estimate():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert proportion(0, 0) == {"k": 0, "n": 0, "rate": None, "lo": 0.0, "hi": 1.0}
    assert mean_summary([], seed=1) == {"n": 0, "mean": None, "lo": None, "hi": None}


@pytest.mark.parametrize("k, n", [(-1, 3), (4, 3), (1.5, 3), (True, 3)])
def test_bad_counts_are_refused(k, n):
    with pytest.raises(ValidationError):
        wilson_interval(k, n)


def test_bootstrap_is_seeded():
    values = [0.13, 1.7, 0.41, 2.93, 0.05, 5.2]
    assert bootstrap_mean_interval(values, seed=7) == bootstrap_mean_interval(values, seed=7)
    assert bootstrap_mean_interval(values, seed=7, samples=50) != bootstrap_mean_interval(values, seed=8, samples=50)


def test_bootstrap_hand_examples():
    assert bootstrap_mean_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    # one value of two: every resample mean is 0, 0.5 or 1, so the percentile bounds are among them
    lo, hi = bootstrap_mean_interval([0.0, 1.0], seed=0)
    assert lo == 0.0 and hi == 1.0
    # by hand with numpy: the same resamples, the same percentiles
    data = np.array([1.0, 4.0, 2.0])
    rng = np.random.default_rng(3)
    means = data[rng.integers(0, 3, size=(2000, 3))].mean(axis=1)
    assert bootstrap_mean_interval(data, seed=3) == tuple(np.percentile(means, [2.5, 97.5]))


def test_bootstrap_refuses_bad_options():
    with pytest.raises(ValidationError):
        bootstrap_mean_interval([1.0], samples=0)
    with pytest.raises(ValidationError):
        bootstrap_mean_interval([1.0], level=1.0)


@given(st.integers(0, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_holds_the_rate(kn):
    k, n = kn
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= hi <= 1.0
    if n:
        assert lo - 1e-12 <= k / n <= hi + 1e-12


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=30), st.integers(0, 2**31))
def test_bootstrap_interval_lies_within_the_data(values, seed):
    lo, hi = bootstrap_mean_interval(values, seed=seed, samples=200)
    assert min(values) - 1e-9 <= lo <= hi <= max(values) + 1e-9


def test_input_left_unchanged():
    values = [3.0, 1.0, 2.0]
    mean_summary(values, seed=0)
    assert values == [3.0, 1.0, 2.0]
