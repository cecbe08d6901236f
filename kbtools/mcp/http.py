"""The agents' door over HTTP: the streamable-HTTP app of an MCP server behind a bearer token.

Every HTTP request must carry ``Authorization: Bearer <token>``; one without it, or with another
token, gets 401 before it reaches the MCP app (compared in constant time). The token is the one
given, else the ``KB_MCP_TOKEN`` environment variable, else a random one printed to stderr at start
with the URL. Behind the token the SDK's own checks still hold: the Host and Origin headers of a
server bound to 127.0.0.1, and request bodies over 4 MiB refused (413).

>>> check_token("short")
Traceback (most recent call last):
...
kbtools.errors.ValidationError: token='<5 characters>': a token is 16 to 512 printable ASCII characters, no spaces
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from typing import Any, Callable

from kbtools.errors import ValidationError

__all__ = ["BearerToken", "TOKEN_ENV", "check_token", "new_token", "serve_http"]

#: the environment variable a token may come from (safer than --token, which other local users see
#: in the process list)
TOKEN_ENV = "KB_MCP_TOKEN"

_UNAUTHORIZED = (b"401 Unauthorized: missing or wrong bearer token. Send the header "
                 b"'Authorization: Bearer <token>' with the token kb mcp was started with "
                 b"(--token, $KB_MCP_TOKEN, or the one it printed to stderr at start).\n")


def new_token() -> str:
    """A random token (43 URL-safe characters, 256 bits)."""
    return secrets.token_urlsafe(32)


def check_token(token: str) -> str:
    """``token`` when it can be sent in a header and is long enough to guess at no rate; else a
    ValidationError that names its length, never the token."""
    if not (16 <= len(token) <= 512 and token.isascii() and token.isprintable() and " " not in token):
        raise ValidationError("token", f"<{len(token)} characters>",
                              "a token is 16 to 512 printable ASCII characters, no spaces")
    return token


class BearerToken:
    """ASGI middleware: every HTTP (and websocket) request carries ``Authorization: Bearer
    <token>`` or is answered 401 (websocket: closed) without reaching ``app``; lifespan events
    pass through."""

    def __init__(self, app: Callable[..., Any], token: str):
        self.app = app
        self._token = check_token(token).encode("ascii")

    def allowed(self, headers: list[tuple[bytes, bytes]]) -> bool:
        given = [value for name, value in headers if name.lower() == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, credential = given[0].strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket") and not self.allowed(scope.get("headers", [])):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"www-authenticate", b'Bearer realm="kb mcp"'),
                                    (b"content-length", str(len(_UNAUTHORIZED)).encode())]})
            await send({"type": "http.response.body", "body": _UNAUTHORIZED})
            return
        await self.app(scope, receive, send)


def serve_http(server, *, token: str | None = None, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve ``server`` (an MCP server) as streamable HTTP at ``http://HOST:PORT/mcp`` behind a
    bearer token, until the process is stopped. ``port=0`` picks a free port; the URL printed to
    stderr names the real one."""
    import uvicorn

    given = token or os.environ.get(TOKEN_ENV)
    token = check_token(given) if given else new_token()
    app = BearerToken(server.streamable_http_app(host=host), token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)  # listening before the URL is printed: a client that connects at once waits in the backlog
    bound = sock.getsockname()[1]
    url = f"http://{f'[{host}]' if family == socket.AF_INET6 else host}:{bound}/mcp"
    shown = "your token" if given else f"the token {token}"
    print(f"kb mcp: serving {url}; send 'Authorization: Bearer <token>' with {shown}", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
