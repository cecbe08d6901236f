"""Writing generated demo banks to disk: the thin edge over the pure generator in ``kbtools.demo``.

Each bank gets a ground-truth sidecar next to its folder: ``<bank>.truth.json``.

>>> import tempfile, pathlib
>>> out = build_demo(pathlib.Path(tempfile.mkdtemp()), which=("business",))
>>> sorted(out)
['business']
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kbtools.demo.business import business_bank
from kbtools.demo.engineering import engineering_bank
from kbtools.demo.rows import DemoBank
from kbtools.demo.synthetic import synthetic_bank
from kbtools.demo.fleet import FLEET_SIZES, fleet_banks
from kbtools.errors import BankExists, KbError
from kbtools.ops.interchange import import_frames
from kbtools.store.bank import Bank, create_bank, read_manifest

__all__ = ["write_demo_bank", "build_demo", "build_fleet", "truth_path", "read_truth", "DEMO_SEED", "DEMO_DIR"]

DEMO_SEED = 7
#: Where the committed demo banks live, relative to the repository root.
DEMO_DIR = Path(__file__).resolve().parents[2] / "data" / "demo"


def truth_path(bank_path: str | os.PathLike) -> Path:
    """The ground-truth sidecar of a bank folder: ``<folder>.truth.json`` beside it.

    >>> truth_path("data/demo/engineering").name
    'engineering.truth.json'
    """
    p = Path(bank_path)
    return p.with_name(p.name + ".truth.json")


def read_truth(bank_or_path: Bank | str | os.PathLike) -> dict:
    """The ground-truth sidecar of a bank (queries, hop tasks, planted holes)."""
    path = truth_path(bank_or_path.path if isinstance(bank_or_path, Bank) else bank_or_path)
    if not path.exists():
        raise KbError(f"{path}: no ground-truth sidecar next to this bank (kb demo writes one for the demo banks)")
    return json.loads(path.read_text(encoding="utf-8"))


def write_demo_bank(demo: DemoBank, path: str | os.PathLike, *, force: bool = False) -> Bank:
    """Create a bank at ``path`` holding ``demo`` (one transaction) and write its sidecar.

    With ``force`` an existing bank at ``path`` is replaced; anything that is not a bank is never
    removed.
    """
    root = Path(path)
    if root.exists() and force:
        read_manifest(root)  # raises NotABank: we only ever delete a bank
        shutil.rmtree(root)
    elif (root / "bank.json").exists():
        raise BankExists(root, "a bank is already there (pass force=True / --force to rebuild it)")
    bank = create_bank(root, embedder=None)  # a demo bank is embedded afterwards, by ``kb embed``
    import_frames(bank, entries=demo.entries, edges=demo.edges, triples=demo.triples, actor="kb demo", guard=False)
    truth_path(root).write_text(json.dumps(demo.truth, indent=1, sort_keys=True), encoding="utf-8")
    bank.compact(sweep_age=0)  # nobody reads a bank that is being created
    return bank


def build_demo(
    out: str | os.PathLike = DEMO_DIR, *, seed: int = DEMO_SEED, which=("engineering", "business"),
    entries: int | None = None, force: bool = False,
) -> dict[str, Bank]:
    """Generate and write the demo banks under ``out`` (``engineering``, ``business``), or with
    ``entries=N`` one synthetic bank of N entries at ``out`` itself (for benchmarks)."""
    out = Path(out)
    if entries is not None:
        return {"synthetic": write_demo_bank(synthetic_bank(entries=entries, seed=seed), out, force=force)}
    makers = {"engineering": lambda: engineering_bank(seed=seed), "business": lambda: business_bank(seed=seed)}
    unknown = set(which) - set(makers)
    if unknown:
        raise KbError(f"unknown demo bank {sorted(unknown)[0]!r}: choose from {', '.join(makers)}")
    return {name: write_demo_bank(makers[name](), out / name, force=force) for name in which}


def build_fleet(out: str | os.PathLike, *, banks: int = 20, seed: int = DEMO_SEED, sizes: tuple[int, int] = FLEET_SIZES,
                force: bool = False) -> dict[str, Bank]:
    """Write a fleet of ``banks`` demo banks of varied sizes under ``out`` (``out/bank-NN-<kind>``,
    each with its sidecar): see :func:`kbtools.demo.fleet.fleet_banks`.

    >>> import tempfile, pathlib
    >>> fleet = build_fleet(pathlib.Path(tempfile.mkdtemp()), banks=2, sizes=(200, 300))
    >>> sorted(fleet)
    ['bank-00-synthetic', 'bank-01-synthetic']
    """
    out = Path(out)
    return {name: write_demo_bank(demo, out / name, force=force) for name, demo in fleet_banks(banks, seed=seed, sizes=sizes)}
