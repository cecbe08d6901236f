"""The link lane: a big connect's common automatic links kept as arrays and made by a compiled loop
(``kernels._lane``), not as the state's dictionaries one Python statement at a time.

A whole-bank connect at 100k plans about 450,000 automatic links, 70,000 of them at a full degree
cap (the weakest link evicted, or the new one refused). Made by ``state.LinkState`` one by one, each
link is a dictionary, two set entries and four counters: about 7 of the linking process's 14
core-seconds, and 0.8 s more to free them at the end. The lane makes the same decisions over
arrays: per row its live links in a list (``head``, ``nxt``), its automatic links counted
(``deg``), a link's strength its score (a link planned now has not faded), the weakest at a full
row the least of its list by (weight, source, target, type), as the state's heap orders its keys.

It links a chunk's rows in order while they are **pure**: never linked, not superseded, no
structural links of their own (``planning`` tells), no candidate joined to them by an input edge
(those are not tried), and no end whose links from before the plan could reach its cap (the
state would load and weigh them). At the first row that is not, the lane hands its links to the
state as records (``materialize``) and the state links the rest of the plan: the plan is the one
the state alone makes, link for link, evidence text included (``tests/test_linker_lane.py``).
A plan the lane made to its end is read from its arrays (``flush``).

>>> import numpy as np
>>> lane = LinkLane(n=3, capacity=4, input_degree=np.zeros(3, np.int64), superseded=np.zeros(3, bool), cap=12,
...                 max_new=5)
>>> lane.live()
0
"""

from __future__ import annotations

import numpy as np

import kbtools.linker.kernels as kernels
from kbtools.linker.state import TEXT_VALUES, type_of_key
from kbtools.linker.wording import evidence_texts
from kbtools.model.vocab import EDGE_TYPES

__all__ = ["LinkLane", "TYPE_NAMES"]

#: The link types in the order of their names: a code compares as its name does (the state's keys)
TYPE_NAMES = tuple(sorted(EDGE_TYPES))
_TYPE_CODE = {name: code for code, name in enumerate(TYPE_NAMES)}
_TEXT_BATCH = 4096  #: links whose evidence text is written at once while the connect waits


