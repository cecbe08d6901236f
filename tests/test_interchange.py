"""Import and export in the pgvector shape, with line-numbered errors and nothing written on a bad row."""

from __future__ import annotations

import json

import polars as pl
import pytest

import kbtools as kb
from kbtools.ops.interchange import import_frames


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_roundtrip_jsonl_and_parquet(small_bank, tmp_path):
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"x-{fmt}"
        kb.export_bank(small_bank, out, format=fmt)
        target = kb.create_bank(tmp_path / f"copy-{fmt}")
        counts = kb.import_files(target, entries=out / f"entries.{fmt}", edges=out / f"entry_edges.{fmt}")
        assert counts["entries"] == 3 and counts["edges"] == 2
        cols = ["id", "kind", "title", "content", "systems"]
        assert target.entries.select(cols).sort("id").equals(small_bank.entries.select(cols).sort("id"))
        e_cols = ["src", "dst", "type", "source", "note"]
        assert target.edges.select(e_cols).sort("src").equals(small_bank.edges.select(e_cols).sort("src"))
        assert kb.check_bank(target) == []


def test_pgvector_shape_with_from_to_and_extra_columns(bank, tmp_path):
    ents = _jsonl(tmp_path / "e.jsonl", [
        {"id": "a1b2c3d4", "content": "Recipe: log in with Playwright.", "embedding": [0.1, 0.2], "systems": ["auth"]},
        {"id": "b2c3d4e5", "content": "The session POST needs --http1.1.", "metadata": {"split_from": "a1b2c3d4"}},
    ])
    edges = _jsonl(tmp_path / "ed.jsonl", [{"from": "b2c3d4e5", "to": "a1b2c3d4", "type": "clarifies", "source": "author", "note": "why the POST fails"}])
    kb.import_files(bank, entries=ents, edges=edges)
    assert bank.edges.select("src", "dst", "type").row(0) == ("b2c3d4e5", "a1b2c3d4", "clarifies")
    assert json.loads(bank.entries.filter(pl.col("id") == "b2c3d4e5")["metadata"][0]) == {"split_from": "a1b2c3d4"}


@pytest.mark.parametrize(
    "rows, words",
    [
        ([{"id": "a1b2c3d4", "content": "ok"}, {"id": "XYZ", "content": "bad id"}], ["row 2", "XYZ", "8 lowercase hex"]),
        ([{"id": "a1b2c3d4", "content": "ok"}, {"id": "a1b2c3d4", "content": "dup"}], ["a1b2c3d4", "unique"]),
        ([{"id": "a1b2c3d4", "content": "ok", "kind": "poem"}], ["row 1", "poem"]),
        ([{"id": "a1b2c3d4", "content": "ok", "systems": "ci"}], ["row 1", "systems", "list of strings"]),
        ([{"id": "a1b2c3d4", "content": "ok", "created_at": "yesterday"}], ["row 1", "ISO 8601"]),
        ([{"id": "a1b2c3d4"}], ["content"]),
    ],
)
def test_bad_entry_rows_are_named_and_nothing_is_written(bank, tmp_path, rows, words):
    path = _jsonl(tmp_path / "e.jsonl", rows)
    with pytest.raises(kb.KbError) as err:
        kb.import_files(bank, entries=path)
    for w in words:
        assert w in str(err.value)
    assert kb.open_bank(bank.path).version == 0


def test_bad_edge_row_is_named_with_its_line(bank, tmp_path):
    ents = _jsonl(tmp_path / "e.jsonl", [{"id": "a1b2c3d4", "content": "x"}, {"id": "b2c3d4e5", "content": "y"}])
    edges = _jsonl(tmp_path / "ed.jsonl", [
        {"from": "b2c3d4e5", "to": "a1b2c3d4", "type": "cites"},
        {"from": "b2c3d4e5", "to": "ffffffff", "type": "cites"},
    ])
    with pytest.raises(kb.EdgeRuleError, match=r"edges line 2: dst='ffffffff'"):
        kb.import_files(bank, entries=ents, edges=edges)
    assert kb.open_bank(bank.path).version == 0


def test_malformed_jsonl_line(bank, tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text('{"id": "a1b2c3d4", "content": "x"}\n{broken\n')
    with pytest.raises(kb.ValidationError, match="row 2"):
        kb.import_files(bank, entries=path)


def test_an_import_reports_the_progress_of_its_embedding(tmp_path):
    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char")
    rows = pl.DataFrame({"id": ["a1b2c3d4", "b2c3d4e5", "c3d4e5f6"],
                         "content": ["Refunds need a second approver.", "Exports need the vendor flag.", "Backups run at 2."]})
    seen = []
    import_frames(bank, entries=rows, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] > 0  # it ends at its total (from the text cache or not)
    assert bank.reload().entries.height == 3 and kb.query(bank, "backups", record_usage=False).results
    # an import of many rows takes what it embedded before from the text cache (a few rows of a
    # cheap embedder skip it): its end is reported all the same
    from kbtools.ops.embedding import CACHE_FROM_ROWS

    many = pl.DataFrame({"id": [f"{i:08x}" for i in range(CACHE_FROM_ROWS)],
                         "content": [f"Backup {i} of the ledger runs at {i % 24} h." for i in range(CACHE_FROM_ROWS)]})
    for name in ("first", "again"):
        seen.clear()
        import_frames(kb.create_bank(tmp_path / name, embedder="hashing-char"), entries=many,
                      progress=lambda done, total: seen.append((done, total)))
    assert seen == [(4 * CACHE_FROM_ROWS, 4 * CACHE_FROM_ROWS)]
