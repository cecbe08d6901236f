"""The folding replay on a copy of the demo engineering bank (hashing embedder: fast, deterministic)."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

import kbtools as kb
from kbtools.demo.banks import DEMO_DIR
from kbtools.errors import KbError, ValidationError
from kbtools.evaluate import REPLAY_ARMS, replay_figure, run_replay

DEMO = DEMO_DIR / "engineering"


@pytest.fixture(scope="module")
def demo(eng_hashing):
    """A copy of the demo engineering bank with its sidecar, embedded with the hashing embedder."""
    return eng_hashing


@pytest.fixture(scope="module")
def report(demo):
    return run_replay(demo, seed=4)


def test_folding_loses_no_relevant_flat_entry_on_the_demo(report):
    assert report.lost == 0
    assert all(not q["arms"]["fold"]["lost"] for q in report.queries)
    assert report.to_markdown().startswith("Folding lost no relevant entry of the flat answer (0 lost).")
    assert report.to_dict()["warning"] is None


def test_the_headline_metrics_follow_from_the_raw_outcomes(report):
    h, qs = report.headline, report.queries
    assert h["queries"] == len(qs) == len(kb.demo.read_truth(report.params["bank"])["queries"])
    assert h["pointer_share"]["k"] == sum(bool(q["pointers"]) for q in qs)
    gains = [len(q["arms"]["fold"]["gained"]) for q in qs]
    assert h["gained_share"]["k"] == sum(g > 0 for g in gains)
    assert h["gain"]["mean"] == pytest.approx(sum(gains) / len(gains))
    assert h["gain_connected"]["n"] + h["gain_sparse"]["n"] == len(qs)
    pointers = [p for q in qs for p in q["pointers"]]
    assert h["pointer_precision"]["k"] == sum(p["relevant"] for p in pointers)
    assert h["note_coverage"]["k"] == sum(p["note"] for p in pointers)
    assert sum(r["pointers"] for r in report.by_source) == len(pointers)
    assert sum(r["pointers"] for r in report.by_relation) == len(pointers)


def test_folding_adds_relevant_entries_and_the_baselines_are_there(report):
    arms = {a["arm"]: a for a in report.arms}
    assert list(arms) == list(REPLAY_ARMS)
    assert arms["fold"]["relevant"]["mean"] >= arms["flat"]["relevant"]["mean"]
    assert report.headline["gained_share"]["k"] > 0
    # plain collapse drops the rest of each group: it loses what folding keeps as pointers
    assert arms["collapse"]["lost"] > 0
    for q in report.queries:
        assert len(q["arms"]["mmr"]["shown"]) == len(q["arms"]["flat"]["shown"])


def test_same_seed_same_numbers(demo, report):
    assert run_replay(demo, seed=4).to_json() == report.to_json()


def test_json_and_figure(report):
    data = json.loads(report.to_json())
    assert data["params"]["seed"] == 4 and data["judge"] == "gold labels"
    assert {"id", "query", "connected", "arms", "pointers", "gained_by"} <= set(data["queries"][0])
    fig = replay_figure(report)
    assert isinstance(fig, go.Figure) and fig.layout.title.text.startswith("Folding replay")
    assert report.to_frame().height == len(report.queries)


def test_a_query_file_and_a_callable_judge(demo, tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("how do I log in to production with Playwright\nci cache key hangs during build\n",
                   encoding="utf-8")
    seen = []

    def scorer(query, entry_id, entry_text):  # a float judge: relevant at >= 0.5
        seen.append(entry_id)
        return 0.9 if "login" in entry_text.lower() or "log in" in entry_text.lower() else 0.1

    scorer.name = "keyword scorer"
    r = run_replay(demo, queries=log, judge=scorer)
    assert r.judge == "keyword scorer" and r.headline["queries"] == 2
    assert len(seen) == r.params["judgements"]  # each (query, entry) judged once
    assert r.params["queries_from"] == str(log)


def test_unlabelled_queries_need_a_judge(demo):
    with pytest.raises(ValidationError):
        run_replay(demo, queries=["how do I log in"])
    with pytest.raises(KbError):
        run_replay(demo, queries=[])
    with pytest.raises(ValidationError):
        run_replay(demo, queries=["x"], judge="a person")
