"""Answer, Result and Pointer: rendering for agents (text), analysts (frame), notebooks (HTML), JSON."""

from __future__ import annotations

import dataclasses
import json
import re

import polars as pl
import pytest

from kbtools.model.answer import ANSWER_FRAME_SCHEMA, POINTER_LINES, Answer, Pointer, Result


def sample() -> Answer:
    stale = Pointer("b0000002", "corrects", "out", "The retry caveat there is stale.",
                    "Dispatch retries on failure.", source="author", title="Dispatch retries")
    deep = Pointer("c0000003", "split_from", "in", None, "Weekend dispatch.", via="d0000004",
                   source="judge", title="Weekend dispatch")
    hop = Pointer("e0000005", "cites", "out", "Admin API path, no browser.", "Start a session via the API.",
                  kind="neighbor", source="citation_backfill", title="Programmatic flow")
    first = Result("a0000001", 1, 0.91, title="Dated dispatch <label>", summary="Use the dated label & wait.",
                   related=[stale, deep], neighbors=[hop], entry_kind="knowledge", pool_rank=1)
    second = Result("f0000006", 2, 0.5, title="Login recipe", summary="Log in with Playwright.",
                    steps=["open /login", "post the form"], entry_kind="playbook", pool_rank=3)
    return Answer("table this card", [first, second], folded=True)


def test_text_is_numbered_with_summaries_steps_and_pointer_lines():
    text = sample().text()
    assert text.splitlines() == [
        "Answer for: table this card",
        "1. Dated dispatch <label> [a0000001]",
        "  Use the dated label & wait.",
        "  ↳ folded: b0000002 corrects (out) — The retry caveat there is stale. — Dispatch retries on failure.",
        "  ↳ folded: c0000003 split_from (in) via d0000004 — Weekend dispatch.",
        "  ↳ neighbor: e0000005 cites (out) — Admin API path, no browser. — Start a session via the API.",
        "2. Login recipe [f0000006] (playbook)",
        "  Log in with Playwright.",
        "  Steps:",
        "    1. open /login",
        "    2. post the form",
    ]
    assert sample().text() == text
    assert str(sample()) == text


def test_a_result_with_many_folded_pointers_names_the_rest_by_id_on_one_line():
    # a document bank's citations fold dozens of pool entries into one result
    folded = [Pointer(f"p{i:07d}", "cites" if i % 3 else "part_of", "in", None, f"Section {i} says this.")
              for i in range(POINTER_LINES + 5)]
    near = Pointer("n0000001", "see_also", "out", None, "A neighbour.", kind="neighbor")
    answer = Answer("q", [Result("a0000001", 1, 0.9, title="Head", related=folded, neighbors=[near])])
    lines = answer.text().splitlines()
    assert sum(line.startswith("  ↳ folded: ") for line in lines) == POINTER_LINES
    rest = folded[POINTER_LINES:]
    assert lines[-2] == ("  ↳ 5 more folded: " + "; ".join(
        f"{rel} (in) " + ", ".join(p.id for p in rest if p.relation == rel)
        for rel in dict.fromkeys(p.relation for p in rest)))
    assert lines[-1].startswith("  ↳ neighbor: n0000001")
    # the data keeps every pointer
    assert len(answer.to_dict()["results"][0]["related"]) == POINTER_LINES + 5


def test_a_note_the_summary_says_word_for_word_is_written_once():
    said = "Pattern matching, as described in PEP 634, is added to Python 3.10."
    assert Pointer("a", "cites", "in", said, said).line() == f"↳ folded: a cites (in) — {said}"
    shouted = Pointer("a", "cites", "in", said.upper(), "  " + said)
    assert shouted.line() == f"↳ folded: a cites (in) — {said.upper()}"
    assert Pointer("a", "cites", "in", "As described in PEP 634", said).line() == f"↳ folded: a cites (in) — {said}"
    assert Pointer("a", "cites", "in", "Its caveat is stale.", said).line() == (
        f"↳ folded: a cites (in) — Its caveat is stale. — {said}")


