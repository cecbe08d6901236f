"""kbtools.evaluate.bank_stats: counts on a small bank built here, and their text."""

from __future__ import annotations

import kbtools as kb
from kbtools.evaluate.bank_stats import format_stats


def test_stats_count_what_the_bank_holds(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    a = kb.report_learning(bank, content="Rotate the signing key monthly.", actor="t", kind="fact")
    b = kb.report_learning(bank, content="The rotation needs the vault role.", actor="t",
                           connections=[{"id": a, "relation": "clarifies", "note": "which role the rotation needs"}])
    kb.link(bank, a, b, "see_also", actor="t")
    stats = kb.bank_stats(bank)
    assert stats["entries"] == 2 and stats["edges"] == 2
    assert stats["entries_by_kind"] == {"fact": 1, "knowledge": 1}
    text = format_stats(stats)
    assert "entries        2" in text and "fact 1" in text
    assert dict(stats) == stats  # still a plain dict for JSON callers
