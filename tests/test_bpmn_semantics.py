"""BPMN semantics a process expert checks, tolerant import, and one model in two serialisations.

The models are in tests/data/bpmn (make_models.py writes them, bpmn.io style): compensation,
ad-hoc sub-processes, link events, event sub-processes, implicit parallel starts (fake joins),
pooled processes, and a file with broken references that a modeler still opens.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import xml.etree.ElementTree as ET

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import BpmnError
from kbtools.graph.holes import HOLE_SEVERITY, find_flows, find_holes
from kbtools.model.bpmn import BPMN_NS, bpmn_id, parse_bpmn
from kbtools.ops.bpmn import ingest_bpmn

DATA = pathlib.Path(__file__).parent / "data" / "bpmn"


def model_of(name: str, **kw):
    return parse_bpmn((DATA / name).read_bytes(), file=name, **kw)


def holes_of(name: str, **kw) -> pl.DataFrame:
    model = model_of(name)
    return find_holes(model.entries, model.edges, **kw)


def found(name: str, **kw) -> set[tuple[str, str]]:
    return set(holes_of(name, **kw).select("title", "hole").iter_rows())


# -- the semantics ---------------------------------------------------------------------------------

def test_compensation_handler_and_its_boundary_event_are_no_holes():
    model = model_of("compensation.bpmn")
    titles = {r["id"]: r["title"] for r in model.entries.iter_rows(named=True)}
    edges = {(titles[s], titles[d]): n for s, d, t, n in model.edges.select("src", "dst", "type", "note").iter_rows()
             if t == "precedes"}
    assert edges[("Undo booking", "Cancel hotel")] == "compensation"  # the association, as the handler's way in
    assert edges[("Book hotel", "Undo booking")] == "compensate (exception)"
    assert found("compensation.bpmn") == set()
    # without the association the boundary event leads nowhere: a dead end (bpmnlint says so too)
    xml = (DATA / "compensation.bpmn").read_text()
    cut = re.sub(r'\s*<bpmn:association id="A1"[^>]*/>', "", xml)
    bare = parse_bpmn(cut.encode(), file="cut.bpmn")
    assert set(find_holes(bare.entries, bare.edges).select("title", "hole").iter_rows()) == {("Undo booking", "dead_end")}


def test_a_compensation_association_is_read_wherever_the_tool_puts_it():
    xml = (DATA / "compensation.bpmn").read_text()
    line = re.search(r'\s*(<bpmn:association id="A1"[^>]*/>)', xml)
    moved = xml.replace(line.group(0), "").replace(
        "  <bpmn:process", '  <bpmn:collaboration id="C"><bpmn:participant id="P1" name="Agency" '
        f'processRef="Process_compensation" />{line.group(1)}</bpmn:collaboration>\n  <bpmn:process', 1)
    model = parse_bpmn(moved.encode(), file="moved.bpmn")
    assert find_holes(model.entries, model.edges).height == 0
    dangling = moved.replace('targetRef="Cancel"', 'targetRef="Cancel_gone"')
    model = parse_bpmn(dangling.encode(), file="dangling.bpmn")
    assert [b["element"] for b in model.broken] == ["A1"]
    assert {("Undo booking", "dead_end"), ("Undo booking", "broken_reference")} <= set(
        find_holes(model.entries, model.edges).select("title", "hole").iter_rows())


def test_a_broken_declaration_from_another_writer_is_read_as_one_finding():
    entries = pl.DataFrame({"id": ["a"], "kind": ["step"], "title": ["Pack"],
                            "metadata": ['{"flow": "f", "start": true, "end": true, "broken": "the label printer is gone"}']})
    edges = pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String})
    row = find_holes(entries, edges).filter(pl.col("hole") == "broken_reference").row(0, named=True)
    assert "the label printer is gone" in row["explanation"]


def test_activities_of_an_ad_hoc_sub_process_run_in_any_order():
    flows = find_flows(model_of("adhoc.bpmn").entries, model_of("adhoc.bpmn").edges)
    inner = flows.filter(pl.col("flow") == "Trip planning / Plan trip").row(0, named=True)
    assert inner["steps"] == 3 and inner["holes"] == 0
    assert found("adhoc.bpmn") == set()


def test_a_link_throw_goes_on_at_the_catch_of_the_same_name():
    model = model_of("link_events.bpmn")
    notes = set(model.edges["note"].drop_nulls())
    assert "link: Assess" in notes
    assert found("link_events.bpmn") == set()
    # a throw whose catch is gone is a dead end again, and nothing is left to catch
    xml = (DATA / "link_events.bpmn").read_text().replace('name="Assess" />', 'name="Elsewhere" />', 1)
    renamed = parse_bpmn(xml.encode(), file="renamed.bpmn")
    holes = set(find_holes(renamed.entries, renamed.edges).select("title", "hole").iter_rows())
    assert holes == {("To assessment", "dead_end"), ("From intake", "unreachable")}


def test_an_event_sub_process_is_started_by_its_event_not_by_the_parent():
    model = model_of("event_subprocess.bpmn")
    flows = {r["flow"]: r for r in find_flows(model.entries, model.edges).iter_rows(named=True)}
    assert flows["Complaints"]["start_steps"] == ["Complaint in"]  # not the event sub-process
    assert flows["Complaints / Cancellation"]["start_steps"] == ["Customer cancels"]
    assert found("event_subprocess.bpmn") == set()
    # a parent with no start event: its start-less task is its start, the rest of it runs
    assert found("event_subprocess_implicit_start.bpmn") == set()
    implicit = model_of("event_subprocess_implicit_start.bpmn")
    starts = find_flows(implicit.entries, implicit.edges).filter(pl.col("flow") == "Complaints without start event")
    assert starts["start_steps"][0].to_list() == ["Handle complaint"]


def test_two_starts_into_one_activity_without_a_join_make_it_run_twice():
    row = holes_of("fake_join.bpmn").row(0, named=True)
    assert (row["title"], row["hole"], row["severity"]) == ("Enter order", "runs_twice", "high")
    assert "2 starts of the flow ('Order by phone', 'Order online')" in row["explanation"]
    assert set(row["affects"]) == {bpmn_id("Process_fake_join", e) for e in ("Ship", "End")}  # what follows, too
    assert "exclusive gateway" in row["question"]
    assert found("fake_join_ok.bpmn") == set()  # the starts merge at a gateway first
    # start-less nodes are starts too (each gets a token when the process starts)
    entries = pl.DataFrame({"id": ["a", "b", "c"], "kind": ["step"] * 3, "title": ["Call", "Mail", "Log request"],
                            "metadata": ['{"flow": "f"}', '{"flow": "f"}', '{"flow": "f", "end": true}']})
    edges = pl.DataFrame({"src": ["a", "b", "a", "b", "c"], "dst": ["c", "c", "r", "r", "r"],
                          "type": ["precedes", "precedes", "owned_by", "owned_by", "owned_by"], "source": ["author"] * 5})
    entries = pl.concat([entries, pl.DataFrame({"id": ["r"], "kind": ["role"], "title": ["Clerk"], "metadata": ["{}"]})])
    assert find_holes(entries, edges).select("id", "hole").rows() == [("c", "runs_twice")]


def test_a_pooled_process_is_owned_by_its_participant_lanes_only_when_asked():
    assert found("pooled.bpmn") == set()
    asked = holes_of("pooled.bpmn", lanes=True)
    assert set(asked.select("title", "hole").iter_rows()) == {("Need repair", "no_owner"), ("Send bill", "no_owner")}
    driver = asked.filter(pl.col("title") == "Need repair").row(0, named=True)
    assert "pool of 'Driver' but draws no lanes" in driver["explanation"] and driver["question"].startswith("Ask the Driver:")
    bill = asked.filter(pl.col("title") == "Send bill").row(0, named=True)
    assert "in the pool of 'Garage' but in no lane" in bill["explanation"]
    assert found("no_lanes.bpmn") == {("Invoice in", "no_owner")}  # no pool, no lane: still nobody's


# -- tolerant import -------------------------------------------------------------------------------

def test_broken_elements_are_left_out_listed_and_reported_as_holes():
    model = model_of("broken_refs.bpmn")
    broken = {b["element"]: b for b in model.broken}
    assert set(broken) == {"F_ghost", "Late", "Ref_label"}
    assert "targetRef 'Ghost'" in broken["F_ghost"]["problem"]
    assert "attachedToRef 'Gate' is a <exclusiveGateway>, not an activity" in broken["Late"]["problem"]
    assert "no dataObjectRef" in broken["Ref_label"]["problem"]
    assert broken["F_ghost"]["entry"] == bpmn_id("Process_broken", "Store")  # on the node the flow leaves
    holes = holes_of("broken_refs.bpmn")
    refs = holes.filter(pl.col("hole") == "broken_reference")
    assert set(refs["title"]) == {"Store parcel", "Damaged?", "Check parcel"}
    assert all(HOLE_SEVERITY["broken_reference"] == s for s in refs["severity"])
    assert refs.filter(pl.col("title") == "Store parcel")["explanation"][0].startswith(
        "The model's element F_ghost near 'Store parcel'")
    # the rest is read: the escalation path hangs on the boundary event left out, so it is cut off
    assert set(holes.filter(pl.col("hole") != "broken_reference").select("title", "hole").iter_rows()) == {
        ("Escalate", "unreachable")}
    with pytest.raises(BpmnError, match="element 'Late': attachedToRef 'Gate'"):
        model_of("broken_refs.bpmn", strict=True)


@pytest.mark.parametrize("name, element", [("bad_ref.bpmn", "Flow_dangling"), ("boundary_orphan.bpmn", "Timer_orphan")])
def test_the_old_refusals_are_findings_now(name, element):
    model = parse_bpmn((DATA / "invalid" / name).read_bytes(), file=name)
    assert [b["element"] for b in model.broken] == [element]
    assert model.entries.height >= 1


@pytest.mark.parametrize("name", ["malformed.bpmn", "entity.bpmn", "not_bpmn.bpmn"])
def test_malformed_files_stay_refused_in_both_modes(name, tmp_path):
    bank = kb.create_bank(tmp_path / "bank")
    for strict in (False, True):
        with pytest.raises(BpmnError, match=name):
            ingest_bpmn(bank, DATA / "invalid" / name, strict=strict)
    nothing = tmp_path / "none.bpmn"
    nothing.write_text(f'<definitions xmlns="{BPMN_NS}"><collaboration id="C"/></definitions>')
    with pytest.raises(BpmnError, match="defines no <process>"):
        ingest_bpmn(bank, nothing)
    bank = kb.open_bank(tmp_path / "bank")
    assert bank.entries.height == 0 and bank.events.height == 0


def test_kb_ingest_lists_broken_elements_and_strict_refuses(tmp_path, capsys):
    from kbtools.cli.main import main

    bank = tmp_path / "b"
    assert main(["ingest", str(bank), "--create", "--from", str(DATA / "broken_refs.bpmn"), "--strict"]) == 1
    assert "Late" in capsys.readouterr().err
    assert not bank.exists()  # the refused --create leaves no empty bank behind
    assert main(["ingest", str(bank), "--create", "--from", str(DATA / "broken_refs.bpmn")]) == 0
    out = capsys.readouterr().out
    assert "broken: 3 element(s) left out" in out and "broken_refs.bpmn F_ghost: targetRef 'Ghost'" in out
    assert main(["holes", str(bank)]) == 0
    text = capsys.readouterr().out
    assert text.count("broken_reference") == 3
    assert main(["holes", str(bank), "--lanes", "--json"]) == 0  # --lanes: every step in a lane (all are here)
    assert {r["hole"] for r in json.loads(capsys.readouterr().out)} == {"broken_reference", "unreachable"}


def test_fixing_the_file_clears_the_finding(tmp_path):
    path = tmp_path / "parcels.bpmn"
    path.write_text((DATA / "broken_refs.bpmn").read_text())
    bank = kb.create_bank(tmp_path / "bank")
    ingest_bpmn(bank, path)
    assert (kb.workflow_holes(bank)["hole"] == "broken_reference").sum() == 3
    fixed = re.sub(r'\s*<bpmn:sequenceFlow id="F_ghost"[^>]*/>', "", path.read_text())
    path.write_text(fixed.replace("<bpmn:outgoing>F_ghost</bpmn:outgoing>", ""))
    report = ingest_bpmn(bank, path)
    assert report["updated"] >= 1 and {b["element"] for b in report["broken"]} == {"Late", "Ref_label"}
    assert (kb.workflow_holes(bank)["hole"] == "broken_reference").sum() == 2


# -- stable across tools ---------------------------------------------------------------------------

def _make_models():
    spec = importlib.util.spec_from_file_location("make_models", DATA / "make_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same_holes(a: bytes, b: bytes) -> None:
    one, two = parse_bpmn(a, file="m.bpmn"), parse_bpmn(b, file="m.bpmn")
    left, right = find_holes(one.entries, one.edges), find_holes(two.entries, two.edges)
    assert left.to_dicts() == right.to_dicts()
    assert [(b["element"], b["problem"]) for b in one.broken] == [(b["element"], b["problem"]) for b in two.broken]


def test_one_model_in_two_serialisations_gives_the_same_holes():
    reference = (DATA / "order_to_cash.bpmn").read_bytes()
    other = (DATA / "serialisations" / "order_to_cash_plain.bpmn").read_bytes()
    # the two files really differ in the ways tools differ
    assert b"<bpmn:" in reference and b"<bpmn:" not in other and b'xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"' in other
    assert b"<bpmn:incoming>" in reference and b"incoming>" not in other
    assert b"BPMNDiagram" in reference and b"BPMNDiagram" not in other
    order = [el.get("id") for el in ET.fromstring(other).iter() if el.get("id")]
    assert order != [el.get("id") for el in ET.fromstring(reference).iter() if el.get("id")]
    assert order.index("OF18") < order.index("O_start")  # sequence flows before the nodes they join
    _same_holes(reference, other)
    assert holes_of("order_to_cash.bpmn").height == 2


@pytest.mark.parametrize("path", sorted(DATA.glob("*.bpmn")), ids=lambda p: p.name)
def test_every_model_reads_the_same_in_the_plain_serialisation(path):
    _same_holes(path.read_bytes(), _make_models().plain(path.read_bytes()))


def test_the_committed_plain_copy_is_what_make_models_writes():
    made = _make_models().plain((DATA / "order_to_cash.bpmn").read_bytes())
    assert made == (DATA / "serialisations" / "order_to_cash_plain.bpmn").read_bytes()
