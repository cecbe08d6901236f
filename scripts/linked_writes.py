"""How long the default write takes on a bank as it is, and the query after it: ``kb.report_learning``
with the write-time linker (the default; ``--no-link`` without it), timed one call at a time in one
process after three warm-up writes, p50 and mean in ms; on an embedded bank also the first
``kb.query`` after each write and three steady queries after that one (p50). ``--more M`` then
writes M more entries (their mean and the segments the bank keeps printed) and times the N writes
again: what a bank written all day between compactions gives. ``--alternate`` follows each linked
write with an unlinked one, timed too, as ``kb bench --only linker`` does (the links' cost on the
verb is the difference of the p50s). Writes into the bank: run it on a copy.

    python scripts/linked_writes.py BANK [N] [--no-link] [--more M] [--alternate]
    cp -a banks/big /tmp/big && python scripts/linked_writes.py /tmp/big 30
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import kbtools as kb
from kbtools.store.segments import segment_files
from kbtools.store.vectors import vector_segments


def _ms(values) -> str:
    return f"{statistics.median(values) * 1e3:.1f}"


def _round(bank, n: int, link: bool, titles: list, start: int, alternate: bool = False) -> str:
    embedded = bool(bank.settings.get("embedder")) and not alternate
    took, after, steady, unlinked = [], [], [], []
    for i in range(start, start + n):
        t = time.perf_counter()
        kb.report_learning(bank, content=f"Pump {i} on line {i % 7} keeps faulting with error E-{i}; "
                                         "the encoder cable was loose.", actor="linked-writes", link=link)
        took.append(time.perf_counter() - t)
        if alternate:
            t = time.perf_counter()
            kb.report_learning(bank, content=f"Valve {i} on line {i % 5} sticks after error V-{i}.",
                               actor="linked-writes", link=False)
            unlinked.append(time.perf_counter() - t)
        if embedded:
            for j in range(4):
                t = time.perf_counter()
                kb.query(bank, titles[(4 * i + j) % len(titles)] or "pump", record_usage=False)
                (after if j == 0 else steady).append(time.perf_counter() - t)
    line = (f"{bank.entries.height} entries, {bank.edges.height} edges; {n} {'linked' if link else 'unlinked'} "
            f"writes: p50 {_ms(took)} ms, mean {statistics.mean(took) * 1e3:.1f} ms")
    if embedded:
        line += f"; the first kb.query after each: p50 {_ms(after)} ms (steady {_ms(steady)} ms)"
    if alternate:
        off = statistics.median(unlinked)
        line += (f"; each followed by an unlinked write: p50 {off * 1e3:.1f} ms; the links on the verb "
                 f"{(statistics.median(took) - off) * 1e3:.1f} ms")
    return line


def main(path: str, n: int, link: bool, more: int, alternate: bool = False) -> None:
    bank = kb.open_bank(path)
    titles = bank.entries["title"].head(400).to_list()
    for i in range(3):
        kb.report_learning(bank, content=f"Warm-up write {i}: pump {i} faulted on line {i}.", actor="linked-writes",
                           link=link)
    if bank.settings.get("embedder"):
        kb.query(bank, "warm up the query caches", record_usage=False)
    print(f"{path}: {_round(bank, n, link, titles, 0, alternate)}")
    if more:
        t = time.perf_counter()
        for i in range(more):
            kb.report_learning(bank, content=f"Later write {i}: valve {i} sticks on line {i % 5}.",
                               actor="linked-writes", link=link)
        mean = (time.perf_counter() - t) / more
        files = sum(len(names) for names in segment_files(bank).values())
        print(f"then {more} more writes: mean {mean * 1e3:.1f} ms; the bank keeps {len(vector_segments(bank))} "
              f"vector segments and {files} table segments")
        print(f"{path}: {_round(bank, n, link, titles, n)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bank")
    parser.add_argument("n", nargs="?", type=int, default=30, help="writes timed (each followed by queries)")
    parser.add_argument("--no-link", dest="link", action="store_false", help="write without the linker")
    parser.add_argument("--more", type=int, default=0, help="then write this many more and time again")
    parser.add_argument("--alternate", action="store_true",
                        help="follow each write with an unlinked one, timed too (as kb bench --only linker does)")
    args = parser.parse_args()
    main(args.bank, args.n, args.link, args.more, args.alternate)
