"""Pure parts of the evaluation: rendering, the reader agent, leak checks, proof tokens, judges,
query logs, the replay's per-query outcome, with small hand-made fixtures."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kbtools.model.answer import Answer, Pointer, Result
from kbtools.errors import KbError, ValidationError
from kbtools.evaluate import (
    GoldJudge, HopTask, ReaderAgent, SIMULATED_AGENT, as_queries, check_leaks, contains_token, hop_outcome,
    leaky_notes, lost_warning, pointer_lines, proof_candidates, query_outcome, read_queries, render_answer,
    summarize_hop, summarize_replay, terms, verdict,
)
from kbtools.evaluate.report import HopLabReport, ReplayReport

NOTE = "The rotate step in that signing key recipe fails on staging without this."


def sample_answer(note: str | None = NOTE) -> Answer:
    near = Pointer("b2b2b2b2", "clarifies", "in", note, "Clocks drift apart.", kind="neighbor", source="author",
                   title="Clock drift")
    other = Pointer("c3c3c3c3", "see_also", "out", "Unrelated billing caveat.", "Invoices round.", kind="folded",
                    source="author")
    return Answer("how do I rotate the staging signing key", [
        Result("a1a1a1a1", 1, 0.9, title="Recipe: rotate the signing key", summary="How to rotate the key.",
               neighbors=[near], steps=["Announce.", "Rotate."], entry_kind="playbook"),
        Result("d4d4d4d4", 2, 0.8, title="Billing note", summary="About invoices.", related=[other]),
    ])


ENTRIES = pl.DataFrame({
    "id": ["a1a1a1a1", "b2b2b2b2", "c3c3c3c3", "d4d4d4d4"],
    "title": ["Recipe: rotate the signing key", "Clock drift", "Invoices", "Billing note"],
    "summary": ["How to rotate the key.", "Clocks drift apart.", "Invoices round.", "About invoices."],
    "content": ["Announce the change in the team channel, use the vault CLI against the target environment, "
                "then verify permissions on the service account before closing the ticket.",
                "Hosts drift. Tracked as ZX-4471-Q; quote it.", "Rounding.", "Billing."],
    "useful_for": ["Key rotation.", "Puzzling verifier failures.", None, None],
})


# ------------------------------------------------------------------------------------- render


def test_render_marks_the_note_and_varies_the_pointer_text():
    a = sample_answer()
    text = render_answer(a, entries=ENTRIES)
    assert "↳ neighbor: b2b2b2b2 clarifies (in) — Clocks drift apart. — note: " + NOTE in text
    assert "    2. Rotate." in text and "1. Recipe: rotate the signing key [a1a1a1a1] (playbook)" in text
    useful = render_answer(a, entries=ENTRIES, pointer_text="useful_for")
    assert "— Puzzling verifier failures. — note:" in useful
    snippet = render_answer(a, entries=ENTRIES, pointer_text="snippet", snippet_chars=12)
    assert "— Hosts drift.… — note:" in snippet or "— Hosts drift. — note:" in snippet
    bare = render_answer(a, entries=ENTRIES, pointer_text="none", notes=False)
    assert "  ↳ neighbor: b2b2b2b2 clarifies (in)\n" in bare + "\n"
    assert "note:" not in bare


def test_render_refuses_unknown_pointer_text_and_handles_empty():
    with pytest.raises(ValidationError):
        render_answer(sample_answer(), pointer_text="poem")
    assert render_answer(Answer(None, [])) == "No results."


# ------------------------------------------------------------------------------- reader agent


def test_pointer_lines_parse_what_render_writes():
    lines = pointer_lines(render_answer(sample_answer()))
    assert [(p.id, p.relation, p.note) for p in lines] == [
        ("b2b2b2b2", "clarifies", NOTE), ("c3c3c3c3", "see_also", "Unrelated billing caveat.")]


def test_reader_follows_the_pointer_whose_note_shares_terms():
    fetched: list[str] = []
    text = render_answer(sample_answer())
    final = ReaderAgent()("how do I rotate the staging signing key", text,
                          lambda i: fetched.append(i) or f"{i}: Tracked as ZX-4471-Q")
    assert fetched == ["b2b2b2b2"]          # the billing pointer shares nothing: never followed
    assert contains_token(final, "ZX-4471-Q")


def test_reader_never_follows_without_a_note_even_when_the_summary_matches():
    fetched: list[str] = []
    answer = sample_answer(note=None)
    text = render_answer(answer, pointer_text="summary")
    ReaderAgent()("clocks drift apart", text, fetched.append)
    assert fetched == []


words = st.sampled_from(["rotate", "signing", "key", "staging", "invoice", "drift", "clock", "cache", "billing",
                         "queue", "restore", "snapshot", "the", "of", "on", "step", "cites", "clarifies"])


@settings(max_examples=200, deadline=None)
@given(st.lists(words, min_size=1, max_size=6), st.lists(words, min_size=0, max_size=8),
       st.sampled_from(["cites", "clarifies", "see_also", "corrects", "informs"]))
def test_reader_never_follows_a_pointer_sharing_nothing_with_the_task(query_words, note_words, relation):
    query, note = " ".join(query_words), " ".join(note_words)
    text = f"1. T [a]\n  ↳ neighbor: b {relation} (out) — anything at all — note: {note}"
    fetched: list[str] = []
    ReaderAgent()(query, text, fetched.append)
    shares = bool((terms(relation) | terms(note)) & terms(query))
    assert bool(fetched) == shares


def test_reader_options_are_checked_and_it_is_named_a_simulation():
    assert ReaderAgent().name == SIMULATED_AGENT == "simulated reader agent, not a model"
    with pytest.raises(ValidationError):
        ReaderAgent(min_shared=0)
    limited: list[str] = []
    text = "\n".join(f"  ↳ neighbor: b{i} cites (out) — note: rotate" for i in range(5))
    ReaderAgent(max_fetches=2)("rotate", text, limited.append)
    assert limited == ["b0", "b1"]


# --------------------------------------------------------------------------------- hop outcome


def test_hop_outcome_counts_the_needed_and_the_tangential_hops():
    task = HopTask("t1", "how do I rotate the staging signing key", "a1a1a1a1", "b2b2b2b2", "clarifies", "ZX-4471-Q")
    answer = sample_answer()
    texts = {"b2b2b2b2": "Tracked as ZX-4471-Q", "c3c3c3c3": "Invoices round."}

    def greedy(query, text, fetch):  # a user agent that reads everything
        return "\n".join(fetch(p.id) for p in pointer_lines(text)) + fetch("nope")

    out = hop_outcome(task, "folded", render_answer(answer), answer, greedy, texts)
    assert (out["handed"], out["fetched_b"], out["reached"], out["tangential"], out["fetches"], out["correct"]) == (
        True, True, True, 2, 3, True)
    flat_answer = Answer("q", [Result("a1a1a1a1", 1)])
    out = hop_outcome(task, "flat", render_answer(flat_answer), flat_answer, ReaderAgent(), texts)
    assert (out["handed"], out["reached"], out["correct"], out["fetches"]) == (False, False, False, 0)


def test_an_agent_must_answer_with_text():
    task = HopTask("t1", "q", "a", "b", "cites", "ZX-1-Q")
    with pytest.raises(KbError):
        hop_outcome(task, "flat", "", Answer("q", []), lambda q, t, f: None, {})


def test_summaries_work_on_empty_input():
    rows = summarize_hop([])
    assert [r["tasks"] for r in rows] == [0] * 6
    headline, arms, by_source, by_relation = summarize_replay([])
    assert headline["queries"] == 0 and by_source == [] and by_relation == []


# -------------------------------------------------------------------------------------- leaks


EDGES = pl.DataFrame({
    "src": ["b2b2b2b2", "c3c3c3c3"], "dst": ["a1a1a1a1", "d4d4d4d4"], "type": ["clarifies", "see_also"],
    "source": ["author", "author"], "note": [NOTE, None],
})


def test_check_leaks_finds_every_place_the_token_shows():
    task = HopTask("t1", "q", "a1a1a1a1", "b2b2b2b2", "clarifies", "ZX-4471-Q")
    assert check_leaks([task], ENTRIES, EDGES).height == 0
    leaky_edges = EDGES.with_columns(pl.when(pl.col("src") == "c3c3c3c3").then(pl.lit("see zx-4471-q"))
                                     .otherwise(pl.col("note")).alias("note"))
    leaky_a = ENTRIES.with_columns(pl.when(pl.col("id") == "a1a1a1a1").then(pl.lit("Uses ZX-4471-Q."))
                                   .otherwise(pl.col("content")).alias("content"))
    assert check_leaks([task], ENTRIES, leaky_edges)["where"].to_list() == ["note"]
    assert check_leaks([task], leaky_a, EDGES)["where"].to_list() == ["entry a (content)"]
    missing = HopTask("t2", "q", "a1a1a1a1", "ffffffff", "cites", "ZX-4471-Q")
    nowhere = HopTask("t3", "q", "a1a1a1a1", "b2b2b2b2", "cites", "QQ-0000-Q")
    assert check_leaks([missing, nowhere], ENTRIES, EDGES)["where"].to_list() == ["missing entry", "no proof in b"]


def test_check_leaks_leaves_its_input_unchanged_and_takes_no_tasks():
    before_e, before_g = ENTRIES.clone(), EDGES.clone()
    assert check_leaks([], ENTRIES, EDGES).height == 0
    assert_frame_equal(ENTRIES, before_e)
    assert_frame_equal(EDGES, before_g)


def test_contains_token_is_whole_token_and_case_insensitive():
    assert contains_token("ref zx-4471-q.", "ZX-4471-Q")
    assert not contains_token("ZX-4471-QR", "ZX-4471-Q")
    assert not contains_token("", "ZX")


def test_leaky_notes_flags_a_restated_token_and_a_restated_fact():
    edges = pl.DataFrame({
        "src": ["b2b2b2b2", "c3c3c3c3", "a1a1a1a1"], "dst": ["a1a1a1a1", "d4d4d4d4", "c3c3c3c3"],
        "type": ["clarifies", "see_also", "cites"], "source": ["author", "judge", "author"],
        "note": [NOTE + " Reference ZX-4471-Q.", "How the invoices pertain.", None],
    })
    entries = ENTRIES.with_columns(
        pl.when(pl.col("id") == "d4d4d4d4").then(pl.lit("Ledger totals differ because summation order varies."))
        .otherwise(pl.col("content")).alias("content"))
    restating = edges.with_columns(
        pl.when(pl.col("src") == "c3c3c3c3").then(pl.lit("Ledger totals differ: summation order varies."))
        .otherwise(pl.col("note")).alias("note"))
    assert leaky_notes(entries, edges)[["restates", "reason"]].rows() == [("b2b2b2b2", "rare token ZX-4471-Q")]
    flagged = leaky_notes(entries, restating)
    assert flagged["restates"].to_list() == ["b2b2b2b2", "d4d4d4d4"]
    assert flagged["reason"][1].startswith("covers")
    assert leaky_notes(entries.clear(), edges).height == 0


# -------------------------------------------------------------------------------- proof tokens


def test_proof_candidates_pick_a_token_only_the_entry_content_holds():
    got = proof_candidates(ENTRIES, notes=[NOTE])
    assert got.filter(pl.col("id") == "b2b2b2b2").rows() == [("b2b2b2b2", "ZX-4471-Q")]  # codes come first
    assert proof_candidates(ENTRIES, notes=["Reference ZX-4471-Q"]).filter(pl.col("proof") == "ZX-4471-Q").height == 0
    shown = ENTRIES.with_columns(pl.lit("ZX-4471-Q").alias("useful_for"))
    assert "ZX-4471-Q" not in proof_candidates(shown, notes=[])["proof"].to_list()
    assert proof_candidates(ENTRIES.clear(), notes=[]).height == 0


# ------------------------------------------------------------------------------ judges, queries


def test_gold_judge_and_verdicts():
    judge = GoldJudge.from_queries([{"query": "q", "relevant": ["a"]}, {"query": "q", "relevant": ["b"]}])
    assert judge("q", "a", "") and judge("q", "b", "") and not judge("other", "a", "")
    with pytest.raises(ValidationError):
        GoldJudge.from_queries([{"query": "q", "relevant": None}])
    assert verdict(0.5) and not verdict(0.49) and verdict(True)
    with pytest.raises(ValidationError):
        verdict("yes")


def test_read_queries_plain_jsonl_and_sidecar(tmp_path):
    plain = tmp_path / "q.txt"
    plain.write_text("# a log\nhow do I log in\n\nci cache hangs\n", encoding="utf-8")
    assert [q["query"] for q in read_queries(plain)] == ["how do I log in", "ci cache hangs"]
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"query": "x", "relevant": ["a1"]}\n{"id": "mine", "query": "y"}\n', encoding="utf-8")
    assert read_queries(jsonl) == [{"id": "q001", "query": "x", "relevant": ["a1"]},
                                   {"id": "mine", "query": "y", "relevant": None}]
    sidecar = tmp_path / "t.json"
    sidecar.write_text(json.dumps({"queries": [{"id": "q9", "query": "z", "relevant": []}]}), encoding="utf-8")
    assert read_queries(sidecar)[0]["id"] == "q9"
    with pytest.raises(KbError):
        read_queries(tmp_path / "missing.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": \n', encoding="utf-8")
    with pytest.raises(ValidationError):
        read_queries(bad)
    with pytest.raises(ValidationError):
        as_queries([{"query": ""}])


# -------------------------------------------------------------------------------- replay bits


def test_query_outcome_gains_and_losses_and_the_loud_warning():
    flat_answer = Answer("q", [Result("a", 1), Result("b", 2), Result("c", 3)], folded=False)
    lossy = Answer("q", [Result("a", 1, related=[Pointer("b", "cites", "out", None, source="judge")],
                                neighbors=[Pointer("n", "corrects", "in", "why", kind="neighbor", source="author")])])
    out = query_outcome({"id": "q1", "query": "q"}, {"flat": flat_answer, "fold": lossy}, 1,
                        lambda e: e in {"a", "c", "n"})
    assert out["arms"]["fold"]["lost"] == ["c"] and out["arms"]["fold"]["gained"] == ["n"]
    assert [(p["id"], p["source"], p["note"], p["relevant"]) for p in out["pointers"]] == [
        ("b", "judge", False, False), ("n", "author", True, True)]
    headline, arms, by_source, _ = summarize_replay([out])
    assert headline["lost"] == 1
    assert {r["source"]: (r["pointers"], r["precision"]["k"], r["gained"]) for r in by_source} == {
        "judge": (1, 0, 0), "author": (1, 1, 1)}
    report = ReplayReport({}, "gold labels", [out], headline, arms, by_source, [])
    assert report.to_markdown().startswith("WARNING: folding lost 1 relevant entry")
    assert report.to_dict()["warning"] == lost_warning(1)


def test_reports_render_on_empty_input():
    r = HopLabReport(params={}, agent=SIMULATED_AGENT, simulated=True, arms=[], tasks=[], leaks=[], excluded=[],
                     invalid=[], outcomes=[], summary=summarize_hop([]))
    assert "simulated reader agent, not a model" in r.to_markdown()
    assert json.loads(r.to_json())["agent"] == {"name": SIMULATED_AGENT, "simulated": True}
    assert r.to_frame().height == 0


def test_a_citing_sentence_restates_its_own_entry_by_design_and_is_checked_against_its_target():
    entries = pl.DataFrame({
        "id": ["6483813b", "2abfc75e"], "title": ["tool_operate: fix a crash", "lib: free the handle"],
        "summary": ["", ""], "useful_for": [None, None],
        "content": ["The commit 2abfc75e was missing changes to the retry loop that crash the cleanup of "
                    "multiplexed transfers.", "Free the multi handle after the cleanup."]})
    sentence = "The commit 2abfc75e was missing changes to the retry loop that crash the cleanup of multiplexed transfers."
    backfilled = pl.DataFrame({"src": ["6483813b"], "dst": ["2abfc75e"], "type": ["cites"],
                               "source": ["citation_backfill"], "note": [sentence]})
    assert leaky_notes(entries, backfilled).height == 0  # the citing sentence is its entry's own words
    authored = backfilled.with_columns(pl.lit("author").alias("source"))
    assert leaky_notes(entries, authored)["restates"].to_list() == ["6483813b"]  # an author's note says how
    quoting_target = backfilled.with_columns(pl.lit("Fixes 2abfc75e: free the multi handle after the cleanup.")
                                             .alias("note"))
    assert leaky_notes(entries, quoting_target)["restates"].to_list() == ["2abfc75e"]


def test_a_note_naming_an_entry_by_hash_or_its_own_title_restates_nothing():
    entries = pl.DataFrame({
        "id": ["5a4b2f93", "4f794558", "64283119"],
        "title": ["HTTP3.md: run nghttp3 init", "DEP0111: process.binding", "HTTP3.md: always run submodule init"],
        "summary": ["", "", ""], "useful_for": [None, None, None],
        "content": ["Run the nghttp3 submodule init step first.", "The DEP0111 deprecation of process.binding.",
                    "Follow-up to 5a4b2f93 and 4f794558a1 (see DEP0111). Init the submodule always, before the "
                    "build step, on every runner image we keep warm."]})
    edges = pl.DataFrame({"src": ["64283119", "64283119"], "dst": ["5a4b2f93", "4f794558"],
                          "type": ["cites", "cites"], "source": ["citation_backfill"] * 2,
                          "note": ["Follow-up to 5a4b2f93 and 4f794558a1 (see DEP0111)."] * 2})
    assert leaky_notes(entries, edges).height == 0  # hashes name commits; DEP0111 is the target's title
    leaking = edges.with_columns(pl.lit("Follow-up to 5a4b2f93: see QX-7731-Z.").alias("note"))
    ents = entries.with_columns(pl.Series("content", ["Tracked as QX-7731-Z.", "x", "y"]))
    assert leaky_notes(ents, leaking)["reason"].to_list() == ["rare token QX-7731-Z"]
