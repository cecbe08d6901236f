"""kbtools.graph.holes: workflow holes and process flows, on hand-made flows and the demo business bank."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kbtools.demo import business_bank
from kbtools.errors import ValidationError
from kbtools.graph.holes import HOLE_KINDS, HOLE_SEVERITY, find_flows, find_holes, question_for
from kbtools.model.schema import empty

# id: (kind, title, metadata)
ENTRIES = {
    # a complete flow: nothing to report
    "c_recv": ("step", "Receive order", {"flow": "order", "start": True}),
    "c_dec": ("decision", "Credit ok?", {"flow": "order"}),
    "c_ship": ("step", "Ship goods", {"flow": "order", "end": True}),
    "c_rej": ("step", "Reject order", {"flow": "order", "end": True}),
    "c_po": ("artifact", "Customer order", {"flow": "order", "input": True}),
    "c_rec": ("artifact", "Order record", {"flow": "order"}),
    "c_inv": ("artifact", "Invoice", {"flow": "order", "output": True}),
    # one hole of each kind
    "h_start": ("step", "Open quote", {"flow": "quote", "start": True}),
    "h_dec": ("decision", "Approve discount?", {"flow": "quote"}),
    "h_apply": ("step", "Apply discount", {"flow": "quote"}),
    "h_stock": ("step", "Check stock", {"flow": "quote"}),
    "h_notify": ("step", "Notify customer", {"flow": "quote"}),
    "h_orphan": ("step", "Archive quote", {"flow": "quote"}),
    "h_loop_a": ("step", "Review draft", {"flow": "quote"}),
    "h_loop_b": ("step", "Revise draft", {"flow": "quote"}),
    "h_prices": ("artifact", "Price list", {"flow": "quote"}),
    "h_memo": ("artifact", "Discount memo", {"flow": "quote"}),
    "r_sales": ("role", "Sales rep", {"flows": ["order", "quote"]}),
    "r_ops": ("role", "Warehouse clerk", {}),
    "k_note": ("knowledge", "Unrelated note", {}),
}
# (src, type, dst, note)
EDGES = [
    ("c_recv", "precedes", "c_dec", None), ("c_dec", "precedes", "c_ship", "yes"),
    ("c_dec", "precedes", "c_rej", "no"), ("c_recv", "requires", "c_po", None),
    ("c_recv", "produces", "c_rec", None), ("c_ship", "requires", "c_rec", None),
    ("c_ship", "produces", "c_inv", None),
    ("c_recv", "owned_by", "r_sales", None), ("c_dec", "owned_by", "r_sales", None),
    ("c_ship", "owned_by", "r_ops", None), ("c_rej", "owned_by", "r_sales", None),
    ("h_start", "precedes", "h_dec", None), ("h_dec", "precedes", "h_apply", "yes"),
    ("h_apply", "precedes", "h_stock", None), ("h_stock", "precedes", "h_notify", None),
    ("h_apply", "precedes", "h_loop_a", None), ("h_loop_a", "precedes", "h_loop_b", None),
    ("h_loop_b", "precedes", "h_loop_a", None), ("h_orphan", "precedes", "h_notify", None),
    ("h_apply", "requires", "h_prices", None), ("h_apply", "produces", "h_memo", None),
    *[(s, "owned_by", "r_sales", None) for s in
      ("h_start", "h_dec", "h_apply", "h_notify", "h_orphan", "h_loop_a", "h_loop_b")],
]
PLANTED = {("h_dec", "one_branch"), ("h_notify", "dead_end"), ("h_prices", "unproduced_input"),
           ("h_memo", "unused_output"), ("h_stock", "no_owner"), ("h_orphan", "unreachable"),
           ("h_loop_a", "closed_loop")}


def _frames(entries=ENTRIES, edges=EDGES, source="author"):
    e = pl.DataFrame({"id": list(entries), "kind": [v[0] for v in entries.values()],
                      "title": [v[1] for v in entries.values()],
                      "metadata": [json.dumps(v[2]) for v in entries.values()]})
    d = pl.DataFrame({"src": [x[0] for x in edges], "dst": [x[2] for x in edges], "type": [x[1] for x in edges],
                      "source": [source] * len(edges), "note": [x[3] for x in edges]},
                     schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String,
                             "note": pl.String})
    return e, d


def _declare(**changes):
    entries = {k: (v[0], v[1], dict(v[2])) for k, v in ENTRIES.items()}
    for entry_id, extra in changes.items():
        entries[entry_id][2].update(extra)
    return entries


def test_each_hole_found_exactly_once_and_complete_flow_clean():
    holes = find_holes(*_frames())
    found = set(holes.select("id", "hole").iter_rows())
    assert found == PLANTED  # precision and recall 1.0
    assert holes.height == len(PLANTED)
    assert set(holes["flow"]) == {"quote"}
    # parallel kinds: tests below; broken_reference comes from a BPMN import (tests/test_bpmn_semantics.py)
    assert set(holes["hole"]) == set(HOLE_KINDS) - {"deadlock", "runs_twice", "broken_reference"}
    assert all(HOLE_SEVERITY[h] == s for h, s in holes.select("hole", "severity").iter_rows())
    assert holes.columns == ["id", "title", "flow", "hole", "severity", "explanation", "question", "affects",
                             "declared"]
    assert holes["declared"].all()
    assert holes["severity"].to_list() == sorted(holes["severity"], key=["high", "medium", "low"].index)


def test_questions_and_explanations_name_owner_and_members():
    holes = {h: r for h, r in ((r["hole"], r) for r in find_holes(*_frames()).to_dicts())}
    assert holes["one_branch"]["question"] == (
        "Ask the Sales rep: Decision 'Approve discount?' has only a 'yes' branch: "
        "what happens when the answer is 'no'?")
    assert holes["dead_end"]["question"].startswith("Ask the Sales rep: what happens after 'Notify customer'?")
    assert holes["no_owner"]["question"] == "Ask the Sales rep: who owns 'Check stock'?"
    assert holes["closed_loop"]["title"] == "Review draft"
    assert "'Review draft', 'Revise draft'" in holes["closed_loop"]["explanation"]
    assert "'Apply discount'" in holes["unproduced_input"]["explanation"]
    assert "'Apply discount'" in holes["unused_output"]["explanation"]
    assert "starts: 'Open quote'" in holes["unreachable"]["explanation"]


@pytest.mark.parametrize("role, asked", [
    ("Sales", "Ask Sales:"), ("Finance team", "Ask the Finance team:"), ("the warehouse", "Ask the warehouse:"),
    ("Account manager", "Ask the Account manager:"), ("IT", "Ask IT:"), ("Finance", "Ask Finance:"),
    ("Operations", "Ask Operations:"), ("Driver", "Ask the Driver:"), ("CFO", "Ask the CFO:"), ("Sales  rep", "Ask the Sales rep:"),
])
def test_questions_address_a_role_as_one_says_it(role, asked):
    entries = {k: (v[0], role if k == "r_sales" else v[1], v[2]) for k, v in ENTRIES.items()}
    holes = {r["hole"]: r["question"] for r in find_holes(*_frames(entries)).to_dicts()}
    assert holes["one_branch"] == f"{asked} Decision 'Approve discount?' has only a 'yes' branch: " \
                                  "what happens when the answer is 'no'?"
    assert question_for(role, "who?") == f"{asked} who?"


def test_declarations_suppress_their_holes():
    entries = _declare(h_notify={"end": True}, h_prices={"input": True}, h_memo={"output": True},
                       h_orphan={"start": True}, h_loop_b={"end": True})
    found = set(find_holes(*_frames(entries)).select("id", "hole").iter_rows())
    # the declared start 'Archive quote' is a second token: it and 'Open quote' both reach 'Notify
    # customer' with no gateway joining them (a fake join)
    assert found == {("h_dec", "one_branch"), ("h_stock", "no_owner"), ("h_notify", "runs_twice")}


def test_undeclared_starts_and_decision_without_branches():
    entries = {"a": ("step", "First", {"flow": "f"}), "b": ("decision", "Go?", {"flow": "f"}),
               "r": ("role", "Clerk", {})}
    edges = [("a", "precedes", "b", None), ("a", "owned_by", "r", None), ("b", "owned_by", "r", None)]
    holes = find_holes(*_frames(entries, edges))
    assert holes.select("id", "hole").rows() == [("b", "one_branch")]  # a is the start; b is not a dead end
    assert "no branches" in holes["question"][0]


def test_untrusted_edges_are_not_walked_and_cross_flow_handoff_is_a_successor():
    e, d = _frames()
    auto = pl.DataFrame({"src": ["h_notify"], "dst": ["h_start"], "type": ["precedes"], "source": ["auto"],
                         "note": [None]}, schema=d.schema)
    assert set(find_holes(e, pl.concat([d, auto])).select("id", "hole").iter_rows()) == PLANTED
    handoff = auto.with_columns(source=pl.lit("author"), dst=pl.lit("c_recv"))
    found = set(find_holes(e, pl.concat([d, handoff])).select("id", "hole").iter_rows())
    assert found == PLANTED - {("h_notify", "dead_end")}


def test_process_flows_summary():
    flows = find_flows(*_frames())
    assert flows["flow"].to_list() == ["order", "quote"]
    order, quote = flows.to_dicts()
    assert order["start_steps"] == ["Receive order"] and order["end_steps"] == ["Reject order", "Ship goods"]
    assert order["steps"] == 4 and order["artifacts"] == 3 and order["holes"] == 0
    assert order["owners"] == ["Sales rep", "Warehouse clerk"]
    assert quote["holes"] == len(PLANTED) and quote["steps"] == 8 and quote["owners"] == ["Sales rep"]
    # 'Notify customer' has no next step and no end mark: a dead end in the hole report, so not an end step
    assert quote["end_steps"] == [] and quote["dead_ends"] == ["Notify customer"] and order["dead_ends"] == []
    dead = find_holes(*_frames()).filter(pl.col("hole") == "dead_end")["title"].to_list()
    assert sorted(t for f in flows.to_dicts() for t in f["dead_ends"]) == sorted(dead)
    assert not {t for f in flows.to_dicts() for t in f["end_steps"]} & set(dead)
    marked = find_flows(*_frames(_declare(h_notify={"end": True})))
    assert marked.row(1, named=True)["end_steps"] == ["Notify customer"] and marked.row(1, named=True)["dead_ends"] == []


def test_empty_input_bad_columns_and_inputs_unchanged():
    assert find_holes(empty("entries"), empty("edges")).height == 0
    assert find_flows(empty("entries"), empty("edges")).height == 0
    with pytest.raises(ValidationError):
        find_holes(pl.DataFrame({"id": ["a"]}), empty("edges"))
    e, d = _frames()
    before_e, before_d = e.clone(), d.clone()
    find_holes(e, d)
    find_flows(e, d)
    assert_frame_equal(e, before_e)
    assert_frame_equal(d, before_d)


def test_demo_business_bank_holes_match_truth():
    made = business_bank()
    want = {(h["id"], h["flow"], h["hole"]) for h in made.truth["holes"]}
    got = set(find_holes(made.entries, made.edges).select("id", "flow", "hole").iter_rows())
    assert got == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=14),
       st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["produces", "requires"]), st.integers(0, 2)),
                max_size=6),
       st.sets(st.integers(0, 7), max_size=8), st.sets(st.integers(0, 7), max_size=3), st.randoms())
def test_holes_follow_their_definitions_and_ignore_row_order(prec, art, owned, decisions, rnd):
    steps = {f"s{i}": ("decision" if i in decisions else "step", f"Step {i}", {"flow": "f", "start": i == 0})
             for i in range(8)}
    arts = {f"a{i}": ("artifact", f"Doc {i}", {"flow": "f"}) for i in range(3)}
    entries = {**steps, **arts, "r": ("role", "Clerk", {})}
    edges = [(f"s{a}", "precedes", f"s{b}", None) for a, b in prec if a != b]
    edges += [(f"s{a}", t, f"a{b}", None) for a, t, b in art]
    edges += [(f"s{i}", "owned_by", "r", None) for i in owned]
    e, d = _frames(entries, edges)
    holes = find_holes(e, d)
    shuffled = find_holes(e.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 99)),
                              d.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 99)))
    assert_frame_equal(holes, shuffled)
    out = {x[0] for x in edges if x[1] == "precedes"}
    succ = {f"s{i}": {x[2] for x in edges if x[0] == f"s{i}" and x[1] == "precedes"} for i in range(8)}
    preds = {f"s{i}": {x[0] for x in edges if x[2] == f"s{i}" and x[1] == "precedes"} for i in range(8)}
    for entry_id, hole in holes.select("id", "hole").iter_rows():
        if hole == "dead_end":
            assert entry_id not in out
            assert steps[entry_id][0] == "step" or len(preds[entry_id]) >= 2  # a step, or a join
        if hole == "one_branch":
            assert len(succ[entry_id]) < 2 and not (len(preds[entry_id]) >= 2 and len(succ[entry_id]) == 1)
    no_owner = holes.filter(pl.col("hole") == "no_owner")
    if owned:
        assert set(no_owner["id"]) == {f"s{i}" for i in range(8) if i not in owned}
    else:  # a flow with no owner at all: one finding for the flow, standing for every step
        assert no_owner.height == 1 and {no_owner["id"][0], *no_owner["affects"][0]} == set(steps)
    reached, todo = {"s0"}, ["s0"]
    while todo:
        for nxt in succ[todo.pop()] - reached:
            reached.add(nxt)
            todo.append(nxt)
    lost = holes.filter(pl.col("hole") == "unreachable")
    shown = set(lost["id"]) | {i for a in lost["affects"] for i in a}
    assert shown == set(steps) - reached and lost.height <= len(shown)
    assert len(set(lost["id"])) == lost.height  # each first unreachable step is listed once
    firsts = {i for i in set(steps) - reached if not (preds[i] - reached)}
    assert firsts <= set(lost["id"])  # every unreachable step that no unreachable step leads to has its row


# --------------------------------------------------------------------------- inferred flows (no declared flow)


def _strip_flows(entries: pl.DataFrame) -> pl.DataFrame:
    """The same entries with every "flow" declaration removed from their metadata."""
    def strip(text):
        meta = json.loads(text)
        meta.pop("flow", None)
        return json.dumps(meta)
    return entries.with_columns(pl.col("metadata").map_elements(strip, return_dtype=pl.String))


def test_edges_alone_give_the_same_holes_as_declarations():
    made = business_bank()
    declared = find_holes(made.entries, made.edges)
    inferred = find_holes(_strip_flows(made.entries), made.edges)
    assert set(inferred.select("id", "hole").iter_rows()) == set(declared.select("id", "hole").iter_rows())
    assert not inferred["declared"].any() and declared["declared"].all()
    flows = find_flows(_strip_flows(made.entries), made.edges)
    assert flows.height == 8 and not flows["declared"].any()
    # an inferred flow is named after its start step
    assert "Receive customer purchase order" in flows["flow"].to_list()
    assert flows.filter(pl.col("flow") == "Receive customer purchase order")["artifacts"][0] == 6


def test_undeclared_steps_are_never_silent_and_declarations_keep_priority():
    entries = {"a": ("step", "Take call", {}), "b": ("decision", "Known caller?", {}),
               "c": ("step", "Log call", {}), "x": ("artifact", "Call log", {}),
               "d": ("step", "Open ticket", {"flow": "support", "start": True}),
               "e": ("step", "Close ticket", {"flow": "support", "end": True}),
               "k": ("decision", "Use Postgres", {}),  # an architecture decision: no process edge, no flow
               "r": ("role", "Agent", {})}
    edges = [("a", "precedes", "b", None), ("b", "precedes", "c", "yes"), ("c", "produces", "x", None),
             ("c", "precedes", "d", None), ("d", "precedes", "e", None),
             *[(s, "owned_by", "r", None) for s in "abcde"]]
    holes = find_holes(*_frames(entries, edges))
    assert holes.select("id", "flow", "hole", "declared").rows() == [
        ("b", "Take call", "one_branch", False), ("x", "Take call", "unused_output", False)]
    flows = find_flows(*_frames(entries, edges))
    assert flows.select("flow", "declared", "steps", "artifacts").rows() == [
        ("Take call", False, 3, 1), ("support", True, 2, 0)]
    assert "k" not in set(holes["id"])  # a decision with no precedes is not a process step


def test_inferred_flow_names_do_not_clash_with_declared_ones():
    entries = {"a": ("step", "Pack", {}), "b": ("step", "Ship", {"end": True}),
               "c": ("step", "Pack", {"flow": "Pack", "start": True, "end": True})}
    edges = [("a", "precedes", "b", None)]
    flows = find_flows(*_frames(entries, edges))
    assert flows.select("flow", "declared").rows() == [("Pack", True), ("Pack (a)", False)]
