"""Seeded demo banks: an engineering bank, a business-process bank and large synthetic banks.

Pure: every function returns frames and a JSON-serialisable ground-truth dict and writes
nothing; the store writes what they return. All randomness comes from one seeded numpy
generator and every timestamp lies before the fixed :data:`REFERENCE_DATE`, so a seed gives
byte-for-byte the same bank on every machine and every day.

>>> bank = engineering_bank(seed=3, entries=400, topics=8)
>>> bank.entries.height, bank.truth["generator"]
(400, 'kbtools.demo')
>>> engineering_bank(seed=3, entries=400, topics=8).entries.equals(bank.entries)
True

Modules: ``rows`` (the bank type, ids, times, frame builders); ``catalog``, ``worked`` and
``hoplab`` (the engineering bank's words, worked examples and hop lab) feeding ``engineering``;
``flows`` (business flow specifications) feeding ``business``; ``synthetic``.
"""

from kbtools.demo.business import business_bank
from kbtools.demo.catalog import MAX_TOPICS
from kbtools.demo.engineering import engineering_bank
from kbtools.demo.rows import REFERENCE_DATE, DemoBank
from kbtools.demo.synthetic import synthetic_bank

from kbtools.demo.banks import build_demo, build_fleet, read_truth, truth_path  # noqa: E402  (writes them as banks)

__all__ = ["DemoBank", "REFERENCE_DATE", "MAX_TOPICS", "engineering_bank", "business_bank", "synthetic_bank",
           "build_demo", "build_fleet", "read_truth", "truth_path"]
