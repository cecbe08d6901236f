"""Shared fixtures: real banks on disk in a temporary folder."""

from __future__ import annotations

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import pytest

import kbtools as kb


@pytest.fixture
def bank(tmp_path):
    """A new, empty bank (auto-linking off, so tests see exactly the edges they write; no embedder, so
    writes store no vectors unless a test embeds)."""
    return kb.create_bank(tmp_path / "bank", settings={"auto_link": False}, embedder=None)


@pytest.fixture
def small_bank(tmp_path):
    """A bank with three entries: a gotcha, its correction and a clarification of the correction."""
    b = kb.create_bank(tmp_path / "small", settings={"auto_link": False}, embedder=None)
    a = kb.report_learning(b, content="The session cookie is dropped by the CDN.", actor="agent-1", kind="knowledge")
    c = kb.report_learning(
        b, content="Only the staging CDN drops the session cookie.", actor="agent-2",
        connections=[{"id": a, "relation": "corrects", "note": "which environment the caveat applies to"}],
    )
    d = kb.report_learning(
        b, content="The staging CDN strips cookies without the Secure flag.", actor="agent-3",
        connections=[{"id": c, "relation": "clarifies", "note": "why the staging caveat holds"}],
    )
    b.ids = (a, c, d)
    return b


@pytest.fixture(scope="session")
def demo_dir():
    """The committed demo banks (read only: tests that write use a copy)."""
    from kbtools.demo.banks import DEMO_DIR

    return DEMO_DIR


@pytest.fixture(scope="session")
def eng(tmp_path_factory, demo_dir):
    """A copy of the engineering demo bank, embedded with the default MiniLM model (once per run;
    vectors come from the text-hash cache after the first run on a machine)."""
    import shutil

    root = tmp_path_factory.mktemp("eng")
    shutil.copytree(demo_dir / "engineering", root / "engineering")
    shutil.copy(demo_dir / "engineering.truth.json", root / "engineering.truth.json")
    bank = kb.open_bank(root / "engineering")
    kb.embed_bank(bank, embedder="minilm-int8")
    return bank


@pytest.fixture
def eng_copy(eng, tmp_path):
    """A private, writable copy of the embedded engineering bank."""
    import shutil

    shutil.copytree(eng.path, tmp_path / "engineering")
    shutil.copy(eng.path.with_name("engineering.truth.json"), tmp_path / "engineering.truth.json")
    return kb.open_bank(tmp_path / "engineering")


@pytest.fixture(scope="module")
def eng_hashing(tmp_path_factory, demo_dir):
    """A copy of the engineering demo bank with its sidecar, embedded with the fast hashing embedder
    (for tests of evaluation logic, where the ranking model does not matter)."""
    import shutil

    from kbtools.demo.banks import truth_path

    root = tmp_path_factory.mktemp("eng-hashing") / "engineering"
    shutil.copytree(demo_dir / "engineering", root)
    shutil.copy(truth_path(demo_dir / "engineering"), truth_path(root))
    bank = kb.open_bank(root)
    kb.embed_bank(bank, embedder="hashing")
    return bank
