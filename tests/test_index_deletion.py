"""Deleting or superseding entries removes them from the query index in place (a mask of live rows
filtered at search time), and past MAX_DEAD_SHARE of dead rows the index is rebuilt."""

from __future__ import annotations

import numpy as np
import pytest

from kbtools.errors import ValidationError
from kbtools.retrieval.index import INDEX_KINDS, MAX_DEAD_SHARE, VectorIndex, recall_at_k
from kbtools.store.vectors import entry_vectors


def _unit(n, d=32, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf_sq8"])
def test_removed_rows_never_come_back_and_the_rest_match_a_fresh_index(kind):
    v = _unit(3000)
    ids = [f"e{i:04d}" for i in range(3000)]
    index = VectorIndex.build(ids, v, kind=kind)
    gone = ids[::7]
    index.remove(gone)
    assert index.size == 3000 - len(gone) and index.dead_share == pytest.approx(len(gone) / 3000)
    found = index.search(v[:100], 10)[1]
    assert not np.isin(found, gone).any()
    keep = [i for i in range(3000) if i % 7]
    fresh = VectorIndex.build([ids[i] for i in keep], v[keep], kind="flat").search(v[:100], 10)[1]
    assert recall_at_k(found, fresh) > (0.99 if kind != "ivf_sq8" else 0.8)
    if kind == "flat":
        assert (found == fresh).all()


def test_remove_refuses_unknown_ids_and_a_removed_id_can_come_back():
    v = _unit(10, d=8)
    index = VectorIndex.build([f"e{i}" for i in range(10)], v)
    with pytest.raises(ValidationError, match="not a live id"):
        index.remove(["e1", "nope"])
    assert index.size == 10  # nothing marked
    index.remove(["e1"])
    with pytest.raises(ValidationError, match="not a live id"):
        index.remove(["e1"])
    assert index.search(v[1:2], 1)[1][0, 0] != "e1"
    index.add(["e1"], v[1:2])
    assert index.search(v[1:2], 1)[1][0, 0] == "e1" and index.size == 10 and index.n_dead == 1
    with pytest.raises(ValidationError, match="already in the index"):
        index.add(["e1"], v[1:2])
    assert set(INDEX_KINDS) >= {"flat", "hnsw"}


def _bank(tmp_path, n=300):
    import kbtools as kb

    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=None)
    kb.ops.import_frames(bank, entries=kb.demo.synthetic_bank(entries=n, seed=3).entries, actor="t", guard=False)
    kb.embed_bank(bank, embedder="hashing")
    return bank


def test_a_deletion_and_a_supersession_keep_the_same_index_object(tmp_path):
    import kbtools as kb
    from kbtools.retrieval.index import combine
    from kbtools.retrieval.search import bank_index

    bank = _bank(tmp_path)
    index = bank_index(bank)
    vids, data = entry_vectors(bank)
    ids = bank.entries["id"].to_list()
    victim, replaced = ids[5], ids[9]
    queries = combine(np.asarray(data[[list(vids).index(victim), list(vids).index(replaced)]], np.float32))
    assert victim in index.search(queries[:1], 3)[1][0] and replaced in index.search(queries[1:], 3)[1][0]
    kb.delete_entry(bank, victim, reason="test", actor="t")
    after = bank_index(bank)
    assert after is index and after.n_dead == 1 and after.size == len(ids) - 1
    assert victim not in after.search(queries, 50)[1]
    kb.update_entry(bank, replaced, status="superseded", actor="t", reason="test")
    again = bank_index(bank)
    assert again is index and again.n_dead == 2
    assert replaced not in again.search(queries, 50)[1]
    kb.update_entry(bank, replaced, status="active", actor="t", reason="test")  # back: a new live row
    back = bank_index(bank)
    assert back is index and back.n_dead == 2 and replaced in back.search(queries[1:], 3)[1][0]


def test_dead_rows_past_the_share_rebuild_the_index(tmp_path):
    import kbtools as kb
    from kbtools.retrieval.search import bank_index

    bank = _bank(tmp_path, n=100)
    index = bank_index(bank)
    ids = bank.entries["id"].to_list()
    total = len(ids)
    allowed = int(MAX_DEAD_SHARE * total)
    for i in range(allowed):
        kb.delete_entry(bank, ids[i], reason="test", actor="t")
    assert bank_index(bank) is index and index.n_dead == allowed
    kb.delete_entry(bank, ids[allowed], reason="test", actor="t")
    rebuilt = bank_index(bank)
    assert rebuilt is not index and rebuilt.n_dead == 0 and rebuilt.size == total - allowed - 1
