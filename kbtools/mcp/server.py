"""The agents' door: a Model Context Protocol server over one bank (``kb mcp PATH``).

Tools (each with a JSON schema and a description an agent can act on): ``query_knowledge_bank``,
``recall``, ``get_entry``, ``related``, ``trace``, ``explain`` (reading) and ``report_learning``,
``link_kb_entries``, ``unlink_kb_entries`` (writing; left out by ``readonly``). Resources:
``kb://entry/{id}`` and ``kb://stats``. A ``KbError`` comes back as a tool error carrying its text
(``is_error``), and the server keeps serving.

Needs the ``mcp`` extra (``pip install -e '.[mcp]'``). The SDK is always imported absolutely
(``mcp.server...``): this package, ``kbtools.mcp``, never shadows it.

>>> server = build_server("data/demo/engineering", readonly=True)  # doctest: +SKIP
>>> sorted(t.name for t in server._tool_manager.list_tools())  # doctest: +SKIP
['explain', 'get_entry', 'query_knowledge_bank', 'recall', 'related', 'trace']
"""

from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import BaseModel, Field

import kbtools as kb
from kbtools.mcp.door import READ_TOOLS, WRITE_TOOLS, Door
from kbtools.mcp.http import serve_http

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
except ImportError as err:  # pragma: no cover - depends on the install
    raise ImportError(f"kb mcp needs the mcp extra: pip install -e '.[mcp]' ({err})") from err

__all__ = ["build_server", "serve", "Connection", "READ_TOOLS", "WRITE_TOOLS", "INSTRUCTIONS"]

INSTRUCTIONS = (
    "A knowledge bank that agents share. Before a task, ask it (query_knowledge_bank; recall to see how the "
    "answers connect); read an entry whole with get_entry. When you learn something durable (a gotcha, a fix, "
    "a procedure), store it with report_learning and connect it to the entries it corrects, clarifies or builds "
    "on: a connection reads `new <relation> other`, with a note saying how the other entry pertains. Link or "
    "unlink existing entries with link_kb_entries / unlink_kb_entries (unlinking needs a reason). Entry ids are "
    "8 hex characters, as shown in [brackets] in answers."
)

_RELATIONS = ("corrects, supersedes, clarifies (the new entry wins); part_of, split_from, derived_from (the "
              "other is the parent); cites, see_also, conflicts_with, refines, resolves, informs, learned_from, "
              "applies_to, follows, serves, advances, concerns; precedes, requires, produces, owned_by (process)")

Id = Annotated[str, Field(description="an entry id: 8 hex characters, as shown in [brackets] in answers")]


class Connection(BaseModel):
    """One connection of a new learning: it reads ``new <relation> id``."""

    id: Id
    relation: str = Field(description=f"the edge type, read `new <relation> id`: {_RELATIONS}")
    note: str | None = Field(None, description="how the other entry pertains (how, never what it says)")


def _answer(text: str, data: dict) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _client_name(ctx: Context | None) -> str | None:
    """The connected client's name (from its initialize request), the actor when none was given."""
    try:
        info = ctx.session.client_params.client_info
        return f"mcp:{info.name}" if info and info.name else None
    except Exception:  # no session info (e.g. a stateless request)
        return None


def _call(fn: Callable[..., tuple[str, dict]], *args, **kwargs) -> CallToolResult:
    """Run a door call: its (text, data) as the tool result, a KbError as a tool error with its text."""
    try:
        return _answer(*fn(*args, **kwargs))
    except kb.KbError as err:
        raise ToolError(f"{type(err).__name__}: {_message(err)}") from err


def _message(err: Exception) -> str:
    # KeyError subclasses (EntryNotFound, EdgeNotFound) quote their str(); the agent reads the text
    return err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else str(err)


def build_server(path: str | Path, *, readonly: bool = False, actor: str | None = None, name: str = "kbtools") -> MCPServer:
    """The MCP server over the bank at ``path``: reading tools always, writing tools unless ``readonly``.

    ``actor`` names the writer of every event; without it each call uses the client's name
    (``mcp:<client>``), else ``mcp-agent``.
    """
    door = Door(path, actor=actor, readonly=readonly)
    server = MCPServer(name, instructions=INSTRUCTIONS, version=kb.__version__, log_level="WARNING")
    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read)
    def query_knowledge_bank(
        query: Annotated[str, Field(description="what you need to know, in plain words (error text, task, system)")],
        k: Annotated[int, Field(ge=1, le=50, description="results to return")] = 8,
        fold: Annotated[bool, Field(description="fold corrected / clarified / part-of entries under their representative")] = True,
    ) -> CallToolResult:
        """Ask the knowledge bank. Returns numbered results [id] with summaries and playbook steps; under a
        result, folded pointers (entries it corrects, clarifies or contains, with relation, direction and a note on
        how they pertain) and neighbours one link away. Read an entry whole with get_entry."""
        return _call(door.query, query, k=k, fold=fold)

    @server.tool(annotations=read)
    def recall(
        query: Annotated[str, Field(description="what you need to know, in plain words")],
        links: Annotated[int, Field(ge=0, le=20, description="linked entries to bring in beyond the answer")] = 3,
    ) -> CallToolResult:
        """Like query_knowledge_bank, then spreading activation over the links brings in related entries and a
        "How these entries connect" section explains the chain between them."""
        return _call(door.recall, query, links=links)

    @server.tool(annotations=read)
    def get_entry(id: Id) -> CallToolResult:
        """One entry whole (content, summary, steps, systems, tasks), its edges both ways (type, source, note)
        and its most recent events (who changed what, and why). An id merged into another entry answers with
        that entry, its first line saying so; a deleted id is an error saying when, by whom and why."""
        return _call(door.get_entry, id)

    @server.tool(annotations=read)
    def related(id: Id, depth: Annotated[int, Field(ge=1, le=4, description="hops to follow")] = 1) -> CallToolResult:
        """What is connected to an entry, best first, each with the chain of links that joins them."""
        return _call(door.related, id, depth=depth)

    @server.tool(annotations=read)
    def trace(a: Id, b: Id) -> CallToolResult:
        """The shortest chain of links between entries a and b (either direction), one link per line."""
        return _call(door.trace, a, b)

    @server.tool(annotations=read)
    def explain(a: Id, b: Id) -> CallToolResult:
        """Why the linker would (or would not) link a to b: the score, the proposed type, and the signals
        (shared terms, meaning, bridging facts, time, cue words)."""
        return _call(door.explain, a, b)

    if not readonly:
        _writing_tools(server, door)

    @server.resource("kb://entry/{id}", mime_type="application/json", description="one entry with its edges and recent events")
    def entry_resource(id: str) -> str:
        try:
            return _json(door.get_entry(id)[1])
        except kb.KbError as err:
            raise ResourceError(_message(err)) from err

    @server.resource("kb://stats", mime_type="application/json", description="what the bank holds: entries, edges by type and source, notes")
    def stats_resource() -> str:
        return _json(door.stats()[1])

    return server


