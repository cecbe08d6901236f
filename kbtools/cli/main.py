"""The ``kb`` command line: each subcommand parses, opens the bank, calls one library function with
the flags as keyword arguments, prints its report (text, or ``--json``), and turns a KbError into
a clear message and a non-zero exit status.

Exit status: 0 done; 1 an error kbtools explains (bad input, not a bank, ...); 2 a usage error;
3 the bank is locked by another writer or job run; 4 ``kb check`` found problems.

>>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from kbtools.errors import BankLocked, KbError

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_ERROR", "EXIT_USAGE", "EXIT_LOCKED", "EXIT_PROBLEMS"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LOCKED, EXIT_PROBLEMS = 0, 1, 2, 3, 4

_COMMANDS: dict[str, tuple[Callable, Callable]] = {}


def command(name: str, help: str):
    """Register ``fn(args) -> (payload, text)`` as subcommand ``name`` with an argument builder."""

    def deco(fn):
        def add(sub):
            p = sub.add_parser(name, help=help, description=(fn.__doc__ or help).strip(),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
            p.add_argument("--json", action="store_true", help="print a JSON report instead of text")
            return p

        _COMMANDS[name] = (add, fn)
        return fn

    return deco


def _bank_arg(p, nargs=None):
    p.add_argument("path", nargs=nargs, help="the bank folder")


def _json_default(o):
    import polars as pl

    if isinstance(o, pl.DataFrame):
        return o.to_dicts()
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def _emit(payload, text: str | None, as_json: bool) -> None:
    if as_json:
        print(json.dumps(payload, default=_json_default, indent=1, sort_keys=False))
    elif text:
        print(text)


# ------------------------------------------------------------------------------------------------
# bank basics


@command("demo", "generate the seeded demo banks (engineering, business) or a large synthetic bank")
def _demo(args):
    """Generate the demo banks with their ground-truth sidecars.

    kb demo                          # data/demo/engineering and data/demo/business (refuses to overwrite)
    kb demo --out banks/demo --force # fresh working copies
    kb demo --entries 100000 --out bench-banks/100k   # a synthetic bank for benchmarks
    """
    from kbtools.demo.banks import DEMO_DIR, build_demo

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
    p.add_argument("--only", help="comma-separated subset: engineering,business")
    p.add_argument("--force", action="store_true", help="replace banks already there")


@command("stats", "what a bank holds: entries, edges by type and source, note coverage, storage")
def _stats(args):
    """Print counts by kind, edge type and source, note coverage and storage of one or more banks."""
    from kbtools.ops.bank_stats import bank_stats, format_stats
    from kbtools.store.bank import open_bank

    stats = [bank_stats(open_bank(p)) for p in args.path]
    return (stats if len(stats) > 1 else stats[0]), "\n\n".join(format_stats(s) for s in stats)


@command("check", "check every invariant of a bank; exit status 4 when problems are found")
def _check(args):
    """Check every invariant (segments, ids, vocabularies, endpoints, uniqueness, weights, events, vectors)."""
    from kbtools.store.check import check_bank

    results = {p: [str(x) for x in check_bank(p)] for p in args.path}
    lines = []
    for p, probs in results.items():
        lines.append(f"{p}: {'ok' if not probs else f'{len(probs)} problem(s)'}")
        lines += [f"  - {x}" for x in probs[:50]]
        if len(probs) > 50:
            lines.append(f"  ... and {len(probs) - 50} more (use --json for all)")
    status = EXIT_PROBLEMS if any(results.values()) else EXIT_OK
    return {"banks": results, "ok": status == EXIT_OK}, "\n".join(lines), status


@command("import", "import entries and edges (JSONL or Parquet, pgvector export shape) in one transaction")
def _import(args):
    """Import rows; every row is validated first and a bad one is reported with its line number.

    Edge files may name the endpoints from/to (pgvector's entry_edges) or src/dst.
    """
    from kbtools.ops.interchange import import_files
    from kbtools.store.bank import create_bank, open_bank

    bank = create_bank(args.path) if args.create else open_bank(args.path)
    counts = import_files(bank, entries=args.entries, edges=args.edges, triples=args.triples, actor=args.actor)
    return counts, f"imported {counts['entries']} entries, {counts['edges']} edges, {counts['triples']} triples into {args.path}"


def _import_args(p):
    p.add_argument("--entries", help="entries file (.jsonl or .parquet)")
    p.add_argument("--edges", help="edges file (.jsonl or .parquet; from/to or src/dst)")
    p.add_argument("--triples", help="entity triples file")
    p.add_argument("--actor", default="import", help="who the events name (default: import)")
    p.add_argument("--create", action="store_true", help="create the bank first")


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


@command("compact", "fold each table's segments into one Parquet file and sweep unreferenced files")
def _compact(args):
    """Compact a bank: one segment per table, usage folded into entries, old files swept."""
    from kbtools.store.bank import open_bank

    report = open_bank(args.path).compact()
    return report, f"compacted {args.path} to version {report['version']}"


_ARGS = {
    "demo": _demo_args,
    "stats": lambda p: p.add_argument("path", nargs="+", help="bank folder(s)"),
    "check": lambda p: p.add_argument("path", nargs="+", help="bank folder(s)"),
    "import": lambda p: (_bank_arg(p), _import_args(p)),
    "export": lambda p: (_bank_arg(p), _export_args(p)),
    "compact": _bank_arg,
}


def register_args(name: str, fn: Callable) -> None:
    """Register the argument builder of a subcommand defined in another module."""
    _ARGS[name] = fn


def build_parser() -> argparse.ArgumentParser:
    """The ``kb`` argument parser with every subcommand."""
    _load_extensions()
    parser = argparse.ArgumentParser(
        prog="kb",
        description="kbtools: understand and maintain an AI agents' knowledge bank.",
        epilog="Exit status: 0 done, 1 error, 2 usage, 3 bank locked / job already running, 4 check found problems, "
               "5 the replay lost a relevant entry.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (add, _) in _COMMANDS.items():
        p = add(sub)
        if name in _ARGS:
            _ARGS[name](p)
    return parser


def _load_extensions() -> None:
    """Import the modules that register more subcommands (query, jobs, analytics, eval, bench)."""
    import importlib

    for mod in ("kbtools.cli.commands",):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name != mod:
                raise


def main(argv: list[str] | None = None) -> int:
    """Run ``kb`` with ``argv``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _, fn = _COMMANDS[args.command]
    try:
        out = fn(args)
    except BankLocked as err:
        print(f"kb {args.command}: {err}", file=sys.stderr)
        return EXIT_LOCKED
    except KbError as err:
        print(f"kb {args.command}: {err}", file=sys.stderr)
        return EXIT_ERROR
    payload, text = out[0], out[1]
    status = out[2] if len(out) > 2 else EXIT_OK
    _emit(payload, text, getattr(args, "json", False))
    return status


if __name__ == "__main__":  # pragma: no cover - `python -m kbtools.cli.main`: use the package's module
    from kbtools.cli.main import main as _main

    sys.exit(_main())
