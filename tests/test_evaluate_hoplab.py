"""The hop lab on a copy of the demo engineering bank (hashing embedder: fast, deterministic)."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import polars as pl
import pytest

import kbtools as kb
from kbtools.demo.banks import DEMO_DIR
from kbtools.errors import ValidationError
from kbtools.evaluate import (
    HOP_ARMS, ReaderAgent, check_leaks, contains_token, hop_tasks, hoplab_figure, leaky_notes, run_hoplab,
    tasks_from_truth,
)
from kbtools.evaluate.hoplab import entry_text

DEMO = DEMO_DIR / "engineering"


@pytest.fixture(scope="module")
def demo(eng_hashing):
    """A copy of the demo engineering bank with its sidecar, embedded with the hashing embedder."""
    return eng_hashing


@pytest.fixture(scope="module")
def report(demo):
    return run_hoplab(demo, seed=3)


def test_leak_check_catches_the_three_leaky_demo_tasks(demo):
    truth = kb.demo.read_truth(demo)
    tasks = tasks_from_truth(truth)
    leaks = check_leaks(tasks, demo.entries, demo.edges)
    marked = sorted(t.id for t in tasks if t.leaky)
    assert len(marked) == 3
    assert sorted(leaks["task"].unique().to_list()) == marked
    assert set(leaks["where"]) == {"note"}


def test_leaking_tasks_are_reported_and_excluded(report):
    assert len(report.excluded) == 3
    assert not {o["task"] for o in report.outcomes} & set(report.excluded)
    md = report.to_markdown()
    for task in report.excluded:
        assert task in md
    assert report.invalid == []  # every demo task meets its precondition on this bank


def test_the_leaky_notes_are_flagged_as_data_problems(demo, report):
    flagged = leaky_notes(demo.entries, demo.edges)
    proofs = {t["proof"] for t in report.tasks if t["leaky"]}
    restated = {r.split()[-1] for r in flagged["reason"] if r.startswith("rare token")}
    assert proofs <= restated
    assert len(report.leaky_notes) == flagged.height


def test_flat_never_hands_over_b_and_folding_reaches_it_more_often(report):
    by_arm = {s["arm"]: s for s in report.summary}
    assert by_arm["flat"]["handed"]["k"] == 0 and by_arm["flat"]["reached"]["k"] == 0
    assert by_arm["folded"]["reached"]["k"] > by_arm["flat"]["reached"]["k"]
    assert by_arm["folded"]["correct"]["k"] > 0
    # the proof token never reaches the agent without the hop: the leak check held
    assert all(s["correct_without_hop"] == 0 for s in report.summary)
    # stripped notes leave the simulated reader nothing to go on
    assert by_arm["no_notes"]["reached"]["k"] <= by_arm["folded"]["reached"]["k"]


def test_every_outcome_is_raw_and_complete(report):
    run = {o["task"] for o in report.outcomes}
    assert len(report.outcomes) == len(run) * len(HOP_ARMS)
    b_of = {t["id"]: t["b"] for t in report.tasks}
    for o in report.outcomes:
        assert o["reached"] == (o["handed"] and o["fetched_b"])
        assert o["fetches"] == len(o["fetched"])
        assert o["tangential"] == sum(f != b_of[o["task"]] for f in o["fetched"])


def test_the_agent_is_named_a_simulation_everywhere(report):
    data = json.loads(report.to_json())
    assert data["agent"] == {"name": "simulated reader agent, not a model", "simulated": True}
    assert data["params"]["seed"] == 3
    assert "simulated reader agent, not a model" in report.to_markdown()
    fig = hoplab_figure(report)
    assert isinstance(fig, go.Figure) and "simulated reader agent, not a model" in fig.layout.title.text
    assert [t.name for t in fig.data] == ["needed hop reached", "tangential hop taken", "answers correct"]


def test_same_seed_same_numbers(demo, report):
    again = run_hoplab(demo, seed=3)
    assert again.to_json() == report.to_json()


def test_a_user_agent_plugs_in(demo):
    tasks = [t for t in tasks_from_truth(kb.demo.read_truth(demo)) if not t.leaky][:4]
    texts = dict(zip(demo.entries["id"].to_list(), entry_text(demo.entries)))

    def oracle(query, text, fetch):  # fetches every pointer target: reaches b whenever it is handed over
        import re
        return "\n".join(fetch(i) for i in re.findall(r"↳ \w+: (\S+)", text))

    oracle.name = "oracle that follows every pointer"
    r = run_hoplab(demo, tasks=tasks, agent=oracle)
    assert r.agent == "oracle that follows every pointer" and not r.simulated
    folded = next(s for s in r.summary if s["arm"] == "folded")
    assert folded["reached"]["k"] == folded["handed"]["k"] == 4
    assert "user-supplied" in r.to_markdown()
    assert texts  # fetch answered from the bank's own text


def test_mined_tasks_meet_the_condition_and_plant_nothing(demo):
    before = (demo.entries.clone(), demo.edges.clone())
    mined = hop_tasks(demo, n=6, seed=11)
    assert mined and mined == hop_tasks(demo, n=6, seed=11)
    assert demo.entries.equals(before[0]) and demo.edges.equals(before[1])
    rows = {r["id"]: r for r in demo.entries.iter_rows(named=True)}
    notes = demo.edges["note"].drop_nulls().to_list()
    for t in mined:
        top = kb.retrieval.ranked_pool(demo, t.query, pool=8)["id"].to_list()
        assert t.a in top and t.b not in top
        assert contains_token(rows[t.b]["content"], t.proof)
        assert not any(contains_token(n, t.proof) for n in notes)
        assert not any(contains_token(" ".join(str(v) for v in r.values()), t.proof)
                       for i, r in rows.items() if i != t.b)
    assert check_leaks(mined, demo.entries, demo.edges).height == 0
    assert hop_tasks(demo, n=0) == []


def test_mined_tasks_run_through_the_lab(demo):
    r = run_hoplab(demo, tasks="mined", n=4, seed=5)
    assert r.params["tasks_from"] == "mined" and len(r.tasks) <= 4


def test_bad_options_are_refused(demo):
    with pytest.raises(ValidationError):
        run_hoplab(demo, k=0)
    with pytest.raises(ValidationError):
        run_hoplab(demo, tasks="everything")
    with pytest.raises(ValidationError):
        run_hoplab(demo, agent="gpt")
    with pytest.raises(ValidationError):
        ReaderAgent(max_fetches=-1)


def test_outcome_frame(report):
    frame = report.to_frame()
    assert frame.height == len(report.outcomes)
    assert frame.filter(pl.col("arm") == "flat")["handed"].sum() == 0
