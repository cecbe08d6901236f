"""``kb ingest``: a document corpus into a bank, one entry per section."""

from __future__ import annotations

from kbtools.cli.base import bank_arg as _bank_arg, bank_for, command, create_args, progress as _progress, register_args

__all__: list[str] = []


@command("ingest", "ingest documents (Markdown / reST / text folders, JSONL records, BPMN) one entry per section")
def _ingest(args):
    """Ingest a corpus into a bank in one transaction: one entry per section (headings up to
    --level), sections over --cap characters cut at paragraphs, each later piece part_of its
    document's first entry; header or column values mapped to typed edges; references in prose
    (--cite, a regex whose first group is a document key) recorded for `kb backfill`, which writes
    them as cites edges with the citing sentence as the note. A .bpmn file, or a folder of them,
    goes to the BPMN importer: it reads what is well formed, leaves out a broken element (a
    sequence flow whose sourceRef/targetRef names no flow node, a boundary event not attached to
    an activity, ...) and lists it in the report and in `kb holes` (broken_reference); --strict
    refuses the file instead. Malformed XML or a file without a process is refused either way.

    A JSONL file of commits (each record: sha, parents, author, date, subject, body, as git log
    shows them; parents and body may be absent or null) is read as a history, one entry per commit
    (--shape commits; detected by default; a commit with an empty message is left out and listed):
    id the short hash, title the subject, content the body, created_at the date; author, parents
    and the Fixes/Closes/Ref #N numbers kept as metadata (not edges); hashes in the messages
    (Follow-up to <sha>, This reverts commit <sha>, a hash in prose) resolved by unique prefix
    by `kb backfill` as cites edges. --limit N reads the first N records only.

      kb ingest banks/curl --create --embedder minilm-static --from ../shared/data/curl-commits.jsonl.gz
      kb backfill banks/curl          # the hashes as cites edges

      kb ingest banks/notes --create --from docs/                      # .md / .rst / .txt, recursively
      kb ingest banks/peps --create --from data/peps/peps.jsonl.gz --text-field body --key pep \\
          --format rst --title-field Title --title-format 'PEP {key}: {title}' \\
          --edge 'Superseded-By=value supersedes record' --edge Requires=requires \\
          --cite '(?:PEP\\s*|:pep:`)0*(\\d+)' --dry-run

    In a folder of Markdown files, each file's YAML front matter (title, date, ...) gives its title and
    date and stays out of its text, and links between the files ([text](../ops/rollback.md), from
    the folder's root [text](/ops/rollback), reference links [text][label] through their
    document's [label]: path line, and
    :doc: roles in a folder of reST) are recorded like --cite references: `kb backfill` writes them
    as cites edges, resolved by path. :ref: roles resolve through the labels the reST files define
    (`.. _install-steps:` before a title names that section); a label no file or more than one
    defines is listed, never guessed. `.. include::` takes the included file's text into the page,
    as Sphinx renders it; an included file is no entry of its own.

    In a JSONL file each record is one document: --text-field holds its text and --key its key
    (keys must differ; a repeated key is refused naming both lines); a record whose text is absent,
    null or blank is left out and listed in the report.

    --edge COLUMN=TYPE makes "record TYPE value"; state the direction in words when it is the
    other way: --edge 'Superseded-By=value supersedes record'. Values are split at commas and
    resolved through the documents' keys (--key); unresolved ones are listed, never guessed.
    The guard reports by default (flagged rows are imported and listed); --guard reject / off. It
    reads a reST or Markdown page by its prose: an example's shell session, output or /tmp path (in a
    code block or inline code) is not the author's transient state, and a page that is all code is
    not judged."""
    from kbtools.cli.reports import flagged_text, format_ingest
    from kbtools.ops.ingest import ingest
    from kbtools.ops.ingest_commits import ingest_commits, is_commits_file, plan_commits, read_commits

    commits = args.shape == "commits" or (args.shape == "auto" and is_commits_file(args.source))
    if args.limit is not None and not commits:
        from kbtools.errors import ValidationError

        raise ValidationError("--limit", args.limit, "applies to a commits file (--shape commits) only")
    records = None
    if commits:  # a bad file is refused before a bank is created
        records = read_commits(args.source, limit=args.limit)
        plan_commits(records)
    with bank_for(args) as bank:  # --create: a failed ingest removes the bank it made
        if commits:
            report = ingest_commits(bank, args.source, records=records, guard=args.guard, dry_run=args.dry_run,
                                    actor=args.actor, progress=_progress("ingest"), embed_progress=_progress("embed"))
            return report, format_ingest(report) + flagged_text(report.get("flagged") or [])
        report = ingest(
            bank, args.source, text_field=args.text_field, key_field=args.key, fmt=args.format, cap=args.cap,
            max_level=args.level, title_field=args.title_field, title_format=args.title_format,
            created_field=args.created_field, systems_field=args.systems_field, tasks_field=args.tasks_field,
            edges=args.edge or (), cite=args.cite, meta_fields=_split(args.meta),
            skip_sections=args.skip_section or (), head_section=args.head_section,
            guard=args.guard, strict=args.strict, dry_run=args.dry_run, actor=args.actor, progress=_progress("ingest"),
            embed_progress=_progress("embed"),
        )
    return report, format_ingest(report) + flagged_text(report.get("flagged") or [])


