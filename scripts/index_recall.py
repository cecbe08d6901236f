"""Which index ``--index auto`` should pick: recall@8 against an exact scan and the p50 of one
search, for each index kind named, on a bank as it is (reads the bank; builds a missing index file
into its cache as ``kb.query`` would). Queries: the titles of 100 entries drawn with a fixed seed,
embedded with the bank's embedder, as ``kb.query`` embeds a text.

    python scripts/index_recall.py BANK KIND [KIND ...]
    python scripts/index_recall.py /tmp/b100k hnsw ivf_sq8

Prints one line per kind: the build or open time (a cached index file opens in well under a second),
recall@8 and the search p50 in ms (one thread, the vector given).
"""
import os
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np
import polars as pl

from kbtools.evaluate.scale import exact_top
from kbtools.retrieval.search import bank_embedder, bank_index
from kbtools.store.bank import open_bank


def main(path: str, kinds: list[str]) -> None:
    bank = open_bank(path, readonly=True)
    titles = bank.entries["title"].to_list()
    picked = np.random.default_rng(8).choice(len(titles), size=min(100, len(titles)), replace=False)
    queries = np.asarray(bank_embedder(bank).encode([titles[i] for i in picked]), dtype=np.float32)
    active = bank.entries.filter(pl.col("status") == "active")["id"]
    truth = [set(row) for row in exact_top(bank, queries, ids=active)]
    print(f"{path}: {bank.entries.height} entries, {len(queries)} title queries", flush=True)
    for kind in kinds:
        t = time.perf_counter()
        index = bank_index(bank, kind=kind)
        opened = time.perf_counter() - t
        for q in queries[:10]:
            index.search(q[None, :], 8, threads=1)
        took, found = [], []
        for q in queries:
            t = time.perf_counter()
            found.append(index.search(q[None, :], 8, threads=1)[1][0])
            took.append((time.perf_counter() - t) * 1000)
        recall = np.mean([len(set(f) & tr) / 8 for f, tr in zip(found, truth)])
        print(f"{kind}: build/open {opened:.1f} s, recall@8 {recall:.3f}, search p50 {np.median(took):.2f} ms", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
