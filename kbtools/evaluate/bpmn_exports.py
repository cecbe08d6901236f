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
from pathlib import Path

import polars as pl

from kbtools.errors import KbError
from kbtools.graph.holes import find_holes
from kbtools.model.bpmn import parse_bpmn

__all__ = ["evaluate_bpmn_exports", "format_bpmn_exports", "export_holes"]

_EXPORT = re.compile(r"^(?P<model>.+?)[-_ ](?:export|roundtrip|import)$", re.IGNORECASE)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip().casefold()


def export_holes(xml: bytes, *, file: str = "model.bpmn") -> set[tuple[str, str]]:
    """The holes of one BPMN document, tool independent: a set of (hole kind, element name).

    The name is the element's ``name`` with spaces and case folded; an element without a name is
    named by its type (``start event``), not by its id, which each tool numbers its own way.
    Raises what :func:`~kbtools.model.bpmn.parse_bpmn` raises.

    >>> xml = (b'<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="P">'
    ...        b'<task id="T" name="Pack\\n  parcel"/></process></definitions>')
    >>> sorted(export_holes(xml))
    [('dead_end', 'pack parcel'), ('no_owner', 'pack parcel')]
    """
    model = parse_bpmn(xml, file=file)
    holes = find_holes(model.entries, model.edges)
    if holes.height == 0:
        return set()
    meta = model.entries.select("id", pl.col("metadata").str.json_path_match("$.bpmn.element").alias("element"),
                                pl.col("metadata").str.json_path_match("$.bpmn.type").alias("type"))
    named = holes.join(meta, on="id", how="left")
    out = set()
    for hole, title, element, type_ in named.select("hole", "title", "element", "type").iter_rows():
        if element and type_ and title.endswith(f"({element})"):  # no name: the title carries the tool's id
            title = re.sub(r"(?<!^)([A-Z])", r" \1", type_)
        out.add((hole, _norm(title)))
    return out


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
    agree, share, models (per model: reference, exports, agree, share), disagreements (file,
    reference, missing: holes only the reference has, extra: holes only the export has) and
    unmatched (exports whose model has no reference file).
    """
    root = Path(folder)
    if not root.is_dir():
        raise KbError(f"{root}: no such folder; pass a folder laid out as the BPMN MIWG test suite "
                      f"(Reference/<model>.bpmn beside <Tool>/<model>-export.bpmn)")
    references, others = _layout(root)
    if not references and not others:
        raise KbError(f"{root}: the folder holds no .bpmn file")
    results: dict[Path, set | None] = {}
    report: dict = {"folder": str(root), "files": 0, "read": 0, "refused": [], "crashes": [], "broken": []}

    def read(path: Path) -> set | None:
        if path in results:
            return results[path]
        rel = str(path.relative_to(root))
        report["files"] += 1
        holes = None
        try:
            data = path.read_bytes()
            holes = export_holes(data, file=rel)
            left_out = len(parse_bpmn(data, file=rel).broken)
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
        results[path] = holes
        return holes

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
        row = models.setdefault(model, {"model": ref.stem, "reference": str(ref.relative_to(root)), "exports": 0,
                                        "agree": 0})
        row["exports"] += 1
        if got == want:
            row["agree"] += 1
        else:
            disagreements.append({"file": str(path.relative_to(root)), "reference": str(ref.relative_to(root)),
                                  "missing": sorted(want - got), "extra": sorted(got - want)})
    for row in models.values():
        row["share"] = row["agree"] / row["exports"]
    compared = sum(r["exports"] for r in models.values())
    agree = sum(r["agree"] for r in models.values())
    report.update(compared=compared, agree=agree, share=(agree / compared) if compared else None,
                  refused_share=len(report["refused"]) / report["files"] if report["files"] else 0.0,
                  models=sorted(models.values(), key=lambda r: _natural(r["model"])),
                  disagreements=disagreements, unmatched=unmatched)
    return report


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
             f"({pct(report['share'])})", ""]
    if report["models"]:
        lines += ["| model | reference | exports | same holes | share |", "|---|---|---|---|---|"]
        lines += [f"| {r['model']} | {r['reference']} | {r['exports']} | {r['agree']} | {pct(r['share'])} |"
                  for r in report["models"]]
        lines.append("")
    for title, rows, show in (
            ("Disagreements", report["disagreements"],
             lambda r: f"- {r['file']} (reference {r['reference']}): only the reference: "
                       f"{_holes(r['missing'])}; only the export: {_holes(r['extra'])}"),
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
