"""Shared fixtures: real banks on disk in a temporary folder."""

from __future__ import annotations

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import pytest

import kbtools as kb


@pytest.fixture
def bank(tmp_path):
    """A new, empty bank."""
    return kb.create_bank(tmp_path / "bank")


@pytest.fixture
def small_bank(tmp_path):
    """A bank with three entries: a gotcha, its correction and a clarification of the correction."""
    b = kb.create_bank(tmp_path / "small")
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
