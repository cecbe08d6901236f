"""A seeded fleet of demo banks of varied sizes, for running the jobs over many banks at once
(``kb demo --banks 20``): mostly synthetic banks, every third one business-like (the business
bank's flows and planted holes, padded with synthetic entries to its size). Pure: frames only.

>>> fleet = fleet_banks(4, seed=1, sizes=(200, 400))
>>> [name for name, _ in fleet]
['bank-00-synthetic', 'bank-01-synthetic', 'bank-02-business', 'bank-03-synthetic']
>>> all(200 <= demo.entries.height <= 400 for _, demo in fleet)
True
>>> fleet_banks(4, seed=1, sizes=(200, 400))[2][1].entries.equals(fleet[2][1].entries)
True
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from kbtools.demo.business import business_bank
from kbtools.demo.rows import DemoBank
from kbtools.demo.synthetic import synthetic_bank
from kbtools.errors import KbError

__all__ = ["fleet_banks", "FLEET_SIZES"]

#: Smallest and largest bank of a fleet (entries); sizes are drawn log-uniformly between them.
FLEET_SIZES: tuple[int, int] = (200, 3_000)


def _padded_business(entries: int, seed: int) -> DemoBank:
    """The business bank with synthetic entries added until it holds ``entries`` (ids that clash
    with the business bank's are dropped, with the edges that touch them)."""
    base = business_bank(seed=seed)
    extra = max(0, entries - base.entries.height)
    if extra == 0:
        return dataclasses.replace(base, name="business-fleet")
    pad = synthetic_bank(entries=extra, seed=seed + 10_000)
    taken = base.entries["id"].implode()
    pad_entries = pad.entries.filter(~pl.col("id").is_in(taken))
    keep = pad_entries["id"].implode()
    pad_edges = pad.edges.filter(pl.col("src").is_in(keep) & pl.col("dst").is_in(keep))
    truth = {**base.truth, "padding_entries": pad_entries.height}
    return DemoBank(
        "business-fleet",
        pl.concat([base.entries, pad_entries], how="diagonal_relaxed"),
        pl.concat([base.edges, pad_edges], how="diagonal_relaxed"),
        base.triples,  # synthetic banks have no triples
        truth,
    )


def fleet_banks(banks: int, *, seed: int = 7, sizes: tuple[int, int] = FLEET_SIZES) -> list[tuple[str, DemoBank]]:
    """``banks`` generated banks named ``bank-NN-<kind>``, sizes log-uniform in ``sizes``
    (inclusive), every third one (``NN % 3 == 2``) business-like; the same seed gives the same
    fleet."""
    lo, hi = sizes
    if banks < 1 or lo < 1 or hi < lo:
        raise KbError(f"fleet of {banks} banks sized {sizes}: need at least one bank and 1 <= smallest <= largest")
    rng = np.random.default_rng(seed)
    counts = np.exp(rng.uniform(np.log(lo), np.log(hi + 1), size=banks)).astype(int).clip(lo, hi)
    out = []
    for i, n in enumerate(counts.tolist()):
        bank_seed = seed * 1000 + i
        if i % 3 == 2:
            out.append((f"bank-{i:02d}-business", _padded_business(n, bank_seed)))
        else:
            out.append((f"bank-{i:02d}-synthetic", synthetic_bank(entries=n, seed=bank_seed)))
    return out
