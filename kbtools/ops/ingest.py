"""Ingest a document corpus as a user would: folders of Markdown / reST / plain text, single files,
or JSONL records with a text field, one entry per section.

Read -> plan -> apply. :func:`read_documents` reads the source; :func:`plan_ingest` (pure) turns
documents into sections (:mod:`kbtools.ops.sections`), sections over the size cap into pieces
cut at paragraphs, and those into an entries frame and an edges frame: each later section or piece
``part_of`` its document's first entry (``source = structure``), and the user's header / column
mapping (``EdgeMap``) into typed ``import`` edges resolved through the documents' keys.
:func:`ingest` commits the plan with :func:`~kbtools.ops.interchange.import_frames` (the guard
reports, it does not refuse, unless asked) and records the citation pattern in the bank's
settings, so that ``backfill`` turns references in prose into ``cites`` edges with the citing
sentence as the note. A ``.bpmn`` file, or a folder of them, goes to the BPMN importer.

>>> docs = [Document("a", "a.md", "# Intro\\nAlpha is first.\\n# Usage\\nRun alpha.", "markdown", {"Title": "Alpha"})]
>>> plan = plan_ingest(docs, title_field="Title")
>>> plan.entries["title"].to_list(), plan.edges["type"].to_list()
(['Alpha — Intro', 'Alpha — Usage'], ['part_of'])
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

import polars as pl

from kbtools.errors import KbError, ValidationError
from kbtools.ops.citations import (MARKDOWN_LINK, MARKDOWN_REF_LINK, RST_DOC_LINK, RST_REF_LINK, document_keys,
                                   normalize_key, plan_pattern_citations)
from kbtools.ops.sections import (SECTION_CAP, document_title, expand_includes, first_sentence, format_of,
                                  front_matter, readable, split_at_paragraphs, split_sections)
from kbtools.model.vocab import EDGE_TYPES
from kbtools.ops.bpmn import ingest_bpmn
from kbtools.ops.interchange import json_lines
from kbtools.progress import Progress
from kbtools.store.bank import Bank

__all__ = ["Document", "EdgeMap", "IngestPlan", "parse_edge_map", "read_documents", "plan_ingest", "ingest",
           "DOCUMENT_SUFFIXES"]

#: File suffixes a folder ingest reads.
DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".text")
_DATE_FORMATS = ("%d-%b-%Y", "%Y-%m-%d", "%d %b %Y", "%d %B %Y", "%Y/%m/%d", "%b %d, %Y")


@dataclass(frozen=True)
class Document:
    """One document: its key (how others refer to it; may be None), name (path or record), text,
    format (markdown, rst, text) and fields (headers or JSON columns)."""

    key: str | None
    name: str
    text: str
    fmt: str = "text"
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class EdgeMap:
    """A header or column whose values name other documents by key, and the edge it makes:
    ``record TYPE value`` (``forward``) or ``value TYPE record``.

    >>> parse_edge_map("Superseded-By=value supersedes record")
    EdgeMap(column='Superseded-By', type='supersedes', forward=False)
    """

    column: str
    type: str
    forward: bool = True

    def describe(self) -> str:
        return f"{self.column}: " + ("record {t} value" if self.forward else "value {t} record").format(t=self.type)


def parse_edge_map(spec: str) -> EdgeMap:
    """``COLUMN=TYPE`` (the record TYPE the value), or with the direction stated in words,
    ``COLUMN=record TYPE value`` / ``COLUMN=value TYPE record``.

    >>> parse_edge_map("Requires=requires")
    EdgeMap(column='Requires', type='requires', forward=True)
    """
    column, sep, rhs = spec.partition("=")
    words = rhs.split()
    if not sep or not column.strip() or len(words) not in (1, 3):
        raise ValidationError("edge", spec, "an edge mapping reads COLUMN=TYPE, COLUMN='record TYPE value' or "
                                            "COLUMN='value TYPE record'")
    if len(words) == 3 and sorted((words[0], words[2])) != ["record", "value"]:
        raise ValidationError("edge", spec, "the direction names 'record' and 'value', one on each side of the type")
    type_ = words[0] if len(words) == 1 else words[1]
    if type_ not in EDGE_TYPES:
        raise ValidationError("edge", spec, f"edge type {type_!r} is not one of {', '.join(sorted(EDGE_TYPES))}")
    return EdgeMap(column.strip(), type_, len(words) == 1 or words[0] == "record")


@dataclass(frozen=True)
class IngestPlan:
    """Entries and edges to import, and a report (documents, sections, pieces, unresolved keys)."""

    entries: pl.DataFrame
    edges: pl.DataFrame
    report: dict


# ------------------------------------------------------------------------------------------ read


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return name.endswith((".jsonl", ".ndjson"))


def read_documents(source: str | os.PathLike, *, text_field: str = "text", key_field: str | None = None,
                   fmt: str | None = None, left_out: list | None = None,
                   included: dict | None = None) -> list[Document]:
    """The documents of ``source``: a folder (its Markdown / reST / text files, recursively, in
    path order; key = the path without suffix), one such file, or a ``.jsonl`` / ``.jsonl.gz`` file
    (one record a line; ``text_field`` holds the text; nested objects such as a ``headers`` dict
    are flattened into the record's fields, the record's own fields first; ``key_field`` names
    the key, else the line number). ``fmt`` overrides the format (default: by the file or by the
    record's ``path`` suffix). A record whose text field is absent, null or blank holds no document:
    it is left out and, given a list ``left_out``, listed there as ``{"line", "key", "why"}``; when
    no record has text the field name is wrong, and that is an error. In a folder, a reST file's
    ``.. include::`` directives take the included file's text (:func:`expand_includes`), and a file
    another one includes is no document of its own (given a dict ``included``, it is listed there
    with the file that includes it).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "x.md").write_text("# T\\nbody")
    >>> [(doc.key, doc.fmt) for doc in read_documents(d)]
    [('x', 'markdown')]
    """
    path = Path(source)
    if not path.exists():
        raise KbError(f"{path}: no such file or folder to ingest")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)
        if not files:
            raise KbError(f"{path}: no {', '.join(DOCUMENT_SUFFIXES)} files in this folder")
        docs = [_file_document(p, p.relative_to(path).as_posix(), fmt) for p in files]
        rst = {d.name for d in docs if d.fmt == "rst"}
        if not rst:
            return docs
        texts, into = expand_includes({d.name: d.text for d in docs}, rst)
        if included is not None:
            included.update(into)
        return [replace(d, text=texts[d.name]) for d in docs if d.name not in into]
    if _is_jsonl(path):
        skipped: list = []
        docs, lines = [], {}
        for line_no, doc in _records(path, text_field, key_field, fmt, skipped):
            if doc.key in lines:  # a key names one document: citations and edges resolve through it
                raise ValidationError(key_field or "key", doc.key,
                                      f"{path.name}: the record on line {lines[doc.key]} has this key too "
                                      "(a key names one document)", row=line_no)
            lines[doc.key] = line_no
            docs.append(doc)
        if skipped and not docs:
            raise ValidationError(text_field, None, f"{path.name}: no record has text in the field {text_field!r} "
                                                    "(--text-field names it)", row=skipped[0]["line"])
        if left_out is not None:
            left_out.extend(skipped)
        return docs
    if path.suffix.lower() in DOCUMENT_SUFFIXES:
        return [_file_document(path, path.name, fmt)]
    raise KbError(f"{path}: ingest reads a folder, .md / .rst / .txt files or .jsonl(.gz) records, "
                  f"not {path.suffix!r}")


def _file_document(path: Path, name: str, fmt: str | None) -> Document:
    """One file as a document keyed by its path without suffix; a Markdown file's front matter
    (``title``, ``date``, ...) becomes its fields and leaves its text."""
    fmt = fmt or format_of(path.name)
    text = path.read_text(encoding="utf-8")
    fields, text = front_matter(text) if fmt == "markdown" else ({}, text)
    return Document(str(Path(name).with_suffix("")), name, text, fmt, fields)


def _records(path: Path, text_field: str, key_field: str | None, fmt: str | None,
             skipped: list) -> Iterable[tuple[int, Document]]:
    """(line, document) from JSONL records (the reader ``kb import`` uses: line numbers, UTF-8, JSON checks);
    nested objects (a ``headers`` block) are flattened into the record's fields; the records without
    text go to ``skipped``."""
    for line_no, obj in json_lines(path):
        fields = {k: v for k, v in obj.items() if not isinstance(v, dict)}
        for v in obj.values():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    fields.setdefault(k2, v2)
        text = fields.get(text_field)
        if text is not None and not isinstance(text, str):
            raise ValidationError(text_field, text, f"{path.name}: each record needs a text field "
                                                    f"{text_field!r} holding a string (--text-field)", row=line_no)
        key = fields.get(key_field) if key_field else line_no
        if key is None:
            raise ValidationError(key_field, None, f"{path.name}: the record has no key field {key_field!r}",
                                  row=line_no)
        if text is None or not text.strip():
            skipped.append({"line": line_no, "key": str(key),
                            "why": f"no text in {text_field!r}" if text is None else f"{text_field!r} is blank"})
            continue
        name = str(fields.get("path") or f"{path.name}:{line_no}")
        yield line_no, Document(str(key), name, text, fmt or format_of(name), fields)


# ------------------------------------------------------------------------------------------ plan


def _entry_id(name: str, section: int, piece: int) -> str:
    return hashlib.sha1(f"{name}#{section}.{piece}".encode()).hexdigest()[:8]


def _values(value) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else re.split(r"[,;]", str(value))
    return [str(v).strip() for v in items if str(v).strip()]


def _created(value) -> datetime | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def plan_ingest(documents: Sequence[Document], *, cap: int = SECTION_CAP, max_level: int = 1,
                title_field: str | None = None, title_format: str = "{title}", created_field: str | None = None,
                systems_field: str | None = None, tasks_field: str | None = None,
                edges: Sequence[EdgeMap] = (), meta_fields: Sequence[str] = (), skip_sections: Sequence[str] = (),
                known_keys: dict[str, str] | None = None, kind: str = "knowledge", head_section: str | None = None,
                progress: Callable[[int, int], None] | None = None) -> IngestPlan:
    """Entries and edges for ``documents`` (pure).

    One entry per section (headings at ``max_level`` or above); a section over ``cap`` characters
    is cut at paragraphs, each later piece titled ``(part n)``. Title: ``title_format`` filled
    with ``{title}`` (``title_field``, else a ``title`` field such as a front matter's, else the
    document's first heading, else a file's name or a record's first sentence), ``{key}`` and any
    field, then `` — section`` for sections named other than the document; summary: the
    section's first sentence.
    ``systems`` / ``tasks`` from comma-separated fields, ``created_at`` from a date field
    (``created_field``, else a ``date`` field).
    Metadata: ``doc``, ``format`` (rst, markdown), ``key``, ``section``, ``part``, ``head`` (the
    document's first entry) and ``meta_fields``. The document's first entry is its first section, or the one headed
    ``head_section`` (``"Abstract"``) when it has one. Sections whose heading is in ``skip_sections`` are left out. ``edges``:
    header/column mappings resolved through the keys of these documents and ``known_keys`` (the
    bank's); values that resolve to nothing are listed in the report, never guessed.
    """
    if not isinstance(cap, int) or cap < 200:
        raise ValidationError("cap", cap, "the size cap is an integer of at least 200 characters")
    skip = {s.strip().lower() for s in skip_sections}
    rows, part_of, heads, markup_only = [], [], {}, []
    split_count = 0
    stems = collections.Counter(Path(d.name).stem for d in documents)
    for done, doc in enumerate(documents, 1):
        sections = [s for s in split_sections(doc.text, fmt=doc.fmt, max_level=max_level)
                    if s.heading.strip().lower() not in skip]
        doc_title = str(doc.fields.get(title_field or "title") or "")  # a front matter's own title by default
        if not doc_title:
            doc_title = (document_title(doc.text, fmt=doc.fmt) or next((s.heading for s in sections if s.heading), "")
                         or _untitled(doc, shared=stems[Path(doc.name).stem] > 1))
        fields = {k: v for k, v in doc.fields.items() if isinstance(v, (str, int, float))}
        try:
            base = title_format.format_map({**fields, "title": doc_title, "key": doc.key})
        except (KeyError, ValueError) as err:
            raise ValidationError("title_format", title_format, f"names a field this document lacks ({err})") from None
        created = _created(doc.fields.get(created_field or "date"))
        systems = [v.lower() for v in _values(doc.fields.get(systems_field))] if systems_field else []
        tasks = [v.lower() for v in _values(doc.fields.get(tasks_field))] if tasks_field else []
        extra = {f: doc.fields[f] for f in meta_fields if f in doc.fields}
        # a section of markup only (".. contents::", ".. withdrawn::", ".. cmake-module:: X.cmake": what it
        # renders comes from elsewhere) has nothing to read here: no entry; its labels name the next one
        shown = [i for i, s in enumerate(sections) if readable(s.text)]
        markup_only += [f"{doc.name} — {s.heading}" if s.heading else doc.name
                        for i, s in enumerate(sections) if i not in shown]
        if not shown:
            continue
        labels = _labels_kept(sections, shown)
        wanted = [i for i in shown if head_section and sections[i].heading.strip().lower() == head_section.lower()]
        head_id = _entry_id(doc.name, wanted[0] if wanted else shown[0], 0)
        for si in shown:  # a section keeps its place in the document: the ids of the others do not move
            section = sections[si]
            pieces = split_at_paragraphs(section.text, cap)
            split_count += len(pieces) > 1
            placed = _placed_labels(labels[si], pieces)
            for pi, piece in enumerate(pieces):
                eid = _entry_id(doc.name, si, pi)
                named = section.heading and section.heading.strip() != doc_title.strip()  # not the document's own
                title = base + (f" — {section.heading}" if named else "") + (f" (part {pi + 1})" if pi else "")
                is_head = eid == head_id
                meta = {"doc": doc.name, **({"format": doc.fmt} if doc.fmt in ("rst", "markdown") else {}),
                        "key": doc.key, "section": section.heading, "part": pi,
                        "head": is_head, **({"labels": placed[pi]} if pi in placed else {}), **extra}
                rows.append({"id": eid, "kind": kind, "title": title[:300], "summary": first_sentence(piece),
                             "content": piece, "systems": systems, "tasks": tasks,
                             "metadata": json.dumps(meta, sort_keys=True, default=str), "created_at": created})
                if is_head:
                    if doc.key is not None:
                        heads[normalize_key(doc.key)] = (eid, doc)
                else:
                    part_of.append((eid, head_id))
        if progress:
            progress(done, len(documents))
    entries = pl.DataFrame(rows, schema={"id": pl.String, "kind": pl.String, "title": pl.String,
                                         "summary": pl.String, "content": pl.String, "systems": pl.List(pl.String),
                                         "tasks": pl.List(pl.String), "metadata": pl.String,
                                         "created_at": pl.Datetime("us", "UTC")})
    typed, unresolved = _mapped_edges(heads, edges, known_keys or {})
    structure = pl.DataFrame(part_of, schema={"src": pl.String, "dst": pl.String}, orient="row").with_columns(
        pl.lit("part_of").alias("type"), pl.lit("structure").alias("source"))
    all_edges = pl.concat([structure, typed], how="vertical_relaxed").unique(["src", "dst", "type"], keep="first",
                                                                             maintain_order=True)
    report = {"documents": len(documents), "entries": entries.height, "sections_split": split_count,
              "markup_only": markup_only,
              "edges": dict(all_edges.group_by("type").len().sort("type").iter_rows()) if all_edges.height else {},
              "mappings": [m.describe() for m in edges], "unresolved": unresolved}
    return IngestPlan(entries, all_edges, report)


def _labels_kept(sections, shown: list[int]) -> dict[int, tuple[str, ...]]:
    """The labels of each shown section (by index), a section of markup only handing its labels to
    the next shown one (the last ones to the last shown)."""
    labels = {i: tuple(sections[i].labels) for i in shown}
    carried: tuple[str, ...] = ()
    for i, section in enumerate(sections):
        if i in labels:
            labels[i] = carried + labels[i]
            carried = ()
        else:
            carried += tuple(section.labels)
    if carried:
        labels[shown[-1]] += carried
    return labels


def _placed_labels(labels: Sequence[str], pieces: list[str]) -> dict[int, list[str]]:
    """Each label of a section on the piece that defines it (``.. _name:`` in its text), else on
    the first piece (a label right before the section's title stands in the text before it)."""
    placed: dict[int, list[str]] = {}
    for label in labels:
        at = next((i for i, piece in enumerate(pieces) if f"_{label}:" in piece or f"_`{label}`:" in piece), 0)
        placed.setdefault(at, []).append(label)
    return placed


def _untitled(doc: Document, *, shared: bool = False) -> str:
    """The title of a document without a title or a heading: a file's name, with its folders where
    files of several folders share it (``ec2/tag-resource``, ``iot/tag-resource``); a record's
    first sentence (a JSONL record's name is only its file and line)."""
    name, _, line = doc.name.rpartition(":")
    if name and line.isdigit():
        return first_sentence(doc.text)[:120] or doc.name
    path = Path(doc.name)
    return path.with_suffix("").as_posix() if shared else path.stem


def _mapped_edges(heads: dict, maps: Sequence[EdgeMap], known: dict[str, str]) -> tuple[pl.DataFrame, list[dict]]:
    """Typed edges between documents' first entries from the mapped fields, and what did not resolve."""
    resolve = {**known, **{k: eid for k, (eid, _) in heads.items()}}
    rows, unresolved = [], []
    for key, (eid, doc) in heads.items():
        for m in maps:
            for value in _values(doc.fields.get(m.column)):
                target = resolve.get(normalize_key(value))
                if target is None:
                    unresolved.append({"doc": doc.name, "field": m.column, "value": value})
                elif target != eid:
                    rows.append((eid, target, m.type) if m.forward else (target, eid, m.type))
    frame = pl.DataFrame(rows, schema={"src": pl.String, "dst": pl.String, "type": pl.String}, orient="row")
    return frame.with_columns(pl.lit("import").alias("source")), unresolved


# ------------------------------------------------------------------------------------------ apply


def _bpmn_source(path: Path) -> bool:
    if path.is_file():
        return path.suffix.lower() == ".bpmn"
    return path.is_dir() and any(path.rglob("*.bpmn"))


def ingest(bank: Bank, source: str | os.PathLike, *, text_field: str = "text", key_field: str | None = None,
           fmt: str | None = None, cap: int = SECTION_CAP, max_level: int = 1, title_field: str | None = None,
           title_format: str = "{title}", created_field: str | None = None, systems_field: str | None = None,
           tasks_field: str | None = None, edges: Sequence[EdgeMap | str] = (), cite: str | None = None,
           meta_fields: Sequence[str] = (), skip_sections: Sequence[str] = (), head_section: str | None = None,
           guard: str = "report", strict: bool = False, embed: bool = True,
           dry_run: bool = False, actor: str = "ingest",
           progress: Callable[[int, int], None] | None = None, embed_progress: Progress = None) -> dict:
    """Ingest ``source`` into ``bank`` in one transaction and return the report: documents,
    entries, edges by type, sections split, unresolved references, the references the citation
    pattern finds (written as ``cites`` edges by ``backfill``, which reads the pattern from the
    bank's settings), and the rows the guard flagged. Entries already in the bank (same document
    and section) are skipped, so a second run adds nothing. ``dry_run`` plans and reports only.
    The new entries are embedded in the same transaction when the bank's writes embed
    (``embed=False``: left for ``kb embed``); ``embed_progress`` reports that embedding.

    ``edges``: :class:`EdgeMap` or specs for :func:`parse_edge_map`. ``cite``: a regular
    expression whose first group is a document key (``r"PEP\\s*(\\d+)"``). A ``.bpmn`` file or a
    folder holding ``.bpmn`` files is handed to the BPMN importer (``strict``: refuse a BPMN file at
    its first broken element instead of leaving it out and listing it).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.md").write_text("# A\\nAlpha. See doc b.\\n# More\\nText.")
    >>> ingest(create_bank(d / "bank"), d / "a.md")["entries"]
    2
    """
    path = Path(source)
    if _bpmn_source(path):
        return ingest_bpmn(bank, path, actor=actor, dry_run=dry_run, strict=strict, progress=progress)
    maps = [m if isinstance(m, EdgeMap) else parse_edge_map(m) for m in edges]
    if cite is not None:
        try:
            if re.compile(cite).groups < 1:
                raise ValidationError("cite", cite, "the citation pattern needs one group, the key (e.g. 'PEP\\s*(\\d+)')")
        except re.error as err:
            raise ValidationError("cite", cite, f"not a regular expression ({err})") from None
    left_out: list = []
    included: dict = {}
    docs = read_documents(path, text_field=text_field, key_field=key_field, fmt=fmt, left_out=left_out,
                          included=included)
    known = document_keys(bank.entries)
    plan = plan_ingest(docs, cap=cap, max_level=max_level, title_field=title_field, title_format=title_format,
                       created_field=created_field, systems_field=systems_field, tasks_field=tasks_field, edges=maps,
                       meta_fields=meta_fields, skip_sections=skip_sections, known_keys=known,
                       head_section=head_section, progress=progress)
    existing = bank.entries.select("id")
    new_entries = plan.entries.join(existing, on="id", how="anti")
    new_edges = plan.edges.join(bank.edges.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti")
    report = {**plan.report, "source": str(path), "already_present": plan.entries.height - new_entries.height,
              "entries": new_entries.height, "edges_written": new_edges.height, "dry_run": dry_run,
              "left_out": left_out, "included": included}
    keys = {**known, **document_keys(plan.entries)}
    if cite is not None:
        _, cites = plan_pattern_citations(plan.entries, cite, keys)
        report["citations"] = {**cites, "written_by": "kb backfill"}
    recorded = [{"pattern": cite}] if cite is not None else []
    # links between the files of a folder (Markdown links, reST :doc: roles by path, :ref: roles
    # by the labels the files define): cites edges
    for fmt, pattern, how in (("markdown", MARKDOWN_LINK, "path"), ("markdown", MARKDOWN_REF_LINK, "reference"),
                              ("rst", RST_DOC_LINK, "path"), ("rst", RST_REF_LINK, "label")):
        if any(d.fmt == fmt for d in docs) and path.is_dir():
            _, links = plan_pattern_citations(plan.entries, pattern, keys, resolve=how)
            report.setdefault("links", {"references_found": 0, "resolved": 0, "unresolved_keys": [],
                                        "unresolved_labels": [], "written_by": "kb backfill"})
            for name in ("references_found", "resolved"):
                report["links"][name] += links[name]
            report["links"]["unresolved_labels" if how == "label" else "unresolved_keys"] += links["unresolved_keys"]
            recorded.append({"pattern": pattern, "resolve": how})
    settings = None
    if recorded:
        mine = {r["pattern"] for r in recorded}
        patterns = [p for p in bank.settings.get("citations") or [] if p.get("pattern") not in mine]
        settings = {"citations": [*patterns, *recorded]}
    if dry_run:
        from kbtools.ops.interchange import guard_flags

        report["flagged"] = guard_flags(new_entries).to_dicts() if guard == "report" else []
        return report
    from kbtools.ops.interchange import import_frames

    counts = import_frames(bank, entries=new_entries, edges=new_edges, actor=actor, guard=guard, settings=settings,
                           embed=embed, progress=embed_progress)
    report["flagged"] = counts.get("flagged", [])
    return report
