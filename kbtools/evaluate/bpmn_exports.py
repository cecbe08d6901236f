"""BPMN import on real tool exports: does every tool's copy of a model give the reference's holes?

The folder is laid out as the OMG BPMN Model Interchange Working Group's test suite: reference
models in folders named ``Reference`` (``Reference/A.1.0.bpmn``), and the same models exported by
tools in folders of their own (``<Tool>/A.1.0-export.bpmn``, ``<Tool>/A.1.0-roundtrip.bpmn``), at
any depth. Every file is imported tolerant (:func:`~kbtools.model.bpmn.parse_bpmn`), and counted
as read, refused (a :class:`~kbtools.errors.KbError`: malformed XML, no process, ...) or crashed
(any other exception: a bug). The holes of each export (kind and the element's name, spaces and
case folded; ids differ between tools, so an unnamed element is named by its type) are compared
with its reference's. Pure reading: nothing is written.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "Reference").mkdir(); (root / "Tool").mkdir()
>>> xml = ('<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="{p}">'
...        '<startEvent id="S" name="Start"/><task id="{t}" name="Pack"/>'
...        '<sequenceFlow id="F" sourceRef="S" targetRef="{t}"/></process></definitions>')
>>> _ = (root / "Reference" / "M.1.bpmn").write_text(xml.format(p="P", t="T"))
>>> _ = (root / "Tool" / "M.1-export.bpmn").write_text(xml.format(p="Q", t="Task_7"))
>>> report = evaluate_bpmn_exports(root)
>>> report["files"], report["crashes"], report["compared"], report["agree"]
(2, [], 1, 1)
"""

from __future__ import annotations

import os
import re
import traceback
from collections import Counter
from pathlib import Path

import polars as pl

from kbtools.errors import KbError
from kbtools.graph.holes import find_holes
from kbtools.model.bpmn import BpmnModel, parse_bpmn

__all__ = ["evaluate_bpmn_exports", "format_bpmn_exports", "export_holes", "model_shape"]

_EXPORT = re.compile(r"^(?P<model>.+?)[-_ ](?:export|roundtrip|import)$", re.IGNORECASE)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip().casefold()


def _names(model: BpmnModel) -> dict[str, str]:
    """Entry id -> the element's name, spaces and case folded; an element without a name is named
    by its type (``start event``), not by its id, which each tool numbers its own way."""
    meta = model.entries.select("id", "title", pl.col("metadata").str.json_path_match("$.bpmn.element").alias("element"),
                                pl.col("metadata").str.json_path_match("$.bpmn.type").alias("type"))
    out = {}
    for id_, title, element, type_ in meta.iter_rows():
        if element and type_ and (title.endswith(f"({element})") or title == f"Lane {element}"):
            title = re.sub(r"(?<!^)([A-Z])", r" \1", type_)  # no name: the title carries the tool's id
        out[id_] = _norm(title)
    return out


def export_holes(xml: bytes, *, file: str = "model.bpmn") -> Counter:
    """The holes of one BPMN document, tool independent: a multiset (``Counter``) of (hole kind,
    element name): two flows with the same hole on a like-named element count twice.

    The name is the element's ``name`` with spaces and case folded; an element without a name is
    named by its type (``start event``), not by its id, which each tool numbers its own way.
    Raises what :func:`~kbtools.model.bpmn.parse_bpmn` raises.

    >>> xml = (b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P">'
    ...        b'<task id="T" name="Pack\\n  parcel"/></process></definitions>')
    >>> sorted(export_holes(xml).elements())
    [('dead_end', 'pack parcel'), ('no_owner', 'pack parcel')]
    """
    return _read(xml, file)[0]


def model_shape(xml: bytes, *, file: str = "model.bpmn") -> Counter:
    """What a document models, tool independent: a multiset of its elements (kind and name, with
    whether a lane or pool owns it) and of the process edges between them (type and the two names).
    Two exports with the same shape hold the same model however they are written; a tool that
    drops a flow, adds a pool or renames a task gives another shape.

    >>> a = (b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P">'
    ...      b'<task id="{t}" name="Pack"/></process></definitions>')
    >>> model_shape(a.replace(b"{t}", b"T1")) == model_shape(a.replace(b"{t}", b"sid-7"))
    True
    """
    return _read(xml, file)[1]


