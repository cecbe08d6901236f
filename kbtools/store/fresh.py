"""A bank made for one filling command: ``new_bank`` creates it and removes it again when the
command fails before anything was committed (``kb import --create``, ``kb ingest --create``), so
the same command can run again once its input is fixed."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kbtools.model.config import DEFAULT_EMBEDDER
from kbtools.store.bank import Bank, create_bank

__all__ = ["new_bank"]


@contextmanager
def new_bank(path: str | os.PathLike, *, settings: dict | None = None,
             embedder: str | None = DEFAULT_EMBEDDER) -> Iterator[Bank]:
    """``create_bank`` for a block that fills the new bank at once (``kb import --create``): when
    the block raises, the bank is removed again and the error goes on, so the same command can run
    again once its input is fixed. Only what this call made goes: a bank a commit reached, or a
    folder holding any other file, is left as it is; a folder that was there (empty) before stays.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "new"
    >>> try:
    ...     with new_bank(root) as bank:
    ...         raise ValueError("a bad row")
    ... except ValueError:
    ...     pass
    >>> root.exists()
    False
    """
    root = Path(path)
    top = root  # the outermost folder this call creates (create_bank makes missing parents too)
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    made = not root.exists()
    bank = create_bank(root, settings=settings, embedder=embedder)
    try:
        yield bank
    except BaseException:
        _remove_unfilled(root, top if made else None)
        raise


# what create_bank writes, and what opening it or a failed write may leave beside (the lock file)
_UNFILLED_FILES = frozenset({"bank.json", "manifest.json", ".lock"})


def _remove_unfilled(root: Path, top: Path | None) -> None:
    """Remove a bank that holds only what ``create_bank`` wrote (version 0, no other file); with
    ``top``, the folders up to it that were made for it as well (while empty)."""
    try:
        if json.loads((root / "manifest.json").read_text()).get("version") != 0:
            return
        if any(f.is_file() or f.is_symlink() for f in root.rglob("*")
               if f.relative_to(root).as_posix() not in _UNFILLED_FILES):
            return
        if top is None:  # the folder was there before: empty it, keep it
            for child in root.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            return
        shutil.rmtree(root)
        folder = root.parent
        while folder != top.parent and folder.exists() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    except OSError:  # leave it: the block's own error is the one to report
        return
