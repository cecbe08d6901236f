"""How long the default write takes on a bank as it is: ``kb.report_learning`` with the write-time
linker (the default), timed one call at a time in one process after three warm-up writes, p50 and
mean in ms. Writes into the bank: run it on a copy.

    python scripts/linked_writes.py BANK [N]
    cp -a banks/big /tmp/big && python scripts/linked_writes.py /tmp/big 30
"""
import os
import statistics
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import kbtools as kb


def main(path: str, n: int) -> None:
    bank = kb.open_bank(path)
    for i in range(3):
        kb.report_learning(bank, content=f"Warm-up write {i}: pump {i} faulted on line {i}.", actor="linked-writes")
    took = []
    for i in range(n):
        t = time.perf_counter()
        kb.report_learning(bank, content=f"Pump {i} on line {i % 7} keeps faulting with error E-{i}; "
                                         "the encoder cable was loose.", actor="linked-writes")
        took.append(time.perf_counter() - t)
    print(f"{path}: {bank.entries.height} entries, {bank.edges.height} edges; {n} linked writes: "
          f"p50 {statistics.median(took) * 1e3:.1f} ms, mean {statistics.mean(took) * 1e3:.1f} ms")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
