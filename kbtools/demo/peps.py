"""The PEP bank: Python's 736 Enhancement Proposals (public domain / CC0), committed under
``data/peps/peps.jsonl.gz``, ingested as a real bank nobody here wrote.

One entry per top-level section (``PEP N: title — section``; sections over 4,000 characters cut at
paragraphs, each ``part_of`` its PEP's Abstract, or first section when it has none; the ``Copyright`` boilerplate left out),
``systems`` from ``Topic``, ``tasks`` from ``Type``, ``created_at`` from ``Created``; the header
relations as trusted typed edges (``Superseded-By`` and ``Replaces`` as ``supersedes`` from the
successor, ``Requires`` as ``requires``); references in prose (``PEP 8``, ``:pep:`484```) as a
citation pattern that ``kb backfill`` turns into ``cites`` edges with the citing sentence as note.
The same mapping from the command line is ``PEPS_COMMAND``.

>>> PEPS_MAPPING["edges"][0]
'Superseded-By=value supersedes record'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from kbtools.errors import BankExists
from kbtools.ops.ingest import ingest
from kbtools.store.bank import Bank, create_bank

__all__ = ["PEPS_FILE", "PEPS_MAPPING", "PEPS_COMMAND", "build_peps_bank"]

#: The committed PEP corpus.
PEPS_FILE = Path(__file__).resolve().parents[2] / "data" / "peps" / "peps.jsonl.gz"
#: The ingest options that make the PEP bank (keyword arguments of :func:`kbtools.ops.ingest.ingest`).
PEPS_MAPPING: dict = {
    "text_field": "body", "key_field": "pep", "fmt": "rst", "title_field": "Title",
    "title_format": "PEP {key}: {title}", "created_field": "Created", "systems_field": "Topic",
    "tasks_field": "Type", "meta_fields": ("Status", "Type", "Author", "Python-Version"),
    "skip_sections": ("Copyright",), "head_section": "Abstract",
    "edges": ("Superseded-By=value supersedes record", "Replaces=record supersedes value", "Requires=requires"),
    "cite": r"(?:PEP\s*|:pep:`)0*(\d+)",
}
#: The same bank from the command line.
PEPS_COMMAND = (
    "kb ingest banks/peps --create --from data/peps/peps.jsonl.gz --text-field body --key pep --format rst "
    "--title-field Title --title-format 'PEP {key}: {title}' --created-field Created --systems-field Topic "
    "--tasks-field Type --meta Status,Type,Author,Python-Version --skip-section Copyright --head-section Abstract "
    "--edge 'Superseded-By=value supersedes record' --edge 'Replaces=record supersedes value' "
    "--edge Requires=requires --cite '(?:PEP\\s*|:pep:`)0*(\\d+)'"
)


def build_peps_bank(out: str | os.PathLike, *, source: str | os.PathLike = PEPS_FILE, force: bool = False,
                    progress: Callable[[int, int], None] | None = None) -> tuple[Bank, dict]:
    """Write the PEP bank at ``out`` (an error when a bank is there, unless ``force``) and return it
    with the ingest report. ``source``: the PEP JSONL (default the committed file; a slice for tests).

    >>> bank, report = build_peps_bank(tmp / "peps")  # doctest: +SKIP
    """
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        if not force:
            raise BankExists(root, "a bank is already there (pass force=True / --force to rebuild it)")
        shutil.rmtree(root)
    bank = create_bank(root, embedder=None)  # embedded afterwards, by ``kb embed``
    report = ingest(bank, source, actor="kb demo --peps", progress=progress, **PEPS_MAPPING)
    bank.reload()
    bank.compact(sweep_age=0)
    return bank, report
