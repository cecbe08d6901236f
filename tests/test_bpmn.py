"""BPMN in (model/bpmn.py, ops/bpmn.py) and the holes a process expert would sign on BPMN models.

The models in tests/data/bpmn are written for these tests (make_models.py writes them): one per hole
kind, their valid twins, joins, boundary events, parallel splits, lanes, data, a sub-process, a
collaboration, a realistic order-to-cash process, and invalid files.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import BpmnError
from kbtools.graph.holes import find_holes
from kbtools.model.bpmn import bpmn_id, color_bpmn, parse_bpmn
from kbtools.ops.bpmn import export_bpmn_holes, ingest_bpmn

DATA = pathlib.Path(__file__).parent / "data" / "bpmn"
ROOT = pathlib.Path(__file__).parent.parent


def holes_of(name: str) -> pl.DataFrame:
    model = parse_bpmn((DATA / name).read_bytes(), file=name)
    return find_holes(model.entries, model.edges)


def found(name: str) -> set[tuple[str, str]]:
    return set(holes_of(name).select("title", "hole").iter_rows())


@pytest.mark.parametrize("name, want", [
    ("joins.bpmn", set()),
    ("boundary_ok.bpmn", set()),
    ("parallel_ok.bpmn", set()),
    ("subprocess.bpmn", set()),
    ("collaboration.bpmn", set()),
    ("one_branch.bpmn", {("Claim valid?", "one_branch")}),
    ("boundary_exception_only.bpmn", {("Review draft", "dead_end")}),
    ("parallel_no_join.bpmn", {("Pack parcel", "runs_twice")}),
    ("deadlock.bpmn", {("Both done", "deadlock")}),
    ("unreachable_chain.bpmn", {("Restock shelves", "unreachable")}),
    ("no_lanes.bpmn", {("Invoice in", "no_owner")}),
    ("data.bpmn", {("Application", "unproduced_input"), ("Scoring policy", "unproduced_input"),
                   ("Decision letter", "unused_output")}),
    ("order_to_cash.bpmn", {("Hand over to collections", "dead_end"), ("Reject order", "dead_end")}),
])
def test_each_model_gives_exactly_its_holes(name, want):
    assert found(name) == want


# -- gateways, loops and joins that once gave wrong holes --------------------------------------------

def test_merging_gateways_are_never_one_branch():
    model = parse_bpmn((DATA / "joins.bpmn").read_bytes(), file="joins.bpmn")
    meta = {t: json.loads(m) for t, m in model.entries.select("title", "metadata").iter_rows()}
    joins = [t for t, m in meta.items() if m.get("gateway") == "exclusive" and t.startswith("Exclusive gateway")]
    assert len(joins) == 2  # two unnamed merges, each with two incoming flows and one outgoing
    assert find_holes(model.entries, model.edges).height == 0
    one = holes_of("one_branch.bpmn")  # a split with one outgoing flow still is one
    assert one["hole"].to_list() == ["one_branch"]


def test_an_exception_exit_is_not_the_normal_way_out():
    row = holes_of("boundary_exception_only.bpmn").row(0, named=True)
    assert row["hole"] == "dead_end" and "exception exits ('Review overdue')" in row["explanation"]
    assert "finishes normally" in row["question"]
    assert found("boundary_ok.bpmn") == set()  # the same task with a normal exit too: no hole


def test_parallel_semantics_runs_twice_and_deadlock():
    twice = holes_of("parallel_no_join.bpmn").row(0, named=True)
    assert twice["hole"] == "runs_twice" and twice["severity"] == "high"
    assert "2 paths of the parallel split" in twice["explanation"]
    assert [bpmn_id("Process_parallel", "End")] == twice["affects"]  # what follows runs twice too
    lock = holes_of("deadlock.bpmn").row(0, named=True)
    assert lock["hole"] == "deadlock" and "'Hardware fault?'" in lock["explanation"]
    assert found("parallel_ok.bpmn") == set()
    kinds = {json.loads(m).get("gateway") for m in parse_bpmn((DATA / "order_to_cash.bpmn").read_bytes()).entries["metadata"]}
    assert {"exclusive", "parallel", "event_based"} <= kinds


def test_consequences_are_grouped_under_their_cause():
    lost = holes_of("unreachable_chain.bpmn")
    assert lost.height == 1
    row = lost.row(0, named=True)
    cut = {bpmn_id("Process_unreachable", e) for e in ("Count", "Report", "End2")}
    assert set(row["affects"]) == cut and "cuts off 3 more steps" in row["explanation"]
    owners = holes_of("no_lanes.bpmn")
    assert owners.height == 1 and owners["hole"][0] == "no_owner"
    assert len(owners["affects"][0]) == 4 and "has no owner at all" in owners["explanation"][0]


def test_an_unlabelled_branch_is_described_once():
    row = holes_of("one_branch.bpmn").row(0, named=True)
    assert row["explanation"].count("END_EVENT") == 1 and row["question"].count("END_EVENT") == 1
    assert "(to 'END_EVENT') (to" not in row["explanation"] + row["question"]


# -- the mapping ------------------------------------------------------------------------------------

def _by_title(model):
    return {r["title"]: r for r in model.entries.iter_rows(named=True)}


def _edges(model):
    t = {r["id"]: r["title"] for r in model.entries.iter_rows(named=True)}
    return {(t[s], ty, t[d]): n for s, d, ty, n in model.edges.select("src", "dst", "type", "note").iter_rows()}


def test_lanes_nested_lanes_subprocess_and_documentation():
    model = parse_bpmn((DATA / "subprocess.bpmn").read_bytes(), file="subprocess.bpmn")
    rows, edges = _by_title(model), _edges(model)
    assert {t for t, r in rows.items() if r["kind"] == "role"} == {"Legal", "Drafting", "Approval"}
    assert ("Drafting", "part_of", "Legal") in edges and ("Prepare contract", "owned_by", "Drafting") in edges
    assert ("Read contract", "owned_by", "Approval") in edges  # inside the sub-process: the sub-process's lane
    assert ("Read contract", "part_of", "Contract review") in edges
    assert json.loads(rows["Read contract"]["metadata"])["flow"] == "Contracts / Contract review"
    assert rows["Prepare contract"]["summary"] == "Legal drafts the contract from the template."
    assert rows["Prepare contract"]["content"].endswith("checks the prices.")
    meta = json.loads(rows["Prepare contract"]["metadata"])
    assert meta["bpmn"] == {"file": "subprocess.bpmn", "process": "Process_sub", "element": "Prepare", "type": "task"}
    assert rows["Prepare contract"]["id"] == bpmn_id("Process_sub", "Prepare")


def test_data_objects_stores_conditions_defaults_and_boundary_events():
    model = parse_bpmn((DATA / "order_to_cash.bpmn").read_bytes(), file="o2c.bpmn")
    rows, edges = _by_title(model), _edges(model)
    assert ("Enter sales order", "requires", "Purchase order") in edges
    assert ("Purchase order received", "produces", "Purchase order") in edges
    assert ("Apply cash", "produces", "ERP") in edges and ("Check credit", "requires", "ERP") in edges
    erp = json.loads(rows["ERP"]["metadata"])
    assert rows["ERP"]["kind"] == "artifact" and erp["store"] and erp["input"] and erp["output"]
    assert edges[("Credit OK?", "precedes", "Reject order")] == "no"
    assert edges[("Credit OK?", "precedes", "Ship order")] == "yes"
    timer = json.loads(rows["No answer in 14 days"]["metadata"])
    assert timer["exception"] and timer["trigger"] == "timer" and timer["interrupting"] is False
    assert edges[("Hand over to collections", "precedes", "No answer in 14 days")] == "timer (exception)"
    assert ("No answer in 14 days", "owned_by", "AR clerk") in edges
    assert json.loads(rows["Exclusive gateway (O_merge)"]["metadata"])["gateway"] == "exclusive"
    assert "camunda" not in "".join(model.entries["metadata"])  # extensions ignored


def test_collaboration_pools_name_flows_and_messages_are_handoffs():
    model = parse_bpmn((DATA / "collaboration.bpmn").read_bytes(), file="collab.bpmn")
    assert model.flows == {"Process_buyer": "Buyer company", "Process_seller": "Supplier"}
    edges = _edges(model)
    assert edges[("Send order", "precedes", "Order in")] == "message: purchase order"
    handoff = model.edges.filter(pl.col("note") == "message: goods")["evidence"][0]
    assert json.loads(handoff)["bpmn"]["handoff"] is True
    assert len(model.skipped) == 1 and "M3" in model.skipped[0]  # to the collapsed Bank pool


@pytest.mark.parametrize("name, words", [
    ("bad_ref.bpmn", ["'Flow_dangling'", "targetRef 'Task_missing'"]),
    ("boundary_orphan.bpmn", ["'Timer_orphan'", "attachedToRef 'Task_gone'"]),
    ("entity.bpmn", ["DTDs and entity declarations are refused"]),
    ("malformed.bpmn", ["not well-formed XML"]),
    ("not_bpmn.bpmn", ["not BPMN 2.0 <definitions>"]),
])
def test_bad_files_raise_a_named_error(name, words):
    with pytest.raises(BpmnError) as err:  # strict: a dangling reference refuses the file too
        parse_bpmn((DATA / "invalid" / name).read_bytes(), file=name, strict=True)
    assert all(w in str(err.value) for w in words) and isinstance(err.value, kb.KbError)


# -- ingest into a bank -----------------------------------------------------------------------------

def test_ingest_order_to_cash_into_a_bank(tmp_path):
    bank = kb.create_bank(tmp_path / "bank")
    report = ingest_bpmn(bank, DATA / "order_to_cash.bpmn")
    assert report["created"] == bank.entries.height == 39 and report["updated"] == 0
    assert report["holes"] == 2 and set(report["flows"].values()) == {"Order to cash", "Customer"}
    kinds = dict(bank.entries.group_by("kind").len().iter_rows())
    assert kinds == {"step": 24, "decision": 6, "artifact": 4, "role": 5}
    flows = kb.process_flows(bank)
    assert set(flows["flow"]) == {"Order to cash", "Order to cash / Ship order", "Customer"} and flows["declared"].all()
    holes = kb.workflow_holes(bank)
    assert set(holes["title"]) == {"Hand over to collections", "Reject order"}
    assert holes.filter(pl.col("title") == "Reject order")["question"][0].startswith("Ask the Sales rep:")
    assert set(bank.edges["source"]) == {"import"} and bank.events.height > 0
    again = ingest_bpmn(bank, DATA / "order_to_cash.bpmn")
    assert (again["created"], again["updated"], again["archived"], again["edges_added"]) == (0, 0, 0, 0)


def test_reingesting_a_changed_file_updates_the_same_entries(tmp_path):
    path = tmp_path / "deadlock.bpmn"
    shutil.copy(DATA / "deadlock.bpmn", path)
    bank = kb.create_bank(tmp_path / "bank")
    ingest_bpmn(bank, path)
    ids = set(bank.entries["id"])
    text = path.read_text()  # the analyst fixes the deadlock, renames a task and drops the patch path
    text = text.replace('name="Install patch"', 'name="Install security patch"')
    text = text.replace('<bpmn:parallelGateway id="Wait"', '<bpmn:exclusiveGateway id="Wait"').replace(
        '</bpmn:parallelGateway>', '</bpmn:exclusiveGateway>', 1)
    path.write_text(text)
    report = ingest_bpmn(bank, path)
    assert set(bank.entries["id"]) == ids and report["created"] == 0 and report["updated"] == 2
    assert bank.entries.filter(pl.col("id") == bpmn_id("Process_deadlock", "Patch"))["title"][0] == "Install security patch"
    assert kb.workflow_holes(bank).height == 0
    tree = path.read_text().replace('<bpmn:sequenceFlow id="F5" sourceRef="Patch" targetRef="Wait" />', "")
    tree = tree.replace('<bpmn:sequenceFlow id="F3" sourceRef="Choose" targetRef="Patch" name="no" />', "")
    path.write_text(tree.replace('<bpmn:task id="Patch" name="Install security patch">', '<bpmn:task id="Patch_gone">'))
    report = ingest_bpmn(bank, path)
    assert report["archived"] == 1 and report["created"] == 1 and report["edges_removed"] >= 2
    gone = bank.entries.filter(pl.col("id") == bpmn_id("Process_deadlock", "Patch"))
    assert gone["status"][0] == "archived"
    assert bank.edges.filter(pl.col("src") == gone["id"][0]).height == 0
    assert "gone from the BPMN model" in bank.events["reason"].to_list()


def test_a_bad_file_in_a_folder_writes_nothing(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(DATA / "deadlock.bpmn", folder / "a_good.bpmn")
    shutil.copy(DATA / "invalid" / "bad_ref.bpmn", folder / "b_bad.bpmn")
    bank = kb.create_bank(tmp_path / "bank")
    with pytest.raises(BpmnError, match="Flow_dangling"):
        ingest_bpmn(bank, folder, strict=True)
    bank = kb.open_bank(tmp_path / "bank")
    assert bank.entries.height == 0 and bank.edges.height == 0 and bank.events.height == 0
    shutil.copy(DATA / "deadlock.bpmn", folder / "b_bad.bpmn")  # the same process id twice
    with pytest.raises(BpmnError, match="process id already defined"):
        ingest_bpmn(bank, folder)


def test_folder_ingest_dry_run_and_progress(tmp_path):
    bank = kb.create_bank(tmp_path / "bank")
    ticks = []
    report = ingest_bpmn(bank, DATA, dry_run=True, progress=lambda done, total: ticks.append((done, total)))
    assert report["dry_run"] and report["created"] > 100 and bank.entries.height == 0
    files = sorted(DATA.glob("*.bpmn"))
    assert len(files) == 22 and ticks[-1] == (22, 22) and len(report["files"]) == 22
    assert report["holes"] == sum(holes_of(p.name).height for p in files) == 16  # each file's holes, summed
    assert {b["element"] for b in report["broken"]} == {"F_ghost", "Late", "Ref_label"}  # broken_refs.bpmn


def test_export_colours_the_holes(tmp_path):
    bank = kb.create_bank(tmp_path / "bank")
    ingest_bpmn(bank, DATA / "order_to_cash.bpmn")
    out = export_bpmn_holes(bank, tmp_path / "o2c.holes.bpmn")
    assert [p.name for p in out] == ["o2c.holes.bpmn"]
    root = ET.parse(out[0]).getroot()
    bioc = "{http://bpmn.io/schema/bpmn/biocolor/1.0}"
    coloured = {s.get("bpmnElement"): s.get(f"{bioc}stroke") for s in root.iter("{http://www.omg.org/spec/BPMN/20100524/DI}BPMNShape")
                if s.get(f"{bioc}stroke")}
    assert coloured == {"O_collect": "#c62828", "O_reject": "#c62828"}
    text = out[0].read_text()
    assert 'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"' in text and "<bpmn:process" in text
    assert parse_bpmn(out[0].read_bytes()).entries.height == bank.entries.height  # still the same model
    with pytest.raises(BpmnError, match="DTDs"):
        color_bpmn((DATA / "invalid" / "entity.bpmn").read_bytes(), {})


def test_cli_holes_format_bpmn(tmp_path):
    bank = kb.create_bank(tmp_path / "bank")
    ingest_bpmn(bank, DATA / "parallel_no_join.bpmn")
    out = tmp_path / "shipping.bpmn"
    run = subprocess.run([sys.executable, "-m", "kbtools", "holes", str(tmp_path / "bank"), "--format", "bpmn",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "1 hole(s)" in run.stdout and str(out) in run.stdout
    assert 'bioc:stroke="#c62828"' in out.read_text()
    bad = subprocess.run([sys.executable, "-m", "kbtools", "holes", str(tmp_path / "bank"), "--format", "bpmn"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode != 0 and "--out" in bad.stderr + bad.stdout


def test_kb_ingest_hands_a_bpmn_file_to_the_bpmn_importer(tmp_path, capsys):
    from kbtools.cli.main import main

    assert main(["ingest", str(tmp_path / "b"), "--create", "--from", str(DATA / "deadlock.bpmn"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["holes"] == 1 and report["dry_run"] is False
    holes = kb.workflow_holes(kb.open_bank(tmp_path / "b"))
    assert holes["hole"].to_list() == ["deadlock"]
