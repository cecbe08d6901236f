"""Docs that drift fail CI: every public name documented, every kb subcommand in the README,
.ci/run running exactly the README's test command."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import kbtools as kb
from kbtools.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_public_name_has_a_docstring():
    missing = []
    for name in kb.__all__:
        obj = getattr(kb, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            if not (obj.__doc__ or "").strip():
                missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


def test_public_functions_show_an_example_or_are_listed_in_the_readme():
    lacking = []
    for name in kb.__all__:
        obj = getattr(kb, name)
        if inspect.isfunction(obj) and ">>>" not in (obj.__doc__ or "") and f"kb.{name}" not in README:
            lacking.append(name)
    assert not lacking, f"public functions with neither a doctest example nor a README example: {lacking}"


def test_every_subcommand_is_in_the_readme():
    names = build_parser()._subparsers._group_actions[0].choices
    for name in names:
        assert f"kb {name}" in README, f"kb {name} is not in the README"


def test_ci_runs_the_readme_test_command():
    run = (ROOT / ".ci/run").read_text()
    cmds = [l.strip() for l in run.splitlines() if l.strip() and not re.match(r"^(#|set |cd |export )", l.strip())]
    assert cmds == ["bash scripts/test.sh"]
    assert "bash scripts/test.sh" in README and "bash scripts/main.sh" in README
