"""Import and export: JSONL and Parquet files in the shape a PostgreSQL + pgvector bank exports
(``entries``; ``entry_edges`` with from, to, type, source, note, evidence, created_by, created_at).

Every row is validated before anything is written; a bad row is reported with its line number (1
for the first JSONL line / Parquet row) and the bank is left as it was.

>>> import tempfile, pathlib, json
>>> from kbtools.store.bank import create_bank
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> _ = (tmp / "e.jsonl").write_text(json.dumps({"id": "a1b2c3d4", "content": "Cache keys include the locale."}) + "\\n")
>>> import_files(create_bank(tmp / "b"), entries=tmp / "e.jsonl", actor="import")["entries"]
1
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from kbtools.model.plan import Plan
from kbtools.errors import EdgeRuleError, KbError, StorageError, ValidationError
from kbtools.model.guard import GUARD_MODES, transient_reason
from kbtools.model.rules import (
    cast_to_schema, check_schema, check_text, json_object_text, problems_edges, problems_entries, problems_triples,
)
from kbtools.model.schema import SCHEMAS, conform
from kbtools.store.bank import Bank, utcnow
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.model.events import edge_events, event_rows
from kbtools.ops.sections import format_of, prose
from kbtools.progress import Progress

__all__ = ["read_rows", "plan_import", "guard_flags", "guard_mode", "import_frames", "import_files", "export_bank", "EDGE_COLUMN_ALIASES"]

#: pgvector banks call the endpoints ``from`` and ``to``.
EDGE_COLUMN_ALIASES = {"from": "src", "to": "dst", "from_id": "src", "to_id": "dst", "edge_type": "type"}


def read_rows(path: str | os.PathLike, table: str) -> pl.DataFrame:
    """Rows of one table from a .jsonl / .json / .parquet file, column aliases resolved, with a
    ``_line`` column: each row's line in the file (1 for the first line; blank lines count) or its
    row number in a Parquet file, which import errors name.

    A file that cannot be read (a folder, not UTF-8, not Parquet), a JSONL line that is not a JSON
    object, and a row naming a column twice (``from`` and ``src``) are errors naming the file and
    the line.
    """
    path = Path(path)
    if not path.exists():
        raise KbError(f"{path}: no such file")
    if path.is_dir():
        raise ValidationError("file", str(path), "is a folder, not a file; give a .jsonl or .parquet file")
    if path.suffix == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except (pl.exceptions.PolarsError, OSError) as err:
            why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValidationError("file", str(path), f"not a readable Parquet file ({why})") from None
        _check_aliases(frame.columns, table, path.name, None)
        frame = frame.with_columns(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias("_line"))
    elif path.suffix in (".jsonl", ".ndjson", ".json"):
        frame = _frame_from_dicts(list(json_lines(path)), table, path.name)
    else:
        raise KbError(f"{path}: unsupported file type {path.suffix!r}; use .jsonl or .parquet")
    if table == "edges":
        frame = frame.rename({k: v for k, v in EDGE_COLUMN_ALIASES.items() if k in frame.columns})
    return frame


def json_lines(path: Path):
    """``(line number, object)`` for each non-blank line of a JSONL file, gzipped or not (blank lines
    counted); a line that is not UTF-8, not JSON or not an object is a ValidationError naming it."""
    with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte order mark
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValidationError("line", raw.strip()[:60], f"{path.name}: not UTF-8 text (byte 0x{raw[err.start]:02x} "
                                      f"at column {err.start + 1}); save the file as UTF-8", row=line_no) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                raise ValidationError("line", line.strip()[:60], f"{path.name}: not valid JSON ({getattr(err, 'msg', err)})",
                                      row=line_no) from None
            if not isinstance(obj, dict):
                raise ValidationError("line", obj, f"{path.name}: each line is a JSON object", row=line_no)
            yield line_no, obj


def _check_aliases(columns, table: str, name: str, line_no: int | None) -> None:
    """A row (or file) that names one column twice, by its alias and its name, is an error."""
    if table != "edges":
        return
    for alias, col in EDGE_COLUMN_ALIASES.items():
        if alias in columns and col in columns:
            raise ValidationError(alias, col, f"{name}: both {alias!r} and {col!r} are given; they name the same column, "
                                              "keep one", row=line_no)


def _frame_from_dicts(rows: list[tuple[int, dict]], table: str, name: str) -> pl.DataFrame:
    """A frame from ``(line, dict)`` pairs, with per-value type checks that name the line of a bad value."""
    schema = SCHEMAS[table]
    aliases = EDGE_COLUMN_ALIASES if table == "edges" else {}
    cols: dict[str, list] = {}
    for n, (line_no, obj) in enumerate(rows, start=1):
        _check_aliases(obj, table, name, line_no)
        for key, value in obj.items():
            col = aliases.get(key, key)
            if col not in schema:
                continue  # extra columns (an embedding, a tenant id) are not part of the bank
            value = _coerce(value, schema[col], col, line_no, name)
            cols.setdefault(col, [None] * (n - 1)).append(value)
        for col in cols:
            if len(cols[col]) < n:
                cols[col].append(None)
    frame = pl.DataFrame({c: pl.Series(c, v, dtype=schema[c]) for c, v in cols.items()}) if cols else pl.DataFrame()
    return frame.with_columns(pl.Series("_line", [line for line, _ in rows], dtype=pl.Int64)) if rows else frame


def _coerce(value, want, col: str, line_no: int, name: str):
    if value is None:
        return None
    if want == pl.String:
        if col in ("metadata", "evidence"):
            return json_object_text(col, value, row=line_no)
        if not isinstance(value, str):
            raise ValidationError(col, value, f"{name}: {col} must be a string", row=line_no)
        return check_text(col, value, row=line_no)
    if isinstance(want, pl.List):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError(col, value, f"{name}: {col} must be a list of strings", row=line_no)
        for v in value:
            check_text(col, v, row=line_no)
        return value
    if isinstance(want, pl.Datetime):
        try:
            if isinstance(value, bool):
                raise ValueError("a boolean")
            if isinstance(value, (int, float)):
                return datetime.fromtimestamp(value, tz=timezone.utc)
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except (ValueError, OverflowError, OSError):
            raise ValidationError(col, value, f"{name}: {col} must be an ISO 8601 timestamp or Unix seconds "
                                              "between the years 1 and 9999", row=line_no) from None
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    if want == pl.Float64:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError(col, value, f"{name}: {col} must be a number", row=line_no)
        return float(value)
    if want == pl.Int64:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(col, value, f"{name}: {col} must be an integer", row=line_no)
        return value
    return value


def _first(problems, lines: list[int] | None = None):
    """Raise the first problem, its row named by its line in the file (``lines``) or counted from 1."""
    if problems:
        p = problems[0]
        row = None if p.row is None else (lines[p.row] if lines is not None and p.row < len(lines) else p.row + 1)
        exc = EdgeRuleError if p.table == "edges" else ValidationError
        if exc is EdgeRuleError:
            raise EdgeRuleError(f"{p.table} line {row}: {p.column}={p.value!r}: {p.rule}")
        hint = _OWN_IDS if (p.table, p.column) == ("entries", "id") and p.value is not None else ""
        raise ValidationError(p.column, p.value, f"{p.table}: {p.rule}{hint}", row=row)


#: What an import whose ids are the user's own is told: ingest keeps such ids as keys.
_OWN_IDS = ("; to bring records with ids of your own, `kb ingest BANK --from FILE.jsonl --text-field content "
            "--key id` keeps each id as the entry's key (edges and citations resolve through it) and gives it a "
            "kbtools id")


def _lines(frame: pl.DataFrame) -> list[int]:
    """Each row's line in its file (the ``_line`` column of :func:`read_rows`), else 1, 2, 3, ..."""
    if "_line" in frame.columns:
        return frame["_line"].to_list()
    return list(range(1, frame.height + 1))


