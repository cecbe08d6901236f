"""The kb command line's surface: --version, help texts without docstring indentation, choices
where the values are known."""

from __future__ import annotations

import inspect

import pytest

from kbtools.cli.main import build_parser, main, subcommands
from kbtools.retrieval.embedders import EMBEDDER_NAMES
from kbtools.retrieval.index import INDEX_KINDS


def _sub(name):
    return subcommands()[name]


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("kb (kbtools) 0.")


def test_help_texts_have_no_docstring_indentation():
    for name, parser in subcommands().items():
        description = parser.description or ""
        assert description == inspect.cleandoc(description), f"kb {name} --help keeps docstring indentation"
        assert not description.splitlines()[1:2] or not description.splitlines()[1].startswith("    "), name


@pytest.mark.parametrize("command, flag, values", [
    ("query", "--index", INDEX_KINDS),
    ("embed", "--embedder", EMBEDDER_NAMES),
    ("export", "--format", ("jsonl", "parquet")),
])
def test_known_values_are_choices(command, flag, values, capsys):
    action = next(a for a in _sub(command)._actions if flag in a.option_strings)
    assert set(values) <= set(action.choices)
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([command, "bank", *(["q"] if command == "query" else []), flag, "nonsense"])
    assert info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err
