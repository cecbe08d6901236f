"""``kbtools.model.frames``: the shared expressions say what the plain polars ones say."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kbtools.model.frames import FEW_VALUES, among, rows_where


def _chunked(rng: random.Random) -> pl.DataFrame:
    """A frame of ids held in several chunks, with nulls, as a table a process appended to."""
    parts = [pl.DataFrame({"src": [rng.choice([None, *(f"e{i:03d}" for i in range(40))]) for _ in range(50)],
                           "n": list(range(k * 50, k * 50 + 50))}) for k in range(5)]
    return pl.concat(parts, rechunk=False)


@pytest.mark.parametrize("count", [0, 1, 2, FEW_VALUES, FEW_VALUES + 1, 30])
def test_among_keeps_the_rows_is_in_keeps_for_few_and_many_values(count):
    rng = random.Random(count)
    frame = _chunked(rng)
    values = [f"e{rng.randrange(60):03d}" for _ in range(count)] + [None]
    wanted = [v for v in values if v is not None]
    expected = frame.filter(pl.col("src").is_in(pl.Series(wanted, dtype=pl.String).implode()))
    assert_frame_equal(frame.filter(among("src", values)), expected)
    assert_frame_equal(frame.filter(among("src", pl.Series(values))), expected)
    assert_frame_equal(frame.filter(~among("src", values)), frame.filter(~pl.col("src").is_in(pl.Series(wanted, dtype=pl.String).implode())))


def test_rows_where_gives_what_a_row_index_and_a_filter_give_on_a_chunked_frame():
    frame = _chunked(random.Random(7))
    assert frame.n_chunks() > 1
    predicate = among("src", ["e001", "e017", "e033"])
    expected = frame.with_row_index("_pos").filter(predicate)
    got = rows_where(frame, predicate)
    assert_frame_equal(got.select(expected.columns), expected)
    assert rows_where(frame, among("src", []), columns=["src"]).columns == ["src", "_pos"]
    assert rows_where(frame, among("src", [])).height == 0
