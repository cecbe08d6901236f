"""Writer processes for the durability tests (run as real child processes)."""

from __future__ import annotations

import os
import time


def write_loop(path: str, tag: str, conn, n: int, compact_every: int = 0, delay: float = 0.0) -> None:
    """Write ``n`` entries (each linked to the previous one by ``see_also`` in the same transaction),
    acknowledging each id on ``conn`` only after the write returned."""
    import kbtools as kb

    bank = kb.open_bank(path)
    conn.send(("ready", None, None))
    prev = None
    for i in range(n):
        conns = [{"id": prev, "relation": "see_also", "note": f"{tag} chain"}] if prev else []
        eid = kb.report_learning(bank, content=f"Fact {tag}-{i} about the build cache.", actor=f"writer-{tag}",
                                 connections=conns, link=False)
        conn.send(("entry", eid, prev))
        prev = eid
        if compact_every and i % compact_every == compact_every - 1:
            bank.compact()
            conn.send(("compact", None, None))
        if delay:
            time.sleep(delay)
    conn.send(("done", None, None))


def hold_lock(path: str, seconds: float, conn) -> None:
    """Take the bank's lock inside a write and keep it for ``seconds``."""
    import kbtools as kb

    bank = kb.open_bank(path)

    def plan(b):
        conn.send(("locked", os.getpid(), None))
        time.sleep(seconds)
        return None

    bank.apply(plan, actor="slow-job")