def _check_unique_ids(ent: pl.DataFrame, bank_entries: pl.DataFrame, lines: list[int]) -> None:
    """An imported id that repeats an earlier line, or an id the bank holds, names its line."""
    if ent.height == 0:
        return
    rows = ent.select("id").with_row_index("_row")
    again = rows.filter(~pl.col("id").is_first_distinct())
    if again.height:
        row, eid = again.row(0)
        first = rows.filter(pl.col("id") == eid)["_row"][0]
        raise ValidationError("id", eid, f"entries: ids are unique in a bank; line {lines[first]} has the same id",
                              row=lines[row])
    held = rows.join(bank_entries.select("id"), on="id", how="semi")
    if held.height:
        row, eid = held.row(0)
        raise ValidationError("id", eid, "entries: ids are unique in a bank; the bank already holds this id",
                              row=lines[row])


def _check_json_columns(frame: pl.DataFrame, columns: tuple[str, ...], lines: list[int]) -> None:
    """Every non-null value of the JSON text columns is a JSON object (frames from Parquet or polars)."""
    for col in columns:
        if col not in frame.columns:
            continue
        for i, value in enumerate(frame[col].to_list()):
            if value is not None and value != "{}":
                json_object_text(col, value, row=lines[i])


def guard_mode(guard) -> str:
    """The guard mode named by ``guard``: one of :data:`~kbtools.model.guard.GUARD_MODES`
    (``True`` is the old ``reject``, ``False`` is ``off``).

    >>> guard_mode(True), guard_mode("report")
    ('reject', 'report')
    """
    if guard is True:
        return "reject"
    if guard is False or guard is None:
        return "off"
    if guard not in GUARD_MODES:
        raise ValidationError("guard", guard, f"the guard mode is one of {', '.join(GUARD_MODES)}")
    return guard


