"""The agents' door: an MCP server over one bank (``kb mcp PATH``).

``kbtools.mcp.door`` holds what each tool does over a bank (no SDK needed); ``kbtools.mcp.server``
builds the MCP server from it (needs the ``mcp`` extra); ``kbtools.mcp.http`` puts its HTTP app
behind a bearer token. The SDK itself is the top-level ``mcp``
package, always imported absolutely.

>>> from kbtools.mcp import READ_TOOLS
>>> "query_knowledge_bank" in READ_TOOLS
True
"""

from kbtools.mcp.door import READ_TOOLS, WRITE_TOOLS, Door

__all__ = ["Door", "READ_TOOLS", "WRITE_TOOLS", "build_server", "serve"]


def __getattr__(name: str):
    if name in ("build_server", "serve"):
        from kbtools.mcp import server

        return getattr(server, name)
    raise AttributeError(f"module 'kbtools.mcp' has no attribute {name!r}")
