"""``kb demo|stats|check|repair|import|export|compact``: the bank itself."""

from __future__ import annotations

from pathlib import Path

from kbtools.errors import KbError
from kbtools.cli.base import EXIT_OK, EXIT_PROBLEMS, bank_arg as _bank_arg, bank_for, command, create_args, progress as _progress, register_args

__all__: list[str] = []

@command("demo", "generate the seeded demo banks (engineering, business) or a large synthetic bank")
def _demo(args):
    """Generate the demo banks with their ground-truth sidecars.

    kb demo                          # data/demo/engineering and data/demo/business (refuses to overwrite)
    kb demo --out banks/demo --force # fresh working copies
    kb demo --entries 100000 --out bench-banks/100k   # a synthetic bank for benchmarks
    kb demo --peps --out banks/peps   # the real PEP bank from data/peps (kb ingest with PEPS_MAPPING)
    kb demo --banks 20 --out banks    # a fleet of 20 banks of 200-3,000 entries (kb connect --bank 'banks/*')
    """
    from kbtools.demo.banks import DEMO_DIR, build_demo

    if args.peps:
        from kbtools.cli.reports import format_ingest
        from kbtools.demo.peps import build_peps_bank

        bank, report = build_peps_bank(args.out or "banks/peps", force=args.force, progress=_progress("ingest"))
        return report, format_ingest(report)

    if args.banks:
        from kbtools.demo.banks import build_fleet

        if not args.out:
            raise KbError("kb demo --banks N writes a fleet: name its folder with --out DIR")
        fleet = build_fleet(args.out, banks=args.banks, seed=args.seed, force=args.force)
        payload = {name: {"path": str(b.path), "entries": b.entries.height, "edges": b.edges.height} for name, b in fleet.items()}
        total = sum(p["entries"] for p in payload.values())
        return payload, f"wrote {len(fleet)} banks under {args.out} ({total} entries in all)"
    out = Path(args.out) if args.out else DEMO_DIR
    which = tuple(args.only.split(",")) if args.only else ("engineering", "business")
    banks = build_demo(out, seed=args.seed, which=which, entries=args.entries, force=args.force)
    payload = {name: {"path": str(b.path), "entries": b.entries.height, "edges": b.edges.height} for name, b in banks.items()}
    text = "\n".join(f"wrote {name}: {p['path']} ({p['entries']} entries, {p['edges']} edges)" for name, p in payload.items())
    return payload, text


def _demo_args(p):
    p.add_argument("--out", help="folder for the banks (default: data/demo of the repository)")
    p.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    p.add_argument("--entries", type=int, help="write one synthetic bank of this many entries at --out")
    p.add_argument("--banks", type=int, help="write a fleet of this many banks of varied sizes (200-3,000 entries, "
                                              "synthetic and business-like) under --out")
    p.add_argument("--only", help="comma-separated subset: engineering,business")
    p.add_argument("--force", action="store_true", help="replace banks already there")
    p.add_argument("--peps", action="store_true", help="build the PEP bank (Python's PEPs, data/peps) at --out "
                                                       "(default banks/peps)")


@command("create", "create a new, empty bank (an error if a bank, or any file, is already there)")
def _create(args):
    """Create an empty bank folder: its tables, manifest and settings. Every write then embeds
    what it adds with --embedder (default minilm-int8; none: no vectors until `kb embed`) and
    links it to what is there (--no-auto-link: no write-time links).

      kb create banks/notes
      kb create banks/bulk --embedder none --no-auto-link   # for a bulk import, embedded afterwards
    """
    from kbtools.store.bank import create_bank

    embedder = None if args.embedder == "none" else args.embedder
    bank = create_bank(args.path, embedder=embedder, settings={"auto_link": False} if args.no_auto_link else None)
    settings = bank.settings
    payload = {"path": str(bank.path), "version": bank.version, "settings": settings}
    text = (f"created an empty bank at {bank.path} (embedder: {settings.get('embedder') or 'none, until kb embed'}; "
            f"write-time links: {'on' if settings.get('auto_link', True) else 'off'})\n"
            f"next: kb import {args.path} --entries FILE.jsonl   (or kb ingest {args.path} --from DOCS/, "
            f"or kb.report_learning(kb.open_bank({str(args.path)!r}), content=...) in Python)")
    return payload, text