def guard_flags(entries: pl.DataFrame) -> pl.DataFrame:
    """Entries the report_learning guard would refuse: ``(row, id, title, reason)``, ``row``
    counted from 1 (pure). A page of a reST or Markdown document (metadata ``format``, else the
    suffix of its ``doc``) is read by its prose (:func:`~kbtools.ops.sections.prose`): an example's
    shell session, output or ``/tmp`` path is not the author's transient state, and a page that is
    all code is not judged.

    >>> guard_flags(pl.DataFrame({"id": ["a1b2c3d4"], "title": ["t"], "content": ["$ ls\\nx\\n$ pwd"]})).row(0)[:2]
    (1, 'a1b2c3d4')
    >>> page = json.dumps({"doc": "s3/ls.rst"})
    >>> guard_flags(pl.DataFrame({"id": ["a1b2c3d4"], "title": ["ls"], "content": ["Lists it::\\n\\n  $ ls\\n  $ pwd"],
    ...                           "metadata": [page]})).height
    0
    """
    rows = []
    titles = entries["title"].to_list() if "title" in entries.columns else [None] * entries.height
    metadata = entries["metadata"].to_list() if "metadata" in entries.columns else [None] * entries.height
    for i, (eid, title, text, meta) in enumerate(zip(entries["id"].to_list(), titles, entries["content"].to_list(),
                                                     metadata)):
        if text and _page_format(meta) in ("rst", "markdown"):
            read = prose(text)
            if not read.strip():
                continue  # all code: no prose of the author's to judge
            text = read
        why = transient_reason(text)
        if why:
            rows.append((i + 1, eid, title, why))
    return pl.DataFrame(rows, schema={"row": pl.Int64, "id": pl.String, "title": pl.String, "reason": pl.String},
                        orient="row")


def _page_format(metadata) -> str | None:
    """The markup of an ingested document's page: its metadata ``format``, else its ``doc``'s suffix."""
    if not metadata or "doc" not in metadata:
        return None
    try:
        meta = json.loads(metadata)
    except ValueError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("doc"), str):
        return None
    return meta.get("format") or format_of(meta["doc"])


