"""BPMN models in and out of a bank: ``ingest_bpmn`` (files to one audited transaction) and
``export_bpmn_holes`` (the diagrams back with their holes coloured).

Reading is :func:`kbtools.model.bpmn.parse_bpmn` (pure); :func:`plan_ingest` (pure) compares what
the files hold with the bank: new elements are created, changed ones updated in place (same ids:
they derive from the BPMN ids), elements gone from a re-read process archived, and the process
edges the model no longer draws removed (edges that agents added by hand are kept). All files are
read and checked before anything is written. A broken element (a dangling reference) is left out
and listed in the report (``broken``) and among the holes (``broken_reference``); with
``strict=True`` it stops the ingest with its element named. A file that is not well-formed XML, or
holds no process, always stops it; nothing is written.

>>> import kbtools as kb, tempfile, pathlib  # doctest: +SKIP
>>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")  # doctest: +SKIP
>>> kb.ops.ingest_bpmn(bank, "tests/data/bpmn/order_to_cash.bpmn")["created"]  # doctest: +SKIP
38
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Callable

import polars as pl

from kbtools.errors import BpmnError, KbError
from kbtools.graph.holes import find_holes
from kbtools.model.bpmn import BpmnModel, color_bpmn, parse_bpmn
from kbtools.model.schema import SCHEMAS, conform
from kbtools.ops.interchange import plan_import
from kbtools.model.events import event_rows
from kbtools.model.plan import Plan
from kbtools.store.bank import Bank, utcnow

__all__ = ["ingest_bpmn", "plan_ingest", "read_models", "export_bpmn_holes"]

_COMPARED = ("kind", "title", "summary", "content", "useful_for", "systems", "tasks", "metadata")


def _files(source: str | os.PathLike) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.bpmn") if p.is_file())
        if not files:
            raise BpmnError(str(path), None, "the folder holds no .bpmn file")
        return files
    if not path.is_file():
        raise BpmnError(str(path), None, "no such file or folder")
    return [path]


def read_models(source: str | os.PathLike, *, strict: bool = False,
                progress: Callable | None = None) -> list[BpmnModel]:
    """Parse a .bpmn file or every .bpmn file under a folder (sorted); a process id defined by
    two files is refused (the id is the process's key). ``strict``: see :func:`parse_bpmn`."""
    files = _files(source)
    models, seen = [], {}
    for n, path in enumerate(files, 1):
        model = parse_bpmn(path.read_bytes(), file=str(path.resolve()), strict=strict)
        for pid in model.flows:
            if pid in seen:
                raise BpmnError(str(path), pid, f"process id already defined by {seen[pid]}; a process id names one "
                                                f"process (rename one of them)")
            seen[pid] = str(path)
        models.append(model)
        if progress:
            progress(n, len(files))
    return models


def _processes(entries: pl.DataFrame) -> pl.Series:
    return entries["metadata"].str.json_path_match("$.bpmn.process")


def plan_ingest(bank_entries: pl.DataFrame, bank_edges: pl.DataFrame, entries: pl.DataFrame, edges: pl.DataFrame,
                *, actor: str, now: datetime) -> tuple[Plan, dict]:
    """The Plan that make the bank hold exactly what the models say (pure), and a report:
    created, updated, unchanged, archived (entries), edges_added, edges_updated, edges_removed,
    flows."""
    old = bank_entries.filter(pl.col("id").is_in(entries["id"].implode()))
    new_entries = entries.filter(~pl.col("id").is_in(old["id"].implode()))
    joined = conform(entries, "entries").join(old, on="id", how="inner", suffix="_old")
    differs = pl.any_horizontal([pl.col(c).ne_missing(pl.col(f"{c}_old")) for c in _COMPARED]
                                + [pl.col("status_old") != "active"])
    changed = joined.filter(differs)
    updated = changed.select(
        "id", *[pl.col(c) for c in _COMPARED],
        *[pl.col(f"{c}_old").alias(c) for c in ("steps", "session_id", "created_at", "linked_at", "usage_count", "last_used_at")],
        status=pl.lit("active"), updated_at=pl.lit(now, dtype=SCHEMAS["entries"]["updated_at"]))
    processes = set(_processes(entries).drop_nulls().to_list())
    gone = bank_entries.filter(_processes(bank_entries).is_in(sorted(processes)) & (pl.col("status") == "active")
                               & ~pl.col("id").is_in(entries["id"].implode()))
    archived = gone.with_columns(status=pl.lit("archived"), updated_at=pl.lit(now, dtype=SCHEMAS["entries"]["updated_at"]))
    ours = set(entries["id"].to_list()) | set(gone["id"].to_list())
    keys = ["src", "dst", "type"]
    drawn = bank_edges.filter(pl.col("evidence").str.contains('"bpmn"', literal=True)
                              & (pl.col("src").is_in(sorted(ours)) | pl.col("dst").is_in(sorted(ours))))
    stale = drawn.join(edges.select(keys), on=keys, how="anti")
    existing = bank_edges.join(edges.select(keys), on=keys, how="semi")
    new_edges = edges.join(existing.select(keys), on=keys, how="anti")
    renoted = (edges.join(existing, on=keys, how="inner", suffix="_old")
               .filter(pl.col("note").ne_missing(pl.col("note_old")) | pl.col("evidence").ne_missing(pl.col("evidence_old")))
               .select(*keys, "note", "evidence", "source", "weight", "created_by", "created_at", "seen_at"))
    changes = plan_import(bank_entries, bank_edges, new_entries, new_edges, actor=actor, now=now, guard=False)
    events = [changes.appends["events"],
              event_rows([{"action": "entry.update", "src": r["id"], "payload": {"changed": r["_changed"]}}
                          for r in changed.with_columns(_changed=pl.concat_list(
                              [pl.when(pl.col(c).ne_missing(pl.col(f"{c}_old"))).then(pl.lit(c)) for c in _COMPARED]
                          ).list.drop_nulls()).iter_rows(named=True)], actor=actor, at=now, reason="BPMN model changed"),
              event_rows([{"action": "entry.update", "src": i, "payload": {"status": "archived"}} for i in gone["id"]],
                         actor=actor, at=now, reason="gone from the BPMN model"),
              event_rows([{"action": "edge.delete", "src": s, "dst": d, "type": t} for s, d, t in stale.select(keys).iter_rows()],
                         actor=actor, at=now, reason="no longer drawn in the BPMN model"),
              event_rows([{"action": "edge.update", "src": s, "dst": d, "type": t, "payload": {"note": n}}
                          for s, d, t, n in renoted.select(*keys, "note").iter_rows()], actor=actor, at=now,
                         reason="BPMN model changed")]
    upserts = dict(changes.upserts)
    upserts["entries"] = pl.concat([upserts["entries"], conform(updated, "entries"), conform(archived, "entries")])
    upserts["edges"] = pl.concat([upserts["edges"], conform(renoted, "edges")])
    report = {"created": new_entries.height, "updated": changed.height,
              "unchanged": old.height - changed.height, "archived": gone.height,
              "edges_added": new_edges.height, "edges_updated": renoted.height, "edges_removed": stale.height}
    return Plan(upserts=upserts, deletes={"edges": stale.select(keys)}, appends={"events": pl.concat(events)}), report


def _commit(bank: Bank, plan: Callable[[Bank], Plan], *, actor: str) -> None:
    """The one place this module writes: a single transaction (ported with the store's Plan)."""
    bank.apply(plan, actor=actor, reason="ingest BPMN")


def ingest_bpmn(bank: Bank, source: str | os.PathLike, *, actor: str = "ingest", dry_run: bool = False,
                strict: bool = False, progress: Callable | None = None) -> dict:
    """Read a .bpmn file (or a folder of them) into the bank as process flows, in one transaction.

    Returns a report: files, flows (per process: its flow name), created / updated / unchanged /
    archived entries, edges added / updated / removed, holes (found in the ingested flows),
    skipped (what the files hold that has no place in the bank, with the reason) and broken (each
    broken element left out: file, element, process, problem, entry). Re-ingesting a changed file
    updates the same entries. ``strict=True`` refuses a file at its first broken element; XML that
    is not well formed or a file without a process raises :class:`~kbtools.errors.BpmnError` in
    either mode, naming the file; nothing is written. ``dry_run`` reports without writing.

    >>> import kbtools as kb, tempfile, pathlib
    >>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> report = ingest_bpmn(bank, "tests/data/bpmn/deadlock.bpmn")
    >>> report["created"], report["holes"]
    (8, 1)
    """
    if not isinstance(actor, str) or not actor.strip():
        raise KbError(f"actor={actor!r}: an ingest needs a non-empty actor name")
    models = read_models(source, strict=strict, progress=progress)
    entries = pl.concat([m.entries for m in models])
    edges = pl.concat([m.edges for m in models]).unique(["src", "dst", "type"], keep="first", maintain_order=True)
    report: dict = {}

    def plan(b: Bank) -> Plan:
        changes, counts = plan_ingest(b.entries, b.edges, entries, edges, actor=actor, now=utcnow())
        report.update(counts)
        return Plan() if dry_run else changes

    _commit(bank, plan, actor=actor)
    flows = {pid: flow for m in models for pid, flow in m.flows.items()}
    mine = set(entries["id"].to_list())
    holes = find_holes(entries.with_columns(status=pl.lit("active")), edges) if dry_run else \
        find_holes(bank.entries, bank.edges).filter(pl.col("id").is_in(sorted(mine)))
    report.update(files=[m.entries["metadata"].str.json_path_match("$.bpmn.file")[0] for m in models if m.entries.height],
                  flows=flows, holes=holes.height, skipped=[s for m in models for s in m.skipped],
                  broken=[b for m in models for b in m.broken], dry_run=dry_run)
    return report


def export_bpmn_holes(bank: Bank, out: str | os.PathLike, *, source: str | os.PathLike | None = None,
                      lanes: bool = False) -> list[Path]:
    """Write each ingested BPMN diagram back with its holes coloured (see
    :func:`kbtools.model.bpmn.color_bpmn`); returns the files written.

    The diagrams are read from the files recorded at ingest (``metadata.bpmn.file``), or from
    ``source`` (a file or folder) when they have moved. ``out`` is a file when the bank holds one
    diagram, else a folder (one ``<name>.holes.bpmn`` per diagram). ``lanes``: as for
    :func:`~kbtools.graph.holes.find_holes`.

    >>> import kbtools as kb, tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> bank = kb.create_bank(tmp / "b"); _ = ingest_bpmn(bank, "tests/data/bpmn/deadlock.bpmn")
    >>> [p.name for p in export_bpmn_holes(bank, tmp / "deadlock.holes.bpmn")]
    ['deadlock.holes.bpmn']
    """
    meta = bank.entries.filter(pl.col("metadata").str.contains('"bpmn"', literal=True)).select(
        "id", pl.col("metadata").str.json_path_match("$.bpmn.file").alias("file"),
        pl.col("metadata").str.json_path_match("$.bpmn.element").alias("element"))
    if meta.height == 0:
        raise KbError(f"{bank.path}: the bank holds no ingested BPMN model (ingest one with kb.ops.ingest_bpmn)")
    holes = find_holes(bank.entries, bank.edges, lanes=lanes)
    marks = (holes.join(meta, on="id", how="inner").group_by("file", "element", maintain_order=True)
             .agg(pl.col("severity").first(), pl.col("hole").unique(maintain_order=True).str.join(", ")))
    given = {p.name: p for p in _files(source)} if source is not None else {}
    files = sorted(set(meta["file"].drop_nulls().to_list()))
    out = Path(out)
    written = []
    for file in files:
        path = given.get(Path(file).name, Path(file))
        if not path.is_file():
            raise BpmnError(file, None, "the diagram recorded at ingest is not there any more; pass its new place "
                                        "as source (kb holes ... --source FILE)")
        colour = {e: (s, h) for _, e, s, h in marks.filter(pl.col("file") == file).iter_rows()}
        target = out if len(files) == 1 and out.suffix == ".bpmn" else out / f"{path.stem}.holes.bpmn"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(color_bpmn(path.read_bytes(), colour, file=str(path)))
        written.append(target)
    return written
