"""Docs that drift fail CI: every public name documented, every kb subcommand and each of its long
flags in docs/cli.md, every relative link resolving, every ``kb.NAME`` the docs mention existing,
the README short, and .ci/run running exactly the README's test command."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import kbtools as kb
from kbtools.cli.main import subcommands

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))
CLI_DOC = (ROOT / "docs" / "cli.md").read_text()
#: the README and every page under docs/, where the library's functions are shown
ALL_DOCS = README + "".join(page.read_text() for page in DOCS)


def _section(text: str, heading: str) -> str:
    """The text under the ``## {heading}`` heading, up to the next heading of that level or higher."""
    match = re.search(rf"(?m)^## {re.escape(heading)}\s*$", text)
    assert match, f"docs/cli.md has no '## {heading}' heading"
    end = re.search(r"(?m)^#{1,2} ", text[match.end():])
    return text[match.end(): match.end() + end.start() if end else len(text)]


def test_every_public_name_has_a_docstring():
    missing = []
    for name in kb.__all__:
        obj = getattr(kb, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            if not (obj.__doc__ or "").strip():
                missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


def test_public_functions_show_an_example_or_are_in_the_docs():
    lacking = []
    for name in kb.__all__:
        obj = getattr(kb, name)
        if inspect.isfunction(obj) and ">>>" not in (obj.__doc__ or "") and f"kb.{name}" not in ALL_DOCS:
            lacking.append(name)
    assert not lacking, f"public functions with neither a doctest example nor an example in README.md or docs/: {lacking}"


def test_every_subcommand_is_named_in_the_readme():
    for name in subcommands():
        assert f"`kb {name}`" in README, f"kb {name} is not in the README's table of commands"


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_has_a_section_with_each_of_its_long_flags(name):
    section = _section(CLI_DOC, f"kb {name}")
    flags = [opt for action in subcommands()[name]._actions for opt in action.option_strings
             if opt.startswith("--") and opt != "--help"]
    # a row of the section's flag table, not the usage line (which would list every flag anyway)
    missing = [flag for flag in flags if not re.search(rf"(?m)^\| `{re.escape(flag)}(?![\w-])", section)]
    assert not missing, f"docs/cli.md's 'kb {name}' section has no table row for {missing}"


def test_every_evaluation_of_kb_eval_has_a_heading():
    evaluations = next(a for a in subcommands()["eval"]._actions if not a.option_strings and a.choices).choices
    section = _section(CLI_DOC, "kb eval")
    for which in evaluations:
        assert re.search(rf"(?m)^### kb eval {which}\s*$", section), f"docs/cli.md has no '### kb eval {which}'"


def test_cli_doc_names_no_subcommand_the_parser_lacks():
    documented = set(re.findall(r"(?m)^## kb (\S+)\s*$", CLI_DOC))
    assert documented == set(subcommands()), documented ^ set(subcommands())


def test_the_readme_is_a_front_page():
    lines = README.count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move the detail to docs/"


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"(?s)```.*?```", "", page.read_text())
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"(?m)^#+ (.+)$", text)}


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS], ids=lambda p: p.name)
def test_relative_links_point_to_files_and_headings_that_exist(page):
    text = re.sub(r"(?s)```.*?```", "", page.read_text())  # links inside code blocks are not links
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # an absolute URL
        path, _, anchor = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert not broken, f"{page.name} links to files or headings that do not exist: {broken}"


#: a Markdown file named in prose, help or a docstring: one under docs/ or a capitalised name (README.md)
_DOC_FILE = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*(?:[A-Z][A-Z_]+|docs/[\w-]+)\.md)\b")


def test_every_markdown_file_the_package_and_docs_name_exists():
    """Help strings and docstrings (what ``kb CMD --help`` and ``help()`` show) and the pages name
    only Markdown files the repository has: a renamed or removed page fails here."""
    texts = {p: p.read_text() for p in [*sorted((ROOT / "kbtools").rglob("*.py")), *sorted((ROOT / "jobs").glob("*.py")),
                                         ROOT / "README.md", *DOCS]}
    missing = sorted({f"{p.relative_to(ROOT)}: {name}" for p, text in texts.items() for name in _DOC_FILE.findall(text)
                      if not (ROOT / name).exists() and not (p.parent / name).exists()})
    assert not missing, f"these name Markdown files the repository lacks: {missing}"


def test_every_kb_name_the_docs_mention_exists():
    """``kb.X`` and ``kb.ns.Y`` in the README and docs/ resolve, so a renamed or moved name fails here."""
    stale = set()
    for dotted in set(re.findall(r"(?<![\w.])kb((?:\.[A-Za-z_]\w*)+)", ALL_DOCS)):
        obj = kb
        for part in dotted.lstrip(".").split("."):
            if inspect.ismodule(obj):
                if not hasattr(obj, part):
                    stale.add("kb" + dotted)
                    break
                obj = getattr(obj, part)
            else:
                break  # an attribute of a function's result or of a class: not the package's to check
    assert not stale, f"README.md or docs/ mention names kbtools does not have: {sorted(stale)}"


def test_ci_runs_the_readme_test_command():
    run = (ROOT / ".ci/run").read_text()
    cmds = [l.strip() for l in run.splitlines() if l.strip() and not re.match(r"^(#|set |cd |export )", l.strip())]
    assert cmds == ["bash scripts/test.sh"]
    assert "bash scripts/test.sh" in README and "bash scripts/main.sh" in README


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"(?s)```python\n(.*?)```", text)


def _undefined_names(blocks: list[str]) -> list[str]:
    """Names a block reads before any block (in order) or an import defines them (builtins aside)."""
    import ast
    import builtins

    defined, missing = set(dir(builtins)), []
    for block in blocks:
        tree = ast.parse(block)
        for stmt in tree.body:  # statement by statement: a name must be bound before a later one reads it
            loads = [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
            bound = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
            bound |= {(a.asname or a.name).split(".")[0] for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))
                      for a in n.names}
            bound |= {a.arg for n in ast.walk(stmt) if isinstance(n, (ast.Lambda, ast.FunctionDef)) for a in n.args.args}
            bound |= {n.name for n in ast.walk(stmt) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            missing += [name for name in loads if name not in defined and name not in bound]
            defined |= bound
    return sorted(set(missing))


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "api.md"], ids=lambda p: p.name)
def test_every_name_a_python_snippet_uses_is_defined_before(page):
    """Read top to bottom, each page's snippets define every name before they use it."""
    assert _python_blocks(page.read_text()), f"{page.name} has Python snippets"
    assert _undefined_names(_python_blocks(page.read_text())) == []


def test_the_name_check_finds_a_stray_name():
    assert _undefined_names(["x = 1\nprint(pool, x)"]) == ["pool"]  # the check itself finds a stray name


def test_the_readme_python_tour_runs(tmp_path, monkeypatch, demo_dir):
    """The tour as a reader pastes it, in a fresh folder holding the demo business bank it opens."""
    import contextlib
    import io
    import shutil

    shutil.copytree(demo_dir / "business", tmp_path / "data/demo/business")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        for block in _python_blocks(README):
            exec(compile(block, "README.md", "exec"), namespace)
    assert "Log in to production with Playwright" in out.getvalue()
    assert namespace["bank"].entries.height >= 2 and kb.check_bank(tmp_path / "banks/eng") == []