def plan_import(
    bank_entries: pl.DataFrame,
    bank_edges: pl.DataFrame,
    entries: pl.DataFrame | None,
    edges: pl.DataFrame | None,
    triples: pl.DataFrame | None = None,
    *,
    actor: str,
    now: datetime,
    guard: str | bool = "reject",
) -> Plan:
    """Validated Plan for a bulk import (pure). Errors name a row by its ``_line`` (the line in
    the file, see :func:`read_rows`) or, for a frame without one, its number counted from 1.

    Columns are first cast to the bank's types where that loses nothing
    (:func:`~kbtools.model.rules.cast_to_schema`: ``List(Null)``, int to float, naive datetimes);
    what cannot be cast is named. Missing entry fields get defaults (kind knowledge, status
    active, timestamps now); edge sources default to ``import`` and trusted edges to weight 1.0.
    ``guard="reject"`` refuses the whole import on the first row the guard flags; ``"report"`` and
    ``"off"`` import them (:func:`guard_flags` lists them).
    """
    entries = entries if entries is not None else pl.DataFrame(schema=SCHEMAS["entries"])
    edges = edges if edges is not None else pl.DataFrame(schema=SCHEMAS["edges"])
    ent_lines, edge_lines = _lines(entries), _lines(edges)
    entries, edges = entries.drop("_line", strict=False), edges.drop("_line", strict=False)
    if triples is not None:
        triples = triples.drop("_line", strict=False)
    entries = cast_to_schema(entries, "entries")
    edges = cast_to_schema(edges, "edges")
    check_schema(entries, "entries", required=("id", "content") if entries.height else ())
    check_schema(edges, "edges", required=("src", "dst", "type") if edges.height else ())
    ent = conform(entries, "entries").with_columns(
        pl.col("kind").fill_null("knowledge"),
        pl.col("status").fill_null("active"),
        pl.col("title").fill_null(pl.col("content").str.slice(0, 80)),
        pl.col("summary").fill_null(pl.col("content").str.slice(0, 200)),
        pl.col("useful_for").fill_null(""),
        pl.col("metadata").fill_null("{}"),
        pl.col("systems").fill_null([]),
        pl.col("tasks").fill_null([]),
        pl.col("steps").fill_null([]),
        pl.col("created_at").fill_null(now),
        pl.col("usage_count").fill_null(0),
    ).with_columns(pl.col("updated_at").fill_null(pl.col("created_at")))
    _check_unique_ids(ent, bank_entries, ent_lines)
    _check_json_columns(ent, ("metadata",), ent_lines)
    _first(problems_entries(ent), ent_lines)
    if guard_mode(guard) == "reject":
        flagged = guard_flags(ent)
        if flagged.height:
            row, _, _, why = flagged.row(0)
            raise ValidationError("content", ent["content"][row - 1],
                                  f"rejected by the guard: {why} (--guard report imports it and lists it)",
                                  row=ent_lines[row - 1])
    ed = conform(edges, "edges").with_columns(
        pl.col("source").fill_null("import"),
        pl.col("evidence").fill_null("{}"),
        pl.col("created_by").fill_null(actor),
        pl.col("created_at").fill_null(now),
    )
    ed = ed.with_columns(
        pl.col("type").replace({"related_to": "see_also"}),
        pl.when(pl.col("weight").is_null() & pl.col("source").is_in(sorted(TRUSTED_SOURCES))).then(1.0).otherwise(pl.col("weight")).alias("weight"),
        pl.col("seen_at").fill_null(pl.col("created_at")),
    )
    ids = pl.concat([bank_entries["id"], ent["id"]])
    _check_json_columns(ed, ("evidence",), edge_lines)
    _first(problems_edges(ed, ids), edge_lines)
    clash = ed.with_row_index("_row").join(bank_edges.select("src", "dst", "type"), on=["src", "dst", "type"], how="semi")
    if clash.height:
        r = clash.row(0, named=True)
        raise EdgeRuleError(f"edges line {edge_lines[r['_row']]}: edge {r['src']} -> {r['dst']} ({r['type']}) already exists; (src, dst, type) is unique")
    tri = None
    if triples is not None and triples.height:
        tri = conform(triples, "triples").with_columns(pl.col("created_by").fill_null(actor), pl.col("created_at").fill_null(now))
        _first(problems_triples(tri))
    n = ent.height
    events = [
        pl.DataFrame(
            {
                "at": pl.Series([now] * n, dtype=SCHEMAS["events"]["at"]),
                "actor": [actor] * n, "action": ["entry.create"] * n, "src": ent["id"],
                "dst": [None] * n, "type": [None] * n, "reason": ["import"] * n,
                "payload": ent.select(pl.struct("kind", "title").struct.json_encode())[:, 0],
            },
            schema=SCHEMAS["events"],
        ),
        edge_events(ed, "edge.create", actor=actor, at=now, reason="import"),
    ]
    if tri is not None:
        events.append(event_rows([{"action": "triple.create", "payload": {"rows": tri.height}}], actor=actor, at=now, reason="import"))
    upserts = {"entries": ent, "edges": ed}
    if tri is not None:
        upserts["triples"] = tri
    return Plan(upserts=upserts, appends={"events": pl.concat(events)})