class LinkLane:
    """The automatic links a connect planned through the lane, as arrays over links (in the order
    they were made, live or evicted since) and over rows."""

    def __init__(self, n: int, capacity: int, input_degree: np.ndarray, superseded: np.ndarray, cap: int, max_new: int):
        """``n`` rows; at most ``capacity`` links; ``input_degree``: each row's automatic links
        before the plan; ``superseded``: the rows superseded before the plan."""
        self.cap, self.max_new = int(cap), int(max_new)
        self.input_degree = np.ascontiguousarray(input_degree, np.int64)
        self.superseded = np.ascontiguousarray(superseded, bool)
        self.degree = np.zeros(n, np.int64)
        self.head = np.full(n, -1, np.int64)
        self.nxt = np.full(2 * capacity, -1, np.int64)
        self.src, self.dst, self.m = (np.zeros(capacity, np.int64) for _ in range(3))
        self.typ, self.place = np.zeros(capacity, np.int64), np.zeros(capacity, np.int64)
        self.chunk = np.zeros(capacity, np.int32)
        self.weight = np.zeros(capacity)
        self.alive = np.zeros(capacity, np.uint8)
        #: links made, links, evicted, refused at a full cap, rows whose index list fell back to the exact scan
        self.counts = np.zeros(5, np.int64)
        self.choices: list = []  #: per chunk the lane linked in: its ``state.LinkChoice``
        self.texts: dict[int, str] = {}  #: link -> its evidence text, once written
        self._written = 0  #: links before this one had their text written (or were evicted first)

    def live(self) -> int:
        """How many of the lane's links are still planned."""
        return int(self.alive[: self.counts[0]].sum())

    def link(self, rows: np.ndarray, choice, pure: np.ndarray) -> int:
        """Link the chunk's ``rows`` (with their ``choice``, ``state.LinkChoice``) in order while they
        are ``pure``; returns how many it linked (all, or up to the first the state must link)."""
        a = choice.arrays
        keys, at = np.unique(a["type_key"], return_inverse=True)
        kinds = [type_of_key(int(k)) for k in keys.tolist()]
        typ = np.array([_TYPE_CODE.get(name, -1) for name, _ in kinds], np.int64)[at]
        m_is_src = np.array([is_src for _, is_src in kinds], bool)[at]
        self.choices.append(choice)
        return int(kernels.lane_rows(
            np.asarray(rows, np.int64), np.asarray(pure, bool), a["bounds"], a["c"], a["base"], a["score"], typ,
            m_is_src, choice.exact, len(self.choices) - 1, self.superseded, self.input_degree, self.degree, self.head,
            self.nxt, self.src, self.dst, self.typ, self.weight, self.alive, self.m, self.place, self.chunk,
            self.counts, self.cap, self.max_new))

    def write_texts(self, stats, rel, most: int | None = _TEXT_BATCH) -> bool:
        """Write the evidence text of up to ``most`` (None: all) more of its links still planned,
        at once (``wording.evidence_texts``, the state's batches' text); whether some are left."""
        made = int(self.counts[0])
        stop = made if most is None else min(self._written + most, made)
        links = self._written + np.flatnonzero(self.alive[self._written : stop])
        self._written = stop
        if links.size:
            m, c, values = self._text_inputs(links)
            self.texts.update(zip(links.tolist(), evidence_texts(stats, rel, m, c, values, None)))
        return stop < made

    def _text_inputs(self, links: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """The entries, candidates and evidence values (``TEXT_VALUES``) of these links, gathered
        per chunk (a chunk's links were made one after another)."""
        m = self.m[links]
        c = self.src[links] + self.dst[links] - m
        values = {k: np.empty(links.size) for k in TEXT_VALUES}
        chunk = self.chunk[links]
        starts = np.flatnonzero(np.concatenate([[True], chunk[1:] != chunk[:-1]]))
        for lo, hi in zip(starts.tolist(), [*starts[1:].tolist(), links.size]):
            held = self.choices[int(chunk[lo])].text_values
            at = self.place[links[lo:hi]]
            for k in TEXT_VALUES:
                values[k][lo:hi] = held[k][at]
        return m, c, values

    def materialize(self, state) -> None:
        """Hand the lane's links to the state (``state.LinkState``) as the records its own links would
        have made (``_new``, ``add``), in the order they were made; the state links from here."""
        made = int(self.counts[0])
        links = np.flatnonzero(self.alive[:made])
        for link, src, dst, typ, weight, m, chunk, p in zip(
                links.tolist(), self.src[links].tolist(), self.dst[links].tolist(), self.typ[links].tolist(),
                self.weight[links].tolist(), self.m[links].tolist(), self.chunk[links].tolist(),
                self.place[links].tolist()):
            rec = state._new(src, dst, TYPE_NAMES[typ], "auto", weight, None)
            state.add(rec, 0)  # no input edge joins a pair the lane linked
            text = self.texts.get(link)
            if text is None:
                rec["words"] = (m, src + dst - m, self.choices[chunk], p, None)
                state._unwritten.append(rec)
            else:
                rec["evidence"] = text
                state.planned.write(rec["at"], text)
        self._count_into(state)

    def flush(self, state) -> None:
        """The lane's links still planned into the state's plan columns (``planned.PlannedColumns``),
        their texts written: the plan of a connect the lane linked to its end."""
        self.write_texts(state.st, state.ctx.rel, None)
        links = np.flatnonzero(self.alive[: int(self.counts[0])])
        state.planned.extend_auto(self.src[links].tolist(), self.dst[links].tolist(),
                                  np.array(TYPE_NAMES, dtype=object)[self.typ[links]].tolist(),
                                  self.weight[links].tolist(), [self.texts[k] for k in links.tolist()])
        self._count_into(state)

    def _count_into(self, state) -> None:
        for name, value in zip(("links", "evicted", "capped", "nn_exact"), self.counts[1:].tolist()):
            state.counts[name] += value
