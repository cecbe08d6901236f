"""BPMN files as modeling tools write them, and ``kb eval bpmn``, which measures the import on a
folder of reference models and their tool exports (laid out as the OMG BPMN MIWG test suite).

The models under tests/data/bpmn/serialisations/ are hand-written, each with a pattern a real export
showed: flows written into another process, a multi-byte encoding, ... The evaluation runs here on a
tiny folder built from the test models (each with a re-serialised copy), never on fetched files.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import BpmnError
from kbtools.evaluate.bpmn_exports import evaluate_bpmn_exports, export_holes, format_bpmn_exports, model_shape
from kbtools.graph.holes import find_holes
from kbtools.model.bpmn import color_bpmn, parse_bpmn
from kbtools.ops.bpmn import ingest_bpmn

DATA = pathlib.Path(__file__).parent / "data" / "bpmn"
SER = DATA / "serialisations"


def _make_models():
    spec = importlib.util.spec_from_file_location("make_models", DATA / "make_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def holes(path: pathlib.Path) -> set[tuple[str, str]]:
    model = parse_bpmn(path.read_bytes(), file=path.name)
    return set(find_holes(model.entries, model.edges).select("hole", "title").iter_rows())


# -- serialisation patterns of real exports ----------------------------------------------------------

def test_flows_written_into_another_process_are_read_where_their_ends_are():
    model = parse_bpmn((SER / "misplaced_flows.bpmn").read_bytes(), file="misplaced_flows.bpmn")
    assert model.broken == []
    titles = dict(model.entries.select("id", "title").iter_rows())
    steps = {(titles[s], titles[d]) for s, d, t in model.edges.select("src", "dst", "type").iter_rows() if t == "precedes"}
    assert {("Order received", "Pick items"), ("Take items from the shelf", "Items picked")} <= steps
    assert holes(SER / "misplaced_flows.bpmn") == set()


def test_a_flow_between_two_processes_stays_a_broken_reference():
    xml = (SER / "misplaced_flows.bpmn").read_text().replace(
        '<sequenceFlow id="F2" sourceRef="T_confirm" targetRef="E_confirmed"/>',
        '<sequenceFlow id="F2" sourceRef="T_confirm" targetRef="E_packed"/>')
    model = parse_bpmn(xml.encode(), file="cross.bpmn")
    assert [b["element"] for b in model.broken] == ["F2"]


def test_a_shift_jis_export_is_read_with_its_names():
    data = (SER / "shift_jis.bpmn").read_bytes()
    assert "梱包する".encode("shift_jis") in data and "梱包する".encode() not in data
    assert holes(SER / "shift_jis.bpmn") == {("dead_end", "ラベルを貼る"), ("unreachable", "ラベルを貼る")}
    assert "梱包する".encode() in color_bpmn(data, {})  # the coloured copy is written in UTF-8


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_wide_encodings_are_read(codec):
    text = (SER / "shift_jis.bpmn").read_bytes().decode("shift_jis").replace('encoding="Shift_JIS"',
                                                                          f'encoding="{codec.upper()}"')
    model = parse_bpmn(text.encode(codec), file=f"{codec}.bpmn")
    assert "梱包する" in model.entries["title"].to_list()


def test_an_entity_declaration_in_utf16_is_refused(tmp_path):
    data = (DATA / "invalid" / "entity_utf16.bpmn").read_bytes()
    assert data.startswith(b"\xff\xfe") and b"<!DOCTYPE" not in data  # two bytes a character
    for strict in (False, True):
        with pytest.raises(BpmnError, match="DTDs and entity declarations are refused"):
            parse_bpmn(data, file="entity_utf16.bpmn", strict=strict)
    bank = kb.create_bank(tmp_path / "bank")
    with pytest.raises(BpmnError, match="entity_utf16"):
        ingest_bpmn(bank, DATA / "invalid" / "entity_utf16.bpmn")
    assert kb.open_bank(tmp_path / "bank").entries.height == 0


def test_a_code_page_under_a_utf8_declaration_is_read_tolerant_and_refused_strict():
    data = (SER / "cp1252_declared_utf8.bpmn").read_bytes()
    assert b'encoding="UTF-8"' in data and "klären".encode("cp1252") in data and "klären".encode() not in data
    assert holes(SER / "cp1252_declared_utf8.bpmn") == {("dead_end", "Rechnung klären"),
                                                         ("unreachable", "Rechnung klären"),
                                                         ("no_owner", "Rechnung eingegangen")}
    with pytest.raises(BpmnError, match="not well-formed XML"):
        parse_bpmn(data, file="cp1252_declared_utf8.bpmn", strict=True)


def test_an_unknown_encoding_is_a_refusal_not_a_crash():
    with pytest.raises(BpmnError, match="not well-formed XML"):
        parse_bpmn(b'<?xml version="1.0" encoding="no-such-codec"?><definitions/>', file="x.bpmn")


# -- kb eval bpmn ------------------------------------------------------------------------------------

MODELS = ["order_to_cash.bpmn", "compensation.bpmn", "link_events.bpmn", "pooled.bpmn", "fake_join.bpmn"]


@pytest.fixture()
def suite(tmp_path):
    """A tiny folder in the MIWG layout: the reference models, and each re-serialised by a 'tool'."""
    plain = _make_models().plain
    ref, tool = tmp_path / "Reference", tmp_path / "Plain Writer 1.0"
    ref.mkdir()
    tool.mkdir()
    for name in MODELS:
        shutil.copy(DATA / name, ref / name)
        (tool / name.replace(".bpmn", "-export.bpmn")).write_bytes(plain((DATA / name).read_bytes()))
    return tmp_path


def test_every_reserialised_export_gives_its_references_holes(suite):
    report = evaluate_bpmn_exports(suite)
    assert report["files"] == 2 * len(MODELS) and report["read"] == 2 * len(MODELS)
    assert report["crashes"] == [] and report["refused"] == []
    assert (report["compared"], report["agree"], report["share"]) == (len(MODELS), len(MODELS), 1.0)
    assert (report["same_model"], report["same_model_share"]) == (len(MODELS), 1.0)  # only the writing differs
    assert [r["model"] for r in report["models"]] == sorted(n.removesuffix(".bpmn") for n in MODELS)
    assert report["disagreements"] == []


def test_a_changed_export_is_a_disagreement_named_by_element(suite):
    export = suite / "Plain Writer 1.0" / "order_to_cash-export.bpmn"
    xml = export.read_text()
    cut = xml.replace('<sequenceFlow id="OF18"', '<sequenceFlow id="OF18_gone"', 1)
    start = cut.index('<sequenceFlow id="OF18_gone"')
    export.write_text(cut[:start] + cut[cut.index("/>", start) + 2:])  # one flow fewer
    report = evaluate_bpmn_exports(suite)
    assert report["agree"] == len(MODELS) - 1
    [row] = report["disagreements"]
    assert row["file"] == "Plain Writer 1.0/order_to_cash-export.bpmn" and row["reference"] == "Reference/order_to_cash.bpmn"
    assert row["missing"] or row["extra"]
    assert row["same_model"] is False and any(d.startswith("-precedes") for d in row["model_differs"])
    assert all(isinstance(name, str) and not name.endswith(")") for _, name in row["missing"] + row["extra"])


def test_refusals_and_unmatched_exports_are_counted_not_compared(suite):
    (suite / "Plain Writer 1.0" / "compensation-roundtrip.bpmn").write_text("<definitions")  # malformed
    (suite / "Plain Writer 1.0" / "Z.9.9-export.bpmn").write_bytes((DATA / "deadlock.bpmn").read_bytes())
    report = evaluate_bpmn_exports(suite)
    assert [r["file"] for r in report["refused"]] == ["Plain Writer 1.0/compensation-roundtrip.bpmn"]
    assert "not well-formed XML" in report["refused"][0]["reason"]
    assert report["unmatched"] == ["Plain Writer 1.0/Z.9.9-export.bpmn"]
    assert report["compared"] == len(MODELS) and report["crashes"] == []
    text = format_bpmn_exports(report)
    assert "refused: 1" in text and "## Refused (1)" in text and "compensation-roundtrip.bpmn" in text


def test_the_shape_of_a_model_ignores_ids_order_and_names_spacing():
    a = (DATA / "pooled.bpmn").read_bytes()
    b = _make_models().plain(a)
    assert model_shape(a) == model_shape(b)
    renamed = a.replace(b'name="', b'name="  ', 1)  # leading spaces: the same name
    assert model_shape(renamed) == model_shape(a)


def test_unnamed_elements_are_compared_by_type_not_by_the_tools_id():
    xml = ('<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P">'
           '<task id="{t}"/></process></definitions>')
    assert export_holes(xml.format(t="Task_1").encode()) == export_holes(xml.format(t="sid-9F3A").encode()) \
        == {("dead_end", "task"): 1, ("no_owner", "task"): 1}


def test_kb_eval_bpmn_prints_the_shares_and_writes_json(suite, tmp_path):
    out = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "kbtools", "eval", "bpmn", str(suite), "--json-out", str(out)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "same holes as the reference: 5 (100.0 %)" in run.stdout and "| order_to_cash |" in run.stdout
    assert json.loads(out.read_text())["share"] == 1.0


def test_kb_eval_bpmn_refuses_a_missing_folder(tmp_path):
    with pytest.raises(kb.KbError, match="no such folder"):
        evaluate_bpmn_exports(tmp_path / "nope")