def _split(text):
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


register_args("ingest", lambda p: (
    _bank_arg(p),
    p.add_argument("--from", dest="source", required=True,
                   help="a folder, a .md / .rst / .txt file, a .jsonl(.gz) file, or a .bpmn file / folder"),
    create_args(p),
    p.add_argument("--shape", choices=("auto", "documents", "commits"), default="auto",
                   help="what the source holds: documents (sections become entries) or commits (JSONL with sha, "
                        "author, date, subject and, optionally, parents and body: one entry per commit); auto "
                        "(default) detects commits by the first record's fields"),
    p.add_argument("--limit", type=int, help="commits: read only the first N records"),
    p.add_argument("--text-field", default="text", help="JSONL: the field holding the text (default text)"),
    p.add_argument("--key", help="JSONL: the field holding the document key other documents cite (default: line number)"),
    p.add_argument("--format", choices=("markdown", "rst", "text"), help="the documents' format (default: by file suffix)"),
    p.add_argument("--cap", type=int, default=4000, help="size cap of one entry in characters (default 4000)"),
    p.add_argument("--level", type=int, default=1,
                   help="split at headings of this level and above (default 1; in Markdown counted from the "
                        "file's top heading level, under a lone title heading)"),
    p.add_argument("--title-field", help="the field holding the document title (default: a title field, such as "
                                         "a front matter's, else the first heading, else the file name)"),
    p.add_argument("--title-format", default="{title}", help="the title, with {title}, {key} and any field "
                                                             "(default '{title}'); ' — section' is appended"),
    p.add_argument("--created-field", help="a date field for created_at (ISO or 13-Jun-2000)"),
    p.add_argument("--systems-field", help="a comma-separated field for systems"),
    p.add_argument("--tasks-field", help="a comma-separated field for tasks"),
    p.add_argument("--meta", help="comma-separated fields kept in each entry's metadata"),
    p.add_argument("--head-section", help="the section that heads a document (others are part_of it), e.g. "
                                          "Abstract (default: the first)"),
    p.add_argument("--skip-section", action="append", help="leave out sections with this heading (repeatable)"),
    p.add_argument("--edge", action="append", metavar="COLUMN=TYPE",
                   help="map a field to typed edges: COLUMN=TYPE (record TYPE value) or "
                        "'COLUMN=value TYPE record' (repeatable)"),
    p.add_argument("--cite", help="citation pattern, group 1 a document key, e.g. 'PEP\\s*(\\d+)'"),
    p.add_argument("--guard", choices=("report", "reject", "off"), default="report",
                   help="rows the guard flags: import and list (report, default), refuse all (reject), do not look (off)"),
    p.add_argument("--strict", action="store_true",
                   help="BPMN: refuse a file with a broken element (default: leave it out and list it)"),
    p.add_argument("--dry-run", action="store_true", help="plan and report, write nothing"),
    p.add_argument("--actor", default="ingest", help="who the events name (default: ingest)"),
))
