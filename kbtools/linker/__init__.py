"""The write-time linker (seed 001): pure functions that plan typed, weighted links between entries.

Read -> plan -> apply: ``plan_links`` (one new entry) and ``plan_connect`` (many, vectorised) return
a ``LinkPlan`` of edges to add and remove; the store applies it. ``explain_pair`` scores one pair
(``kb.explain(bank, a, b)`` hands it a bank's frames).
"""

from kbtools.linker.anchors import Anchor, anchor
from kbtools.linker.explanation import LinkScore, explain_pair
from kbtools.linker.planning import LinkPlan, apply_links, plan_connect, plan_links
from kbtools.linker.rules import LINKER_DEFAULTS, LINKER_LEXICAL, LinkerSettings
from kbtools.linker.terms import TermStats

__all__ = [
    "Anchor",
    "anchor",
    "TermStats",
    "LinkerSettings",
    "LINKER_DEFAULTS",
    "LINKER_LEXICAL",
    "LinkPlan",
    "plan_links",
    "plan_connect",
    "apply_links",
    "LinkScore",
    "explain_pair",
]