def _create_args(p):
    from kbtools.model.config import DEFAULT_EMBEDDER, EMBEDDER_NAMES

    _bank_arg(p)
    p.add_argument("--embedder", choices=(*EMBEDDER_NAMES, "none"), default=DEFAULT_EMBEDDER,
                   help="what every write embeds with: minilm-int8 (default), minilm-static, hashing-char, "
                        "or none (no vectors until kb embed)")
    p.add_argument("--no-auto-link", action="store_true", help="writes do not link new entries to what is there")


@command("stats", "what a bank holds: entries, edges by type and source, note coverage, storage")
def _stats(args):
    """Print counts by kind, edge type and source, note coverage and storage of one or more banks."""
    from kbtools.evaluate.bank_stats import bank_stats, format_stats
    from kbtools.store.bank import open_bank

    stats = [bank_stats(open_bank(p)) for p in args.path]
    return (stats if len(stats) > 1 else stats[0]), "\n\n".join(format_stats(s) for s in stats)


@command("check", "check every invariant of a bank; exit status 4 when problems are found")
def _check(args):
    """Check every invariant: files inside the bank and unchanged since their commit (checksums),
    no symlinks or leftover temp files, segments with the right columns, ids, vocabularies,
    endpoints, uniqueness, weights, events, vectors.

    --repair is `kb repair` (kept as an alias): it rolls a damaged bank back to the newest kept
    version whose files are all whole, says what that loses, removes caches and temp files, then
    checks again.
    """
    if args.repair or args.dry_run:
        return _repair(args)
    from kbtools.store.check import check_bank

    results = {p: [str(x) for x in check_bank(p)] for p in args.path}
    status = EXIT_PROBLEMS if any(results.values()) else EXIT_OK
    return {"banks": results, "ok": status == EXIT_OK}, "\n".join(_check_lines(results)), status


def _check_lines(results: dict) -> list[str]:
    lines = []
    for p, probs in results.items():
        lines.append(f"{p}: {'ok' if not probs else f'{len(probs)} problem(s)'}")
        lines += [f"  - {x}" for x in probs[:50]]
        if len(probs) > 50:
            lines.append(f"  ... and {len(probs) - 50} more (use --json for all)")
    return lines


@command("repair", "roll a damaged bank back to its newest whole version, say what that loses; "
                   "exit status 4 when problems remain")
def _repair(args):
    """Bring a damaged bank back: roll back to the newest kept version (manifests/) whose files
    are all whole, and report what that loses: each commit dropped (version, actor, reason,
    time) and the entries and edges those commits added that are gone (read from the files they
    wrote that still read, and from their events). The derived caches are removed (each is
    rebuilt the first time it is needed) and so are the temp files of crashed writes. Then the
    bank is checked again: exit status 0 when it is sound, 4 when problems remain (kb check lists
    them), 1 when no kept version is whole (restore the bank from a copy).

    kb repair banks/eng              # repair, then check
    kb repair banks/eng --dry-run    # what it would do; nothing written
    """
    from kbtools.store.check import check_bank
    from kbtools.store.repair import repair_bank

    repairs = {p: repair_bank(p, dry_run=args.dry_run) for p in args.path}
    results = {} if args.dry_run else {p: [str(x) for x in check_bank(p)] for p in args.path}
    lines = [line for p, r in repairs.items() for line in _repair_lines(p, r)] + _check_lines(results)
    status = EXIT_PROBLEMS if any(results.values()) else EXIT_OK
    payload = {"banks": results, "ok": status == EXIT_OK, "repairs": repairs}
    return payload, "\n".join(lines), status


def _repair_lines(path: str, r: dict, show: int = 20) -> list[str]:
    verb = "would roll" if r["dry_run"] else "rolled"
    lines = [f"{path}: damaged: {d}" for d in r["damaged"][:show]]
    if r["rolled_back_to"] is None:
        lines.append(f"{path}: the newest version is whole (nothing rolled back)")
    else:
        into = "" if r["version"] is None else f" (committed as version {r['version']})"
        lines.append(f"{path}: {verb} back to version {r['rolled_back_to']}{into}, dropping "
                     f"{len(r['dropped_commits'])} commit(s)" + (":" if r["dropped_commits"] else ""))
        lines += [f"  - v{d['version']} {d.get('committed_at') or ''} by {d.get('actor')}: {d.get('reason')}"
                  for d in r["dropped_commits"]]
    lost = r["lost"]
    for kind, show_row in (("entries", lambda e: f"{e['id']} {e.get('title') or ''}".rstrip()),
                           ("edges", lambda e: f"{e['src']} {e['type']} {e['dst']}")):
        if lost[kind]:
            lines.append(f"  {len(lost[kind])} {kind} those commits added are gone:")
            lines += [f"    - {show_row(e)}" for e in lost[kind][:show]]
            if len(lost[kind]) > show:
                lines.append(f"    ... and {len(lost[kind]) - show} more (--json lists all)")
    if lost["unread"]:
        lines.append(f"  {len(lost['unread'])} file(s) of theirs do not read (what they held is known from the "
                     f"events only): {', '.join(lost['unread'][:show])}")
    lines.append(f"  {'would remove' if r['dry_run'] else 'removed'} {r['temp_files_removed']} temp file(s) and "
                 f"{r['caches_removed']} cache file(s) (caches are rebuilt the first time they are needed)"
                 + (" (dry run: nothing written)" if r["dry_run"] else ""))
    return lines