def _writing_tools(server: MCPServer, door: Door) -> None:
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

    @server.tool(annotations=write)
    def report_learning(
        content: Annotated[str, Field(description="the learning itself: what is true, what to do, and why (not a session log)")],
        ctx: Context,
        title: Annotated[str | None, Field(description="a short title (default: from the content)")] = None,
        summary: Annotated[str | None, Field(description="one sentence (default: the first sentence)")] = None,
        kind: Annotated[str, Field(description="knowledge, fact, preference, event, goal, decision, procedure, playbook, "
                                               "skill, lesson, insight; step, artifact, role for process flows")] = "knowledge",
        useful_for: Annotated[str | None, Field(description="who needs this and when")] = None,
        systems: Annotated[list[str] | None, Field(description="systems it concerns")] = None,
        tasks: Annotated[list[str] | None, Field(description="tasks it concerns")] = None,
        steps: Annotated[list[str] | None, Field(description="ordered steps (playbooks)")] = None,
        connections: Annotated[list[Connection] | None, Field(description="entries this learning connects to")] = None,
    ) -> CallToolResult:
        """Store one durable learning, with its connections, in one transaction. Returns the new id and the links
        it now has (yours, plus the linker's automatic proposals). The guard rejects session logs, pasted
        transcripts and transient state, and says why."""
        conns = [c.model_dump() for c in connections or []]
        return _call(door.report_learning, content=content, title=title, summary=summary, kind=kind, useful_for=useful_for,
                                           systems=systems or [], tasks=tasks or [], steps=steps or [],
                                           connections=conns, actor=_client_name(ctx))

    @server.tool(annotations=write)
    def link_kb_entries(
        src: Id, dst: Id, ctx: Context,
        type: Annotated[str, Field(description=f"the edge type, read `src <type> dst`: {_RELATIONS}")],
        note: Annotated[str | None, Field(description="how dst pertains to src (how, never what it says)")] = None,
    ) -> CallToolResult:
        """Add one trusted edge `src <type> dst` (e.g. B corrects A: src=B, dst=A). Audited with your name."""
        return _call(door.link, src, dst, type, note=note, actor=_client_name(ctx))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    def unlink_kb_entries(
        src: Id, dst: Id, ctx: Context,
        type: Annotated[str, Field(description="the type of the edge to remove")],
        reason: Annotated[str, Field(description="why the edge is wrong (required; kept in the audit log)")],
    ) -> CallToolResult:
        """Remove one edge `src <type> dst`. A reason is required and kept in the audit log."""
        return _call(door.unlink, src, dst, type, reason=reason, actor=_client_name(ctx))


def _json(data: Any) -> str:
    import json

    return json.dumps(data, indent=1)


def serve(path: str | Path, *, readonly: bool | None = None, actor: str | None = None, transport: str = "stdio",
          host: str = "127.0.0.1", port: int = 8765, token: str | None = None) -> None:
    """Serve the bank until the client hangs up (stdio) or the process is stopped (http).

    Over stdio the server writes unless ``readonly``; over HTTP it is read-only unless
    ``readonly=False`` is asked for (``kb mcp --write``). HTTP is the streamable-HTTP transport at
    ``http://HOST:PORT/mcp``, bound to 127.0.0.1 unless told, and every request must carry
    ``Authorization: Bearer <token>``: ``token``, else ``$KB_MCP_TOKEN``, else a random token
    printed to stderr at start (see :mod:`kbtools.mcp.http`).
    """
    if transport not in ("stdio", "http"):
        raise kb.ValidationError("transport", transport, "a transport is stdio or http")
    if readonly is None:
        readonly = transport == "http"
    server = build_server(path, readonly=readonly, actor=actor)
    if transport == "stdio":
        server.run("stdio")
    else:
        serve_http(server, token=token, host=host, port=port)
