"""kbtools.model.rules: the rules every write and every check applies, on hand-made frames."""

from __future__ import annotations

import polars as pl
import pytest

from kbtools.errors import EdgeRuleError, ValidationError
from kbtools.model.rules import cast_to_schema, check_edges, problems_edges, problems_entries
from kbtools.model.schema import SCHEMAS, empty

A, B = "a1b2c3d4", "b2c3d4e5"


def _edges(**cols) -> pl.DataFrame:
    base = {"src": [B], "dst": [A], "type": ["clarifies"], "source": ["author"], "weight": [1.0]}
    return pl.DataFrame({**base, **cols})


def test_a_sound_edge_has_no_problem_and_passes_the_check():
    assert problems_edges(_edges(), {A, B}) == []
    check_edges(_edges(), {A, B})


@pytest.mark.parametrize("cols, rule", [
    ({"dst": [B]}, "itself"),
    ({"type": ["cousin_of"]}, "cousin_of"),
    ({"source": ["gossip"]}, "gossip"),
    ({"weight": [0.5]}, "trusted edges have weight 1.0"),
])
def test_each_broken_edge_rule_is_named(cols, rule):
    problems = [str(p) for p in problems_edges(_edges(**cols), {A, B})]
    assert problems and any(rule in p for p in problems)
    with pytest.raises(EdgeRuleError):
        check_edges(_edges(**cols), {A, B})


def test_an_edge_to_a_missing_entry_and_a_duplicate_are_refused():
    with pytest.raises(EdgeRuleError, match="0badf00d"):
        check_edges(_edges(dst=["0badf00d"]), {A, B})
    with pytest.raises(EdgeRuleError):
        check_edges(_edges(), {A, B}, existing=_edges())


def test_entries_problems_name_the_row():
    bad = empty("entries").vstack(pl.DataFrame([{c: None for c in SCHEMAS["entries"]}], schema=SCHEMAS["entries"]))
    problems = problems_entries(bad)
    assert problems and all(p.row == 0 for p in problems)


def test_cast_to_schema_casts_what_loses_nothing_and_names_the_rest():
    frame = pl.DataFrame({"id": [A], "systems": [[]], "usage_count": [3.0]})
    out = cast_to_schema(frame, "entries")
    assert out.schema["systems"] == SCHEMAS["entries"]["systems"] and out["usage_count"].to_list() == [3]
    with pytest.raises(ValidationError, match="weight"):
        cast_to_schema(pl.DataFrame({"weight": ["high"]}), "edges")
