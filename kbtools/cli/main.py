"""The ``kb`` command line: each subcommand parses, opens the bank, calls one library function with
the flags as keyword arguments, prints its report (text, or ``--json``), and turns a KbError into
a clear message and a non-zero exit status.

Exit status: 0 done; 1 an error kbtools explains (bad input, not a bank, ...); 2 a usage error;
3 the bank is locked by another writer or job run; 4 ``kb check`` found problems.

>>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys

from kbtools.cli import bank, evaluation, graph, ingest, jobs, judging, mcp, retrieval  # noqa: F401  (each registers its subcommands)
from kbtools.cli.base import ARGS, COMMANDS, EXIT_ERROR, EXIT_LOCKED, EXIT_OK, emit
from kbtools.errors import BankLocked, KbError

__all__ = ["main", "build_parser"]

#: the topic modules, in the order their subcommands are listed
TOPICS = (bank, ingest, retrieval, graph, jobs, judging, evaluation, mcp)


def build_parser() -> argparse.ArgumentParser:
    """The ``kb`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="kb",
        description="kbtools: understand and maintain an AI agents' knowledge bank.",
        epilog="Exit status: 0 done, 1 error, 2 usage, 3 bank locked / job already running, 4 check found problems, "
               "5 the replay lost a relevant entry.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    order = {topic.__name__: i for i, topic in enumerate(TOPICS)}
    listed = sorted(COMMANDS.items(), key=lambda item: order.get(item[1][1].__module__, len(order)))
    for name, (add, _) in listed:
        p = add(sub)
        if name in ARGS:
            ARGS[name](p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``kb`` with ``argv``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _, fn = COMMANDS[args.command]
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
    emit(payload, text, getattr(args, "json", False))
    return status