def _read(xml: bytes, file: str) -> tuple[Counter, Counter, int]:
    """(holes, shape, elements left out as broken) of one document."""
    model = parse_bpmn(xml, file=file)
    names = _names(model)
    holes: Counter = Counter()
    for id_, hole in find_holes(model.entries, model.edges).select("id", "hole").iter_rows():
        holes[(hole, names[id_])] += 1
    owned = set(model.edges.filter(pl.col("type") == "owned_by")["src"].to_list())
    pooled = model.entries.filter(pl.col("metadata").str.contains('"pool"', literal=True))["id"].to_list()
    shape: Counter = Counter()
    for id_, kind in model.entries.select("id", "kind").iter_rows():
        shape[("element", kind, names[id_], id_ in owned or id_ in pooled)] += 1
    for src, dst, type_ in model.edges.select("src", "dst", "type").iter_rows():
        if type_ != "owned_by":
            shape[("edge", type_, names.get(src, ""), names.get(dst, ""))] += 1
    return holes, shape, len(model.broken)


def _layout(root: Path) -> tuple[dict[str, list[Path]], list[Path]]:
    """(model name -> its reference files, every other .bpmn file) under ``root``."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".bpmn")
    references: dict[str, list[Path]] = {}
    others = []
    for path in files:
        if "reference" in (part.casefold() for part in path.relative_to(root).parts[:-1]):
            references.setdefault(path.stem.casefold(), []).append(path)
        else:
            others.append(path)
    return references, others


def _reference_for(path: Path, candidates: list[Path]) -> Path:
    """The reference nearest to an export (the longest shared folder prefix: a test-suite
    category's own Reference folder before a top-level one)."""
    return max(candidates, key=lambda ref: (len(os.path.commonpath([ref.parent, path.parent])), -len(ref.parts)))


def evaluate_bpmn_exports(folder: str | os.PathLike) -> dict:
    """Import every .bpmn file under ``folder`` tolerant and compare each export's holes with its
    reference's (see the module doc for the layout).

    Returns a report: files, read, refused (file, reason), crashes (file, error), broken (files
    with elements left out as broken, and how many), compared (exports with a readable reference),
    agree, share; same_model (exports whose :func:`model_shape` is the reference's: the tool kept
    the model and changed only how it is written), same_model_agree, same_model_share; models (per
    model: reference, exports, agree, share, same_model, same_model_agree), disagreements (file,
    reference, missing: holes only the reference has, extra: holes only the export has,
    same_model, model_differs: a few shape items only one side has, ``-`` the reference's) and
    unmatched (exports whose model has no reference file).
    """
    root = Path(folder)
    if not root.is_dir():
        raise KbError(f"{root}: no such folder; pass a folder laid out as the BPMN MIWG test suite "
                      f"(Reference/<model>.bpmn beside <Tool>/<model>-export.bpmn)")
    references, others = _layout(root)
    if not references and not others:
        raise KbError(f"{root}: the folder holds no .bpmn file")
    results: dict[Path, tuple[Counter, Counter] | None] = {}
    report: dict = {"folder": str(root), "files": 0, "read": 0, "refused": [], "crashes": [], "broken": []}

    def read(path: Path) -> tuple[Counter, Counter] | None:
        if path in results:
            return results[path]
        rel = str(path.relative_to(root))
        report["files"] += 1
        got = None
        try:
            holes, shape, left_out = _read(path.read_bytes(), rel)
            got = (holes, shape)
            if left_out:
                report["broken"].append({"file": rel, "elements": left_out})
            report["read"] += 1
        except KbError as err:
            reason = str(err)
            report["refused"].append({"file": rel, "reason": reason.removeprefix(f"{rel}: ")})
        except Exception as err:  # a crash is a bug: counted and shown, never hidden
            where = traceback.extract_tb(err.__traceback__)[-1]
            report["crashes"].append({"file": rel, "error": f"{type(err).__name__}: {err}",
                                      "at": f"{Path(where.filename).name}:{where.lineno}"})
        results[path] = got
        return got

    for paths in references.values():
        for ref in paths:
            read(ref)
    models: dict[str, dict] = {}
    disagreements, unmatched = [], []
    for path in others:
        got = read(path)
        match = _EXPORT.match(path.stem)
        model = (match.group("model") if match else path.stem).casefold()
        if model not in references:
            unmatched.append(str(path.relative_to(root)))
            continue
        ref = _reference_for(path, references[model])
        want = results[ref]
        if want is None or got is None:  # a refused or crashed file is counted as such, not compared
            continue
        (got_holes, got_shape), (want_holes, want_shape) = got, want
        same_model = got_shape == want_shape
        row = models.setdefault(model, {"model": ref.stem, "reference": str(ref.relative_to(root)), "exports": 0,
                                        "agree": 0, "same_model": 0, "same_model_agree": 0})
        row["exports"] += 1
        row["same_model"] += same_model
        if got_holes == want_holes:
            row["agree"] += 1
            row["same_model_agree"] += same_model
        else:
            disagreements.append({
                "file": str(path.relative_to(root)), "reference": str(ref.relative_to(root)),
                "missing": sorted((want_holes - got_holes).elements()), "extra": sorted((got_holes - want_holes).elements()),
                "same_model": same_model,
                "model_differs": [] if same_model else
                [f"-{_shape_item(i)}" for i in sorted((want_shape - got_shape).elements())][:4]
                + [f"+{_shape_item(i)}" for i in sorted((got_shape - want_shape).elements())][:4]})
    for row in models.values():
        row["share"] = row["agree"] / row["exports"]
    compared = sum(r["exports"] for r in models.values())
    agree = sum(r["agree"] for r in models.values())
    same = sum(r["same_model"] for r in models.values())
    same_agree = sum(r["same_model_agree"] for r in models.values())
    report.update(compared=compared, agree=agree, share=(agree / compared) if compared else None,
                  same_model=same, same_model_agree=same_agree, same_model_share=(same_agree / same) if same else None,
                  refused_share=len(report["refused"]) / report["files"] if report["files"] else 0.0,
                  models=sorted(models.values(), key=lambda r: _natural(r["model"])),
                  disagreements=disagreements, unmatched=unmatched)
    return report


def _shape_item(item: tuple) -> str:
    if item[0] == "element":
        return f"{item[1]} '{item[2]}'" + (" (owned)" if item[3] else "")
    return f"{item[1]} '{item[2]}' -> '{item[3]}'"


def _natural(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def format_bpmn_exports(report: dict) -> str:
    """The report as markdown: counts, the share per model and overall, every disagreement,
    refusal and crash.

    >>> print(format_bpmn_exports({"folder": "x", "files": 0, "read": 0, "refused": [], "crashes": [],
    ...     "broken": [], "compared": 0, "agree": 0, "share": None, "refused_share": 0.0, "models": [],
    ...     "disagreements": [], "unmatched": []}).splitlines()[2])
    files: 0 · read: 0 · refused: 0 (0.0 %) · crashed: 0
    """
    pct = lambda x: "n/a" if x is None else f"{100 * x:.1f} %"  # noqa: E731
    lines = [f"# BPMN exports against their references: {report['folder']}", "",
             f"files: {report['files']} · read: {report['read']} · refused: {len(report['refused'])} "
             f"({pct(report['refused_share'])}) · crashed: {len(report['crashes'])}",
             f"exports compared: {report['compared']} · same holes as the reference: {report['agree']} "
             f"({pct(report['share'])})",
             f"exports that hold the reference's model (same elements, flows and owners): "
             f"{report.get('same_model', 0)} · of them with the same holes: {report.get('same_model_agree', 0)} "
             f"({pct(report.get('same_model_share'))})", ""]
    if report["models"]:
        lines += ["| model | reference | exports | same holes | share | same model | of them same holes |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['model']} | {r['reference']} | {r['exports']} | {r['agree']} | {pct(r['share'])} "
                  f"| {r.get('same_model', 0)} | {r.get('same_model_agree', 0)} |" for r in report["models"]]
        lines.append("")
    for title, rows, show in (
            ("Disagreements", report["disagreements"],
             lambda r: f"- {r['file']} (reference {r['reference']}): only the reference: "
                       f"{_holes(r['missing'])}; only the export: {_holes(r['extra'])}; "
                       + ("same model: a reading difference" if r.get("same_model") else
                          f"the model differs: {', '.join(r.get('model_differs', []))}")),
            ("Refused", report["refused"], lambda r: f"- {r['file']}: {r['reason']}"),
            ("Crashes", report["crashes"], lambda r: f"- {r['file']}: {r['error']} ({r['at']})"),
            ("Elements left out as broken (tolerant import)", report["broken"],
             lambda r: f"- {r['file']}: {r['elements']}"),
            ("Exports without a reference", [{"file": f} for f in report["unmatched"]], lambda r: f"- {r['file']}")):
        if rows:
            lines += [f"## {title} ({len(rows)})", ""] + [show(r) for r in rows] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _holes(holes: list) -> str:
    return ", ".join(f"{kind} '{name}'" for kind, name in holes) or "—"
