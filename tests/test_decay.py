"""Fade, prune and reinforce arithmetic (seed 001, section 7)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, strategies as st

from kbtools.model.fading import faded_expr, faded_weight, plan_decay, plan_reinforce, reinforce
from kbtools.errors import ValidationError
from kbtools.model.schema import conform, empty

T = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _edges(rows):
    return conform(pl.DataFrame(rows, orient="row", schema=["src", "dst", "type", "source", "weight", "seen_at"]), "edges")


def test_half_life_halves_a_weight_seen_180_days_ago():
    seen = pl.Series([T], dtype=pl.Datetime("us", "UTC"))
    assert faded_weight([0.8], seen, T + dt.timedelta(days=180))[0] == pytest.approx(0.4)
    assert faded_weight([0.8], seen, T + dt.timedelta(days=360))[0] == pytest.approx(0.2)
    assert faded_weight([0.8], [0.0], 90.0, half_life_days=90)[0] == pytest.approx(0.4)


def test_trusted_sources_never_fade_and_the_future_does_not_grow():
    seen = pl.Series([T, T, T], dtype=pl.Datetime("us", "UTC"))
    out = faded_weight([1.0, 1.0, 0.5], seen, T + dt.timedelta(days=720), sources=["structure", "manual", "feedback"])
    assert out.tolist()[:2] == [1.0, 1.0] and out[2] == pytest.approx(0.5 / 16)
    assert faded_weight([0.5], [10.0], 0.0)[0] == 0.5


def test_faded_expr_agrees_with_faded_weight():
    e = _edges([("a", "b", "see_also", "auto", 0.7, T), ("a", "c", "cites", "author", 1.0, T)])
    now = T + dt.timedelta(days=77)
    expr = e.select(faded_expr(now))["faded"].to_numpy()
    arr = faded_weight(e["weight"], e["seen_at"], now, sources=e["source"])
    np.testing.assert_allclose(expr, arr)


def test_plan_decay_prunes_faded_and_dangling_links():
    e = _edges([
        ("a", "b", "see_also", "auto", 0.3, T),  # 0.3 / 4 after 360 days: pruned
        ("a", "c", "see_also", "auto", 0.9, T),  # 0.225: kept
        ("b", "c", "part_of", "structure", 1.0, T),  # never fades
        ("a", "x", "cites", "author", 1.0, T),  # x is gone
    ])
    plan = plan_decay(e, ["a", "b", "c"], now=T + dt.timedelta(days=360))
    assert plan.remove.select("dst", "reason").rows() == [("b", "faded"), ("x", "dangling")]
    assert plan.remove["faded"][0] == pytest.approx(0.075)
    assert plan.report == {"edges": 4, "faded": 1, "dangling": 1}


def test_reinforce_and_plan_reinforce():
    assert reinforce([0.0, 0.5, 1.0]).tolist() == pytest.approx([0.2, 0.6, 1.0])
    e = _edges([("a", "b", "see_also", "auto", 0.8, T), ("a", "c", "see_also", "auto", 0.8, T),
                ("a", "b", "cites", "author", 1.0, T)])
    now = T + dt.timedelta(days=180)
    out = plan_reinforce(e, ["a", "b"], now=now)
    assert out.select("dst", "type").rows() == [("b", "see_also")]
    assert out["weight"][0] == pytest.approx(0.4 + 0.2 * 0.6) and out["seen_at"][0] == now


@given(w=st.floats(0, 1), days=st.floats(0, 5000))
def test_fading_and_reinforcing_stay_in_unit_interval(w, days):
    f = faded_weight([w], [0.0], days)[0]
    assert 0.0 <= f <= w
    assert f <= reinforce(f) <= 1.0


def test_empty_input_and_bad_half_life():
    plan = plan_decay(empty("edges"), [], now=T)
    assert plan.remove.height == 0
    assert plan_reinforce(empty("edges"), [], now=T).height == 0
    with pytest.raises(ValidationError, match="half_life_days"):
        faded_weight([1.0], [0.0], 1.0, half_life_days=0)


def test_inputs_unchanged():
    e = _edges([("a", "b", "see_also", "auto", 0.3, T)])
    before = e.clone()
    plan_decay(e, ["a", "b"], now=T + dt.timedelta(days=999))
    plan_reinforce(e, ["a", "b"], now=T)
    assert e.equals(before)
