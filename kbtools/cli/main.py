"""The ``kb`` command line: each subcommand parses, opens the bank, calls one library function with
the flags as keyword arguments, prints its report (text, or ``--json``), and turns a KbError into
a clear message and a non-zero exit status.

Exit status: 0 done; 1 an error kbtools explains (bad input, not a bank, a file system that
refuses a write, ...); 2 a usage error (an unknown flag, ``--json`` with ``--csv``); 3 the bank is
locked by another writer or job run; 4 ``kb check`` found problems; 5 the replay lost a relevant
entry. An error is one line on stderr, ``kb COMMAND: message``; under ``--json`` it is a JSON
object on stderr: ``{"error": class, "message": ..., "exit_status": n, "command": ...}``. Output
cut short by a closed pipe (``kb hubs --csv | head -1``) ends quietly with the command's status.

>>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# each topic module registers its subcommands when imported
import kbtools.cli.bank as bank
import kbtools.cli.evaluation as evaluation
import kbtools.cli.graph as graph
import kbtools.cli.ingest as ingest
import kbtools.cli.jobs as jobs
import kbtools.cli.judging as judging
import kbtools.cli.mcp as mcp
import kbtools.cli.retrieval as retrieval
import kbtools.cli.sql as sql
from kbtools.cli.base import ARGS, COMMANDS, EXIT_ERROR, EXIT_LOCKED, EXIT_OK, EXIT_USAGE, emit
from kbtools.errors import BankLocked, KbError

__all__ = ["main", "build_parser", "subcommands"]

#: the topic modules, in the order their subcommands are listed
TOPICS = (bank, ingest, retrieval, sql, graph, jobs, judging, evaluation, mcp)


def build_parser() -> argparse.ArgumentParser:
    """The ``kb`` argument parser with every subcommand."""
    return _parser_and_subcommands()[0]


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Each ``kb`` subcommand's name and its argument parser, in the order ``kb --help`` lists them.

    >>> "check" in subcommands() and "--json" in subcommands()["check"].format_help()
    True
    """
    return dict(_parser_and_subcommands()[1].choices)


def _parser_and_subcommands():
    parser = argparse.ArgumentParser(
        prog="kb",
        description="kbtools: understand and maintain an AI agents' knowledge bank.",
        epilog="Exit status: 0 done, 1 error, 2 usage, 3 bank locked / job already running, 4 check found problems, "
               "5 the replay lost a relevant entry.",
    )
    parser.add_argument("--version", action="version", version=f"kb (kbtools) {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    order = {topic.__name__: i for i, topic in enumerate(TOPICS)}
    listed = sorted(COMMANDS.items(), key=lambda item: order.get(item[1][1].__module__, len(order)))
    for name, (add, _) in listed:
        p = add(sub)
        if name in ARGS:
            ARGS[name](p)
    return parser, sub


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kbtools")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH
        return "0.1.0"


def main(argv: list[str] | None = None) -> int:
    """Run ``kb`` with ``argv``; returns the exit status (see the module doc)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    if as_json and getattr(args, "csv", False):
        return _fail(args.command, "UsageError", "--json and --csv cannot be used together: choose one output format",
                     EXIT_USAGE, as_json)
    _, fn = COMMANDS[args.command]
    status = EXIT_OK
    try:
        out = fn(args)
        status = out[2] if len(out) > 2 else EXIT_OK
        emit(out[0], out[1], as_json)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (| head): end quietly, with the command's status
        _silence_stdout()
        return status
    except KbError as err:
        return _fail(args.command, type(err).__name__, str(err), EXIT_LOCKED if isinstance(err, BankLocked) else EXIT_ERROR,
                     as_json)
    except OSError as err:  # a path the command was given (a folder for a file, an unwritable --to)
        where = f"{err.filename}: " if err.filename else ""
        return _fail(args.command, type(err).__name__, f"{where}{err.strerror or err}", EXIT_ERROR, as_json)
    return status


def _fail(command: str, kind: str, message: str, status: int, as_json: bool) -> int:
    """Report an error as one line on stderr (a JSON object under --json); returns ``status``."""
    if as_json:
        line = json.dumps({"error": kind, "message": message, "exit_status": status, "command": command})
    else:
        line = f"kb {command}: " + " ".join(message.split())
    try:
        print(line, file=sys.stderr)
    except BrokenPipeError:
        pass
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
