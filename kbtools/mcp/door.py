"""The bank behind the agents' door: what each MCP tool does, as plain Python over one bank.

Every method returns ``(text, data)``: the text an agent reads and the same answer as JSON-ready
data. Errors are the ``KbError`` the public API raises (the server turns them into tool errors).
Reads run on their own snapshot and never take the writers' lock; every write goes through the
public write functions (one transaction each, audited with the actor). No MCP SDK here, so the
door is usable and testable without the ``mcp`` extra.

>>> import kbtools as kb, tempfile, pathlib
>>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
>>> door = Door(bank.path, actor="agent-7")
>>> text, data = door.report_learning(content="The staging CDN drops cookies without the Secure flag.")
>>> text.startswith("Stored ") and data["links"] == []
True
>>> door.get_entry(data["id"])[1]["entry"]["content"]
'The staging CDN drops cookies without the Secure flag.'
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Sequence

import polars as pl

import kbtools as kb
from kbtools.model.events import fate_of, fate_text
from kbtools.store.vectors import entry_vectors

__all__ = ["Door", "READ_TOOLS", "WRITE_TOOLS", "ReadOnlyBank"]

#: the tools a ``--readonly`` server exposes
READ_TOOLS = ("query_knowledge_bank", "recall", "get_entry", "related", "trace", "explain")
#: the tools that write (left out by ``--readonly``)
WRITE_TOOLS = ("report_learning", "link_kb_entries", "unlink_kb_entries")

#: events shown by get_entry, newest first
RECENT_EVENTS = 10


class ReadOnlyBank(kb.KbError):
    """A read-only door was asked for something that would write."""

    def __init__(self, path, what: str):
        super().__init__(f"bank {path}: {what}; a --readonly server writes nothing "
                         f"(run `kb embed {path}` first, or serve without --readonly)")


def _jsonable(value: Any) -> Any:
    """Plain JSON types only (datetimes as ISO text, frames as rows)."""
    return json.loads(json.dumps(value, default=lambda o: o.isoformat() if hasattr(o, "isoformat") else str(o)))


class Door:
    """One bank served to agents: a reading snapshot and a writing snapshot, each behind its own
    in-process mutex (tool calls may arrive on several threads), and the actor writes are
    recorded under.

    ``actor`` names the writer in every event; a tool call may pass its own (the client's name)
    when the server was not given one. ``readonly`` refuses every write, usage counting included.
    """

    def __init__(self, path: str | Path, *, actor: str | None = None, readonly: bool = False):
        self.path = Path(path)
        self.actor = actor
        self.readonly = readonly
        self._reader = kb.open_bank(self.path, readonly=readonly)
        self._writer = None if readonly else kb.open_bank(self.path)
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------

    def _read(self):
        """The reading snapshot moved to the newest version (call under ``_read_lock``)."""
        return self._reader.reload()

    def _who(self, actor: str | None) -> str:
        return self.actor or actor or "mcp-agent"

    def _writes(self):
        if self._writer is None:
            raise ReadOnlyBank(self.path, "this tool writes")
        return self._writer

    def _ready_to_query(self, bank) -> None:
        # ranked_pool embeds entries that lack vectors: a write a read-only door must not do
        if self.readonly and bank.entries.height and len(entry_vectors(bank)[0]) < bank.entries.height:
            missing = bank.entries.height - len(entry_vectors(bank)[0])
            raise ReadOnlyBank(self.path, f"{missing} entries have no vectors yet and embedding them writes")

    # -- reading tools ---------------------------------------------------------------------

    def query(self, query: str, *, k: int = 8, fold: bool = True) -> tuple[str, dict]:
        """``kb.query``: the folded answer; usage is counted unless the door is read-only."""
        with self._read_lock:
            bank = self._read()
            self._ready_to_query(bank)
            ans = kb.query(bank, query, k=k, fold=fold, record_usage=not self.readonly)
        return ans.text(), _jsonable(ans.to_dict())

    def recall(self, query: str, *, links: int = 3, k: int = 8) -> tuple[str, dict]:
        """``kb.recall``: the answer, what the links bring in, and how these entries connect."""
        with self._read_lock:
            bank = self._read()
            self._ready_to_query(bank)
            ans = kb.recall(bank, query, links=links, k=k, record_usage=not self.readonly)
        return ans.text(), _jsonable(ans.to_dict())

    def get_entry(self, entry_id: str) -> tuple[str, dict]:
        """The entry whole, its edges both ways and its most recent events. An id merged into another
        entry (``kb judge``, ``merge_entries``) answers with the entry it lives on in, saying so; a
        deleted one is an error that says when, by whom and why."""
        fate = None
        with self._read_lock:
            bank = self._read()
            row = bank.entries.filter(pl.col("id") == entry_id)
            if row.height == 0:
                fate = fate_of(bank.events, entry_id)
                if fate is None or fate["id"] is None:
                    raise kb.EntryNotFound(entry_id, "get_entry") if fate is None else _deleted(entry_id, fate)
                row = bank.entries.filter(pl.col("id") == fate["id"])
                if row.height == 0:  # its last entry is gone another way (a repair): not found
                    raise kb.EntryNotFound(entry_id, "get_entry")
                entry_id = fate["id"]
            entry = _jsonable(row.row(0, named=True))
            edges = bank.edges.filter((pl.col("src") == entry_id) | (pl.col("dst") == entry_id))
            titles = dict(bank.entries.select("id", "title").iter_rows())
            events = (bank.events.filter((pl.col("src") == entry_id) | (pl.col("dst") == entry_id))
                      .sort("at", descending=True).head(RECENT_EVENTS))
        edge_rows = _jsonable(edges.select("src", "type", "dst", "source", "note", "weight", "created_by", "created_at").to_dicts())
        event_rows = _jsonable(events.to_dicts())
        data = {"entry": entry, "edges": edge_rows, "events": event_rows}
        text = _entry_text(entry, edge_rows, event_rows, titles)
        if fate is not None:
            data["merged"] = _jsonable(fate)
            text = f"{fate_text(fate)}\n{text}"
        return text, data

    def related(self, entry_id: str, *, depth: int = 1, limit: int = 10) -> tuple[str, dict]:
        """``kb.related``: what is connected to an entry, best first, with the chain of links."""
        with self._read_lock:
            frame = kb.related(self._read(), entry_id, depth=depth, limit=limit)
        rows = _jsonable(frame.to_dicts())
        lines = [f"Related to {entry_id} (depth {depth}):"] if rows else [f"Nothing is linked to {entry_id} within {depth} hop(s)."]
        for r in rows:
            lines.append(f"  {r.get('title') or r['id']} [{r['id']}] score {r.get('score', 0):.3f}"
                         + (f" via {_path_text(r.get('path'))}" if r.get("path") else ""))
        return "\n".join(lines), {"id": entry_id, "related": rows}

    def trace(self, a: str, b: str, *, max_depth: int = 4) -> tuple[str, dict]:
        """``kb.trace``: the shortest chain of links between two entries (either direction)."""
        with self._read_lock:
            frame = kb.trace(self._read(), a, b, max_depth=max_depth)
        rows = _jsonable(frame.to_dicts())
        if not rows:
            return f"No chain of at most {max_depth} links joins {a} and {b}.", {"a": a, "b": b, "chain": []}
        lines = [f"{len(rows)} link(s) from {a} to {b}:"]
        lines += [f"  {_hop_text(r)}" for r in rows]
        return "\n".join(lines), {"a": a, "b": b, "chain": rows}

    def explain(self, a: str, b: str) -> tuple[str, dict]:
        """``kb.explain``: why the linker would (or would not) link ``a`` to ``b``, signal by signal."""
        with self._read_lock:
            score = kb.explain(self._read(), a, b)
        data = _jsonable({"a": a, "b": b, "score": score.score, "linked": score.linked, "type": score.type,
                          "why": score.why, "signals": score.signals, "existing": list(score.existing)})
        verdict = f"would link {a} {score.type} {b}" if score.linked else "would not link them"
        text = (f"The linker {verdict} (score {score.score:.3f}). {score.why}\n"
                f"  signals: " + ", ".join(f"{k} {float(v):.3f}" for k, v in score.signals.items())
                + (f"\n  already joined by: {', '.join(score.existing)}" if score.existing else ""))
        return text, data

    def stats(self) -> tuple[str, dict]:
        """``kb.bank_stats`` of the newest version."""
        with self._read_lock:
            stats = kb.bank_stats(self._read())
        return json.dumps(_jsonable(stats), indent=1), _jsonable(stats)

    # -- writing tools ---------------------------------------------------------------------

    def report_learning(self, *, content: str, title: str | None = None, summary: str | None = None,
                        kind: str = "knowledge", useful_for: str = "", systems: Sequence[str] = (),
                        tasks: Sequence[str] = (), steps: Sequence[str] = (),
                        connections: Sequence[dict] = (), actor: str | None = None) -> tuple[str, dict]:
        """``kb.report_learning`` (guard, connections, write-time linker): the new id and every
        link it now has (the agent's connections and the linker's proposals)."""
        who = self._who(actor)
        with self._write_lock:
            bank = self._writes()
            new = kb.report_learning(bank, content=content, actor=who, title=title, summary=summary, kind=kind,
                                     useful_for=useful_for or "", systems=list(systems), tasks=list(tasks),
                                     steps=list(steps), connections=[dict(c) for c in connections])
            links = bank.reload().edges.filter((pl.col("src") == new) | (pl.col("dst") == new))
            links = _jsonable(links.select("src", "type", "dst", "source", "note").to_dicts())
        with self._read_lock:  # the reading snapshot grows by the new entry now, not at the next query
            kb.retrieval.keep_current(self._read())
        lines = [f"Stored {new} (actor {who})."]
        lines += ([f"{len(links)} link(s):"] + [f"  {_hop_text(r)}" for r in links]) if links else ["No links."]
        return "\n".join(lines), {"id": new, "actor": who, "links": links}

    def link(self, src: str, dst: str, type: str, *, note: str | None = None, actor: str | None = None) -> tuple[str, dict]:
        """``kb.link``: one trusted edge ``src <type> dst``, written by the agent (source author)."""
        who = self._who(actor)
        with self._write_lock:
            kb.link(self._writes(), src, dst, type, note=note, actor=who)
        edge = {"src": src, "type": type, "dst": dst, "source": "author", "note": note}
        return f"Linked {_hop_text(edge)} (actor {who}).", {"linked": edge, "actor": who}

    def unlink(self, src: str, dst: str, type: str, *, reason: str, actor: str | None = None) -> tuple[str, dict]:
        """``kb.unlink``: remove one edge; the reason is kept in the event."""
        who = self._who(actor)
        with self._write_lock:
            kb.unlink(self._writes(), src, dst, type, reason=reason, actor=who)
        edge = {"src": src, "type": type, "dst": dst}
        return f"Unlinked {src} {type} {dst} (actor {who}; reason: {reason}).", {"unlinked": edge, "reason": reason, "actor": who}


# -- rendering -------------------------------------------------------------------------------


def _path_text(path) -> str:
    if isinstance(path, list):
        return " → ".join(str(p) for p in path)
    return str(path)


def _hop_text(r: dict) -> str:
    note = f" — {r['note']}" if r.get("note") else ""
    source = f" ({r['source']})" if r.get("source") else ""
    return f"{r.get('src')} {r.get('type')} {r.get('dst')}{source}{note}"


def _deleted(entry_id: str, fate: dict) -> kb.EntryNotFound:
    err = kb.EntryNotFound(entry_id, "get_entry")
    err.args = (f"{err.args[0]}: {fate_text(fate)}",)
    return err


def _entry_text(entry: dict, edges: list[dict], events: list[dict], titles: dict) -> str:
    eid = entry["id"]
    lines = [f"{entry.get('title') or eid} [{eid}] ({entry.get('kind')}, {entry.get('status')})"]
    if entry.get("summary"):
        lines.append(f"Summary: {entry['summary']}")
    if entry.get("useful_for"):
        lines.append(f"Useful for: {entry['useful_for']}")
    for col in ("systems", "tasks"):
        if entry.get(col):
            lines.append(f"{col.capitalize()}: {', '.join(entry[col])}")
    if entry.get("steps"):
        lines.append("Steps:")
        lines += [f"  {i}. {s}" for i, s in enumerate(entry["steps"], 1)]
    lines += ["", entry.get("content") or "", ""]
    lines.append(f"Edges ({len(edges)}):" if edges else "Edges: none")
    for e in edges:
        out = e["src"] == eid
        other = e["dst"] if out else e["src"]
        arrow = f"→ {e['type']}" if out else f"← {e['type']} (from)"
        note = f" — {e['note']}" if e.get("note") else ""
        lines.append(f"  {arrow} {titles.get(other) or other} [{other}] ({e['source']}){note}")
    lines.append(f"Recent events ({len(events)}):" if events else "Recent events: none")
    for ev in events:
        target = f" {ev.get('src') or ''}" + (f" {ev['type']} {ev['dst']}" if ev.get("dst") else "")
        why = f" — {ev['reason']}" if ev.get("reason") else ""
        lines.append(f"  {ev['at']} {ev['actor']} {ev['action']}{target}{why}")
    return "\n".join(lines)
