"""How long the default write takes on a bank as it is, and the query after it: ``kb.report_learning``
with the write-time linker (the default), timed one call at a time in one process after three
warm-up writes, p50 and mean in ms; on an embedded bank also the first ``kb.query`` after each
write and three steady queries after that one (p50). Writes into the bank: run it on a copy.

    python scripts/linked_writes.py BANK [N]
    cp -a banks/big /tmp/big && python scripts/linked_writes.py /tmp/big 30
"""
import os
import statistics
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import kbtools as kb


def _ms(values) -> str:
    return f"{statistics.median(values) * 1e3:.1f}"


def main(path: str, n: int) -> None:
    bank = kb.open_bank(path)
    embedded = bool(bank.settings.get("embedder"))
    titles = bank.entries["title"].head(4 * n).to_list()
    for i in range(3):
        kb.report_learning(bank, content=f"Warm-up write {i}: pump {i} faulted on line {i}.", actor="linked-writes")
    if embedded:
        kb.query(bank, "warm up the query caches", record_usage=False)
    took, after, steady = [], [], []
    for i in range(n):
        t = time.perf_counter()
        kb.report_learning(bank, content=f"Pump {i} on line {i % 7} keeps faulting with error E-{i}; "
                                         "the encoder cable was loose.", actor="linked-writes")
        took.append(time.perf_counter() - t)
        if embedded:
            for j in range(4):
                t = time.perf_counter()
                kb.query(bank, titles[4 * i + j] or "pump", record_usage=False)
                (after if j == 0 else steady).append(time.perf_counter() - t)
    line = (f"{path}: {bank.entries.height} entries, {bank.edges.height} edges; {n} linked writes: "
            f"p50 {_ms(took)} ms, mean {statistics.mean(took) * 1e3:.1f} ms")
    if embedded:
        line += f"; the first kb.query after each: p50 {_ms(after)} ms (steady {_ms(steady)} ms)"
    print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
