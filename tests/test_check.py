"""kbtools.store.check: a sound bank has no problem; each broken invariant is named."""

from __future__ import annotations

import json

import kbtools as kb
from kbtools.store.segments import segment_files


def _bank(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    a = kb.report_learning(bank, content="Rotate the signing key monthly.", actor="t")
    kb.report_learning(bank, content="The rotation needs the vault role.", actor="t",
                       connections=[{"id": a, "relation": "clarifies", "note": "which role"}])
    return bank


def test_a_sound_bank_has_no_problem(tmp_path):
    problems = kb.check_bank(_bank(tmp_path).path)
    assert problems == [] and "sound" in problems._repr_html_()


def test_a_missing_segment_is_named(tmp_path):
    bank = _bank(tmp_path)
    seg = segment_files(bank)["edges"][0]
    (bank.path / seg).unlink()
    assert any(seg in str(p) and "missing" in str(p) for p in kb.check_bank(bank.path))


def test_a_table_the_bank_does_not_have_is_named(tmp_path):
    bank = _bank(tmp_path)
    manifest = json.loads((bank.path / "manifest.json").read_text())
    manifest["tables"]["gossip"] = []
    (bank.path / "manifest.json").write_text(json.dumps(manifest))
    assert any("gossip" in str(p) for p in kb.check_bank(bank.path))
