"""What a pause costs the next query: ``kb.query`` (the vector given, folded, usage counted) asked in
one process in rounds of four, each a new title: right after another query, after a 7 ms sleep,
after 7 ms of busy waiting and after one ``kb.report_learning(link=False)``; p50 of each in ms. Tells
how much of what an add costs the query after it is the add's own work and how much is any pause
(CPU caches cooling while the process waits). Writes into the bank: run it on a copy.

    python scripts/pause_cost.py BANK [ROUNDS]
    cp -a /tmp/kb-bench/serve100000 /tmp/copy && python scripts/pause_cost.py /tmp/copy 60
"""
import os
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import numpy as np

import kbtools as kb
from kbtools.retrieval.search import bank_embedder


def main(path: str, rounds: int = 60) -> None:
    bank = kb.open_bank(path)
    emb = bank_embedder(bank)
    titles = bank.entries["title"].to_list()
    drawn = np.random.default_rng(9).choice(len(titles), min(len(titles), 4 * rounds + 5), replace=False)
    queries = np.asarray(emb.encode([titles[i] for i in drawn]), np.float32)

    def ask(i: int) -> float:
        t = time.perf_counter()
        kb.query(bank, "pause cost", query_vector=queries[i % len(queries)], k=8)
        return time.perf_counter() - t

    for i in range(5):
        ask(i)

    def busy(j: int) -> None:
        end = time.perf_counter() + 0.007
        while time.perf_counter() < end:
            pass

    pauses = {
        "after a query": lambda j: None,
        "after a 7 ms sleep": lambda j: time.sleep(0.007),
        "after 7 ms busy": busy,
        "after an add": lambda j: kb.report_learning(bank, content=f"Pause cost fact {j}: the pool drains at {j} am.",
                                                     actor="pause-cost", link=False),
    }
    times = {name: [] for name in pauses}
    i = 5
    for j in range(rounds):
        for name, pause in pauses.items():
            pause(j)
            times[name].append(ask(i))
            i += 1
    for name, got in times.items():
        print(f"{name:20s} p50 {1000 * float(np.median(got)):.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 60)
