"""``kb mcp``: the agents' door, a Model Context Protocol server over one bank."""

from __future__ import annotations

from kbtools.cli.base import command, register_args

__all__: list[str] = []


@command("mcp", "serve a bank to agents over the Model Context Protocol (stdio, or HTTP on 127.0.0.1 with a token)")
def _mcp(args):
    """Serve one bank to agents as MCP tools: query_knowledge_bank, recall, get_entry, related, trace,
    explain, and (when writing) report_learning, link_kb_entries, unlink_kb_entries; resources
    kb://entry/{id} and kb://stats. A bad call is a tool error with the reason; the server keeps serving.

    kb mcp banks/eng                           # stdio: what an MCP client launches; writes unless --readonly
    kb mcp banks/eng --readonly                # reading tools only; writes nothing, not even usage
    kb mcp banks/eng --transport http --port 8765   # http://127.0.0.1:8765/mcp, read-only, token on stderr
    KB_MCP_TOKEN=... kb mcp banks/eng --transport http --write   # your token; writing tools too

    Over HTTP every request must carry 'Authorization: Bearer <token>' (else 401): the token is
    --token, else $KB_MCP_TOKEN, else a random one printed to stderr with the URL at start. Over
    HTTP the server is read-only unless --write. Writes are audited with --actor, else the client's
    name (mcp:<client>). Needs the mcp extra: pip install -e '.[mcp]'.
    """
    from kbtools.errors import KbError
    from kbtools.store.bank import open_bank

    if args.readonly and args.write:
        raise KbError("kb mcp --readonly --write: choose one (stdio writes unless --readonly; HTTP reads only unless --write)")
    open_bank(args.path)  # a clear error (exit 1) before the server starts when PATH is not a bank
    from kbtools.mcp.server import serve

    readonly = True if args.readonly else False if args.write else None
    serve(args.path, readonly=readonly, actor=args.actor, transport=args.transport, host=args.host, port=args.port,
          token=args.token)
    return {"path": args.path, "stopped": True}, None


register_args("mcp", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--readonly", action="store_true", help="expose only the reading tools; write nothing (usage not counted); "
                   "the default over HTTP"),
    p.add_argument("--write", action="store_true", help="over HTTP, expose the writing tools too (stdio writes unless --readonly)"),
    p.add_argument("--actor", help="the actor every write is recorded under (default: the client's name, mcp:<client>)"),
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable HTTP"),
    p.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default 127.0.0.1: this machine only)"),
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 picks a free one, printed at start)"),
    p.add_argument("--token", help="the bearer token HTTP requests must carry (16+ characters; default $KB_MCP_TOKEN, "
                   "else a random one printed to stderr); the environment variable keeps it out of the process list"),
))