@command("import", "import entries and edges (JSONL or Parquet, pgvector export shape) in one transaction")
def _import(args):
    """Import rows; every row is validated first and a bad one is reported with its line number.

    Edge files may name the endpoints from/to (pgvector's entry_edges) or src/dst.
    Columns are cast where nothing is lost (empty lists, int to float, naive datetimes as UTC).
    The report_learning guard reports by default: rows it flags (a pasted transcript, a session
    log, a temporary path) are imported and listed; --guard reject refuses the whole import on
    one, --guard off does not look.

    With --create the bank is made for this import only: when the import fails, the bank is
    removed again (nothing else was in its folder), so the same command runs once the file is fixed.
    """
    from kbtools.ops.interchange import import_files

    with bank_for(args) as bank:
        counts = import_files(bank, entries=args.entries, edges=args.edges, triples=args.triples, actor=args.actor,
                              guard=args.guard, progress=_progress("embed"))
    text = f"imported {counts['entries']} entries, {counts['edges']} edges, {counts['triples']} triples into {args.path}"
    from kbtools.cli.reports import flagged_text

    return counts, text + flagged_text(counts.get("flagged") or [])


def _import_args(p):
    p.add_argument("--entries", help="entries file (.jsonl or .parquet)")
    p.add_argument("--edges", help="edges file (.jsonl or .parquet; from/to or src/dst)")
    p.add_argument("--triples", help="entity triples file")
    p.add_argument("--actor", default="import", help="who the events name (default: import)")
    create_args(p)
    guard_arg(p)


def guard_arg(p):
    p.add_argument("--guard", choices=("report", "reject", "off"), default="report",
                   help="rows the guard flags: import and list them (report, default), refuse the import (reject), "
                        "or do not look (off)")


@command("export", "export a bank's tables to JSONL or Parquet files (pgvector shape: entry_edges from/to)")
def _export(args):
    """Write entries, entry_edges, triples and events files to a folder."""
    from kbtools.ops.interchange import export_bank
    from kbtools.store.bank import open_bank

    written = export_bank(open_bank(args.path), args.to, format=args.format)
    return written, "\n".join(f"wrote {p} ({n} rows)" for p, n in written.items())


def _export_args(p):
    p.add_argument("--to", required=True, help="output folder")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")


@command("compact", "fold each table's segments into one Parquet file and sweep unreferenced files "
                    "(the cached query and neighbour indexes are kept)")
def _compact(args):
    """Compact a bank: one segment per table, usage folded into entries, old files swept."""
    from kbtools.store.bank import open_bank

    report = open_bank(args.path).compact()
    vectors = report.get("vectors") or {}
    kept = f"; vectors folded into one segment, {vectors['caches_kept']} cached index(es) kept" \
        if "caches_kept" in vectors else ""
    return report, f"compacted {args.path} to version {report['version']}{kept}"


for _name, _fn in {
    "demo": _demo_args,
    "create": _create_args,
    "stats": lambda p: p.add_argument("path", nargs="+", help="bank folder(s)"),
    "check": lambda p: (p.add_argument("path", nargs="+", help="bank folder(s)"),
                        p.add_argument("--repair", action="store_true",
                                       help="the same as kb repair: roll back to the newest whole version, remove "
                                            "caches and temp files, then check"),
                        p.add_argument("--dry-run", action="store_true", help="with --repair: report only")),
    "repair": lambda p: (p.add_argument("path", nargs="+", help="bank folder(s)"),
                         p.add_argument("--dry-run", action="store_true",
                                        help="report what would be rolled back and removed; write nothing")),
    "import": lambda p: (_bank_arg(p), _import_args(p)),
    "export": lambda p: (_bank_arg(p), _export_args(p)),
    "compact": _bank_arg,
}.items():
    register_args(_name, _fn)
