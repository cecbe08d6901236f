"""Ingest a version-control history as a bank: one entry per commit.

A commits file is JSONL (gzipped or not), one object a line with ``sha`` (the full hash),
``parents``, ``author``, ``date`` (ISO 8601), ``subject`` and ``body`` (what ``git log`` shows);
``body`` and ``parents`` may be left out or null (a one-line message, a root commit), as exporters
write them.
Each commit becomes one entry: title the subject, content the body (the subject when the body is
empty), ``created_at`` the date, id the first 8 characters of the hash (so that the bank's ids
read as the project's short hashes). Metadata keeps the full hash (``key``, ``sha``), the parents,
the author and the issue or pull-request numbers of the trailers (``Fixes #N``, ``Closes #N``,
``Ref: #N``, as ``fixes``, ``closes``, ``refs``): metadata, not edges, since sharing an issue says
less than naming a commit.

References to other commits (``Follow-up to <sha>``, ``This reverts commit <sha>``, a hash in
prose) are what ``kb backfill`` turns into ``cites`` edges: ingest records the citation pattern
:data:`COMMIT_CITE` with prefix resolution, so that an abbreviated hash of 7 to 40 characters
resolves to the one commit whose full hash starts with it (a hash older than the file, or one two
commits share, resolves to nothing and is counted).

>>> recs = [{"sha": "5c61e168698a72b87437d58ed728bcdea6d5db42", "parents": [], "author": "Ann",
...          "date": "2026-08-22T15:01:09+03:00", "subject": "docs: fix", "body": "Follow-up to 1086f513b8\\n\\nCloses #22638"}]
>>> plan = plan_commits(recs)
>>> plan.entries.select("id", "title").row(0), json.loads(plan.entries["metadata"][0])["closes"]
(('5c61e168', 'docs: fix'), ['22638'])
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

import polars as pl

from kbtools.errors import KbError, ValidationError
from kbtools.ops.citations import plan_pattern_citations
from kbtools.ops.sections import first_sentence
from kbtools.ops.interchange import json_lines
from kbtools.progress import Progress
from kbtools.store.bank import Bank

__all__ = ["COMMIT_FIELDS", "REQUIRED_FIELDS", "COMMIT_CITE", "CommitPlan", "is_commits_file", "read_commits",
           "plan_commits",
           "ingest_commits"]

#: The fields that make a record a commit.
COMMIT_FIELDS: tuple[str, ...] = ("sha", "parents", "author", "date", "subject", "body")
#: The fields every commit record must have (``body`` and ``parents`` read as empty when absent or null).
REQUIRED_FIELDS: tuple[str, ...] = ("sha", "author", "date", "subject")
#: The citation pattern a commits bank records for backfill: a hash of 7 to 40 hex characters,
#: resolved by unique prefix against the commits' full hashes.
COMMIT_CITE: dict = {"pattern": r"(?<![0-9A-Za-z])([0-9a-f]{7,40})(?![0-9A-Za-z])", "resolve": "prefix"}
_SHA = re.compile(r"[0-9a-f]{40}")
_TRAILERS = {"fixes": re.compile(r"^\s*Fixes:?\s*((?:#\d+[\s,]*)+)", re.I | re.M),
             "closes": re.compile(r"^\s*Closes:?\s*((?:#\d+[\s,]*)+)", re.I | re.M),
             "refs": re.compile(r"^\s*Ref(?:s)?:\s*((?:#\d+[\s,]*)+)", re.I | re.M)}
_ENTRY_SCHEMA = {"id": pl.String, "kind": pl.String, "title": pl.String, "summary": pl.String, "content": pl.String,
                 "systems": pl.List(pl.String), "tasks": pl.List(pl.String), "metadata": pl.String,
                 "created_at": pl.Datetime("us", "UTC")}


@dataclass(frozen=True)
class CommitPlan:
    """Entries to import (no edges: backfill writes the citations) and a report."""

    entries: pl.DataFrame
    report: dict


def is_commits_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a JSONL file whose first record has the commit fields (:data:`COMMIT_FIELDS`).

    >>> is_commits_file("no/such/file.jsonl")
    False
    """
    path = Path(path)
    name = path.name.lower().removesuffix(".gz")
    if not path.is_file() or not name.endswith((".jsonl", ".ndjson")):
        return False
    try:
        with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")) as fh:
            for line in fh:
                if line.strip():
                    first = json.loads(line)
                    return isinstance(first, dict) and all(f in first for f in REQUIRED_FIELDS)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def read_commits(path: str | os.PathLike, *, limit: int | None = None) -> list[dict]:
    """The commit records of a JSONL file, checked: each has a 40-hex ``sha``, a parseable
    ``date``, string ``subject`` and ``author``, and, where given, a list of ``parents`` and a
    string ``body`` (absent or null: none, read as ``[]`` and ``""``); a bad record is a
    ValidationError naming its line; ``limit``: the first records only."""
    path = Path(path)
    if not path.is_file():
        raise KbError(f"{path}: no such commits file")
    out = []
    for line_no, obj in json_lines(path):
        if limit is not None and len(out) >= limit:
            break
        missing = [f for f in REQUIRED_FIELDS if f not in obj]
        if missing:
            raise ValidationError(missing[0], None, f"{path.name}: a commit record has {', '.join(REQUIRED_FIELDS)} "
                                  "(and may have parents and body)", row=line_no)
        obj = {**obj, "parents": [] if obj.get("parents") is None else obj["parents"],
               "body": "" if obj.get("body") is None else obj["body"]}
        sha = obj["sha"]
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise ValidationError("sha", sha, f"{path.name}: a commit's sha is 40 lower-case hex characters", row=line_no)
        if not isinstance(obj["parents"], list) or not all(isinstance(p, str) for p in obj["parents"]):
            raise ValidationError("parents", obj["parents"], f"{path.name}: parents is a list of hashes", row=line_no)
        for name in ("author", "subject", "body"):
            if not isinstance(obj[name], str):
                raise ValidationError(name, obj[name], f"{path.name}: {name} is a string", row=line_no)
        if _date(obj["date"]) is None:
            raise ValidationError("date", obj["date"], f"{path.name}: the date is ISO 8601 (2026-08-22T15:01:09+03:00)",
                                  row=line_no)
        out.append(obj)
    return out


