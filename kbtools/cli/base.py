"""What every ``kb`` subcommand shares: the registry, the exit statuses, the JSON and text output,
progress on long work, and how frames are printed.

>>> from kbtools.cli.main import COMMANDS  # the registry, once the topic modules have registered
>>> "query" in COMMANDS and "check" in COMMANDS
True
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
from typing import Callable

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__all__ = ["command", "register_args", "COMMANDS", "ARGS", "EXIT_OK", "EXIT_ERROR", "EXIT_USAGE", "EXIT_LOCKED",
           "EXIT_PROBLEMS", "emit", "progress", "frame_out", "bank_arg", "bank_for"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LOCKED, EXIT_PROBLEMS = 0, 1, 2, 3, 4

#: name -> (parser builder, handler ``fn(args) -> (payload, text[, status])``)
COMMANDS: dict[str, tuple[Callable, Callable]] = {}
#: name -> the function that adds the subcommand's own arguments
ARGS: dict[str, Callable] = {}


def command(name: str, help: str):
    """Register ``fn(args) -> (payload, text)`` as subcommand ``name``."""

    def deco(fn):
        def add(sub):
            p = sub.add_parser(name, help=help, description=inspect.cleandoc(fn.__doc__ or help),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
            p.add_argument("--json", action="store_true", help="print a JSON report instead of text")
            return p

        COMMANDS[name] = (add, fn)
        return fn

    return deco


def register_args(name: str, fn: Callable) -> None:
    """Register the argument builder of subcommand ``name``."""
    ARGS[name] = fn


def bank_arg(p, nargs=None):
    p.add_argument("path", nargs=nargs, help="the bank folder")


def create_args(p):
    """``--create`` and the ``--embedder`` the bank it makes records, for a command that fills a bank."""
    from kbtools.model.config import DEFAULT_EMBEDDER, EMBEDDER_NAMES

    p.add_argument("--create", action="store_true", help="create the bank first")
    p.add_argument("--embedder", choices=(*EMBEDDER_NAMES, "none"),
                   help=f"with --create: the embedder the new bank records, which embeds what this command adds "
                        f"(default {DEFAULT_EMBEDDER}; minilm-static is much faster on long texts; none: no vectors "
                        "until `kb embed`)")


def bank_for(args):
    """The bank a filling command writes to, as a context: with ``--create`` a new bank (recording
    ``--embedder``) that is removed again when the command fails (``new_bank``), else the bank at
    ``args.path``."""
    from contextlib import nullcontext

    from kbtools.errors import ValidationError
    from kbtools.model.config import DEFAULT_EMBEDDER
    from kbtools.store.bank import open_bank
    from kbtools.store.fresh import new_bank

    chosen = getattr(args, "embedder", None)
    if not args.create:
        if chosen:
            raise ValidationError("--embedder", chosen, "--embedder goes with --create (an existing bank keeps its "
                                  "embedder: `kb embed PATH --embedder NAME --rebuild` changes it)")
        return nullcontext(open_bank(args.path))
    embedder = None if chosen == "none" else (chosen or DEFAULT_EMBEDDER)
    return new_bank(args.path, embedder=embedder)


def _json_default(o):
    import polars as pl

    if isinstance(o, pl.DataFrame):
        return o.to_dicts()
    if hasattr(o, "isoformat"):
        return o.isoformat()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def emit(payload, text: str | None, as_json: bool) -> None:
    if as_json:
        print(json.dumps(payload, default=_json_default, indent=1, sort_keys=False))
    elif text:
        print(text)



def progress(label: str):
    """A progress bar on a terminal, plain log lines otherwise (the jobs' reporter)."""
    from kbtools.ops.jobs import progress_reporter

    return progress_reporter(label)


def frame_out(frame, args, text_rows: int = 40):
    """Payload and text for a polars frame result (--json gives rows, --csv gives CSV)."""
    import polars as pl

    if getattr(args, "csv", False):
        flat = frame.with_columns(
            [pl.col(c).cast(pl.List(pl.String)).list.join("; ") for c, t in frame.schema.items() if isinstance(t, pl.List)]
        )
        return None, flat.write_csv()

    with pl.Config(tbl_rows=text_rows, tbl_width_chars=160, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        return frame.to_dicts(), str(frame)
