"""The ``kb`` command line (a face: it calls the public API only)."""

from kbtools.cli.main import main

__all__ = ["main"]