def test_text_of_empty_answer_and_title_fallbacks():
    assert Answer(None, []).text() == "No results."
    assert Answer("q", []).text() == "Answer for: q\nNo results."
    bare = Answer(None, [Result("a1", 1, related=[Pointer("b2", "cites", "in", " ", None, title="B")])])
    assert bare.text() == "1. a1\n  ↳ folded: b2 cites (in) — B"


def test_to_frame_one_row_per_result_pointer_and_neighbor():
    frame = sample().to_frame()
    assert frame.schema == pl.Schema(ANSWER_FRAME_SCHEMA)
    assert frame.select("rank", "kind", "id", "parent", "relation", "direction", "via").rows() == [
        (1, "result", "a0000001", None, None, None, None),
        (1, "folded", "b0000002", "a0000001", "corrects", "out", None),
        (1, "folded", "c0000003", "a0000001", "split_from", "in", "d0000004"),
        (1, "neighbor", "e0000005", "a0000001", "cites", "out", None),
        (2, "result", "f0000006", None, None, None, None),
    ]
    assert frame["score"].to_list() == [0.91, None, None, None, 0.5]
    assert frame["note"][1] == "The retry caveat there is stale."


def test_to_frame_of_empty_answer_has_the_schema():
    frame = Answer("q", []).to_frame()
    assert frame.height == 0 and frame.schema == pl.Schema(ANSWER_FRAME_SCHEMA)


def test_html_is_escaped_and_carries_the_pointers():
    page = sample()._repr_html_()
    assert "Dated dispatch &lt;label&gt;" in page and "<label>" not in page
    assert "dated label &amp; wait" in page
    plain = re.sub(r"<[^>]+>", "", page)  # the pointer reads as Pointer.line() once tags are stripped
    assert "↳ folded: b0000002 corrects (out)" in plain and "open /login" in page
    assert "<details" in page and "var(--jp-ui-font-color1" in page  # expandable, themed for dark modes
    from kbtools.views.answer_html import answer_html

    assert answer_html(sample()) == page  # one renderer: the explorer shows the same HTML
    hostile = Answer("<script>alert(1)</script>", [])._repr_html_()
    assert "<script>" not in hostile and "&lt;script&gt;" in hostile


def test_ids_and_to_dict_are_json_ready():
    answer = sample()
    assert answer.ids() == ["a0000001", "f0000006"]
    data = answer.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["results"][0]["related"][1]["via"] == "d0000004"
    assert data["results"][0]["neighbors"][0]["kind"] == "neighbor"
    assert data["results"][1]["steps"] == ["open /login", "post the form"]
    assert data["folded"] is True and data["method"] == "fold" and data["links"] == []


def test_linked_and_links_render_when_present():
    answer = Answer("q", [Result("a1", 1)], linked=[Pointer("z9", "informs", "out", summary="Z.")],
                    links=["a1 -> z9 (ppr 0.12)"])
    text = answer.text()
    assert "Brought in by links:\n  - z9 — Z." in text and "How these entries connect:\n  a1 -> z9 (ppr 0.12)" in text
    assert json.dumps(answer.to_dict())


def test_values_are_frozen():
    answer = sample()
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.query = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.results[0].rank = 5  # type: ignore[misc]


def test_the_fast_constructor_builds_the_same_value_as_init():
    from kbtools.model.answer import fast_instance

    values = dict(id="a", relation="cites", direction="out", note=None, summary="s", via=None,
                  kind="neighbor", source="author", title="t")
    assert fast_instance(Pointer, values) == Pointer(**values)
    assert {f.name for f in dataclasses.fields(Pointer)} == set(values)
    result = dict(id="r", rank=1, score=0.5, kind="result", title=None, summary=None, related=[],
                  neighbors=[], steps=None, entry_kind=None, pool_rank=1, dominated_by=[])
    assert {f.name for f in dataclasses.fields(Result)} == set(result)
    assert fast_instance(Result, result) == Result(**result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast_instance(Pointer, values).id = "b"  # type: ignore[misc]