def _date(value) -> datetime | None:
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _numbers(text: str, rx: re.Pattern) -> list[str]:
    found: list[str] = []
    for m in rx.finditer(text):
        found += [n for n in re.findall(r"#(\d+)", m.group(1)) if n not in found]
    return found


def plan_commits(records: Sequence[dict], *, kind: str = "knowledge",
                 progress: Callable[[int, int], None] | None = None) -> CommitPlan:
    """Entries for commit ``records`` (pure; see the module docstring). Two commits whose hashes
    share their first 8 characters are an error (the ids would collide), as is one hash twice. A
    commit whose subject and body are both empty says nothing: it is left out and listed in the
    report (``empty_messages``)."""
    rows, seen, empty = [], {}, []
    for done, rec in enumerate(records, 1):
        sha = rec["sha"]
        eid = sha[:8]
        if eid in seen:
            first, row = seen[eid]
            if first == sha:
                raise ValidationError("sha", sha, f"the same commit twice (first at record {row}): list each once",
                                      row=done)
            raise ValidationError("sha", sha, f"shares its first 8 characters with {first} (record {row}): the "
                                              "bank's ids are the short hashes and must differ", row=done)
        seen[eid] = (sha, done)
        body = rec.get("body") or ""
        meta = {"key": sha, "sha": sha, "head": True, "parents": list(rec.get("parents") or []),
                "author": rec["author"]}
        for name, rx in _TRAILERS.items():
            numbers = _numbers(body, rx)
            if numbers:
                meta[name] = numbers
        content = body if body.strip() else rec["subject"]
        if not content.strip():  # a commit with an empty message (git's --allow-empty-message) says nothing
            empty.append(sha)
            continue
        rows.append({"id": eid, "kind": kind, "title": rec["subject"][:300], "summary": first_sentence(content),
                     "content": content, "systems": [], "tasks": [], "metadata": json.dumps(meta, sort_keys=True),
                     "created_at": _date(rec["date"])})
        if progress:
            progress(done, len(records))
    entries = pl.DataFrame(rows, schema=_ENTRY_SCHEMA)
    keys = {r["sha"]: r["sha"][:8] for r in records if r["sha"] not in empty}
    _, cites = plan_pattern_citations(entries, COMMIT_CITE["pattern"], keys, prefix=True)
    report = {"documents": len(records), "entries": entries.height, "edges": {}, "sections_split": 0,
              "citations": {**cites, "written_by": "kb backfill"},
              "issue_refs": int(sum(any(k in json.loads(m) for k in _TRAILERS) for m in entries["metadata"])),
              "empty_messages": empty}
    return CommitPlan(entries, report)


def ingest_commits(bank: Bank, source: str | os.PathLike, *, limit: int | None = None, guard: str = "report",
                   dry_run: bool = False, actor: str = "ingest", records: Sequence[dict] | None = None,
                   progress: Callable[[int, int], None] | None = None, embed_progress: Progress = None) -> dict:
    """Ingest a commits file (:func:`read_commits`; ``records``: the records already read from
    ``source``, so that a caller can check the file before creating a bank) into ``bank`` in one transaction, recording
    :data:`COMMIT_CITE` for backfill; commits already in the bank are skipped, so a second run adds
    nothing. Returns the report (entries, the references the pattern resolves, the flagged rows).
    ``embed_progress`` reports the embedding of the new entries in the same transaction.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rec = {"sha": "ab" * 20, "parents": [], "author": "Ann", "date": "2026-01-02T03:04:05Z",
    ...        "subject": "lib: tidy", "body": "Closes #1"}
    >>> _ = (d / "c.jsonl").write_text(json.dumps(rec) + "\\n")
    >>> ingest_commits(create_bank(d / "bank"), d / "c.jsonl")["entries"]
    1
    """
    records = read_commits(source, limit=limit) if records is None else records
    plan = plan_commits(records, progress=progress)
    new_entries = plan.entries.join(bank.entries.select("id"), on="id", how="anti")
    report = {**plan.report, "source": str(source), "shape": "commits",
              "already_present": plan.entries.height - new_entries.height, "entries": new_entries.height,
              "edges_written": 0, "dry_run": dry_run}
    patterns = [p for p in bank.settings.get("citations") or [] if p.get("pattern") != COMMIT_CITE["pattern"]]
    settings = {"citations": [*patterns, dict(COMMIT_CITE)]}
    if dry_run:
        from kbtools.ops.interchange import guard_flags

        report["flagged"] = guard_flags(new_entries).to_dicts() if guard == "report" else []
        return report
    from kbtools.ops.interchange import import_frames

    counts = import_frames(bank, entries=new_entries, actor=actor, guard=guard, settings=settings,
                           progress=embed_progress)
    report["flagged"] = counts.get("flagged", [])
    return report