def import_frames(
    bank: Bank, *, entries: pl.DataFrame | None = None, edges: pl.DataFrame | None = None,
    triples: pl.DataFrame | None = None, actor: str = "import", guard: str | bool = "report",
    settings: dict | None = None, embed: bool = True, progress: Progress = None,
) -> dict:
    """Import frames into the bank in one transaction; returns row counts and, with
    ``guard="report"`` (the default), the rows the guard flags (imported all the same).

    The imported entries are embedded in the same transaction when the bank's writes embed (a
    bank created with an embedder, or one whose entries all have vectors); ``embed=False`` leaves
    them for ``kb embed``; ``progress`` (see :mod:`kbtools.progress`) reports that embedding.

    ``guard``: ``"report"``, ``"reject"`` (one flagged row refuses the import) or ``"off"``.
    ``settings``: bank settings recorded in the same transaction (ingest records its citation
    pattern there for backfill).
    """
    mode = guard_mode(guard)
    counts: dict = {}

    def plan(b: Bank) -> Plan:
        ch = plan_import(b.entries, b.edges, entries, edges, triples, actor=actor, now=utcnow(), guard=mode)
        counts.update({"entries": ch.upserts["entries"].height, "edges": ch.upserts["edges"].height,
                       "triples": ch.upserts["triples"].height if "triples" in ch.upserts else 0})
        if mode == "report":
            counts["flagged"] = guard_flags(ch.upserts["entries"]).to_dicts()
        vectors = None
        if embed and ch.upserts["entries"].height:
            from kbtools.ops.embedding import vectors_for_write  # the embedder loads only when used

            vectors = vectors_for_write(b, ch.upserts["entries"], progress=progress)
        if settings or vectors is not None:
            ch = Plan(upserts=ch.upserts, appends=ch.appends, settings=dict(settings or {}), vectors=vectors)
        return ch

    bank.apply(plan, actor=actor)
    return counts


def import_files(bank: Bank, *, entries=None, edges=None, triples=None, actor: str = "import",
                 guard: str | bool = "report", embed: bool = True, progress: Progress = None) -> dict:
    """Import JSONL or Parquet files (pgvector export shape) in one transaction (``guard``,
    ``embed`` and ``progress`` as in :func:`import_frames`)."""
    ent = read_rows(entries, "entries") if entries else None
    ed = read_rows(edges, "edges") if edges else None
    tri = read_rows(triples, "triples") if triples else None
    return import_frames(bank, entries=ent, edges=ed, triples=tri, actor=actor, guard=guard, embed=embed,
                         progress=progress)


def export_bank(bank: Bank, to: str | os.PathLike, *, format: str = "jsonl") -> dict:
    """Write entries.<ext>, entry_edges.<ext> (from/to naming), triples and events to a folder.

    Returns the files written and their row counts; a folder that cannot be written is a
    StorageError naming it (reads never write the bank itself).
    """
    if format not in ("jsonl", "parquet"):
        raise KbError(f"export format {format!r}: use 'jsonl' or 'parquet'")
    out = Path(to)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StorageError(err.filename or out, err.errno, f"cannot create the export folder ({err.strerror})") from None
    frames = {
        "entries": bank.entries,
        "entry_edges": bank.edges.rename({"src": "from", "dst": "to"}),
        "triples": bank.triples,
        "events": bank.events,
    }
    written = {}
    for name, frame in frames.items():
        path = out / f"{name}.{format}"
        try:
            if format == "jsonl":
                frame.write_ndjson(path)
            else:
                frame.write_parquet(path)
        except (OSError, pl.exceptions.PolarsError) as err:
            raise StorageError(path, getattr(err, "errno", None), f"cannot write the export ({err})") from None
        written[str(path)] = frame.height
    return written
