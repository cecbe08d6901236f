"""The report_learning guard: a bank keeps durable knowledge, not session logs or transient state.

>>> transient_reason("The session-create POST needs --http1.1 from curl.") is None
True
>>> transient_reason("$ kubectl get pods\\nNAME READY STATUS\\n$ kubectl logs web-1")
'reads like a pasted command transcript (2 shell prompt lines)'
"""

from __future__ import annotations

import re

__all__ = ["transient_reason", "GUARD_RULES"]

_PROMPT = re.compile(r"^\s*(?:\$|#|>>>|PS [A-Z]:\\[^>]*>|[\w.-]+@[\w.-]+:[^$#]*[$#])\s+\S", re.M)
_STAMP = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]?", re.M
)
_TMP_PATH = re.compile(
    r"(?:(?<![\w/])/tmp/\S+|/var/folders/\S+|/private/var/folders/\S+|[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\\S*"
    r"|(?<![\w/])/var/tmp/\S+|/dev/shm/\S+)"
)
_CURRENTLY = re.compile(r"\b(?:currently|right now|at the moment)\s+(?:running|executing|in progress|building|deploying)\b", re.I)
_PID = re.compile(r"\b(?:pid|PID)\s*[:=#]?\s*\d{2,}\b|\bprocess(?: id)?\s+\d{3,}\b")

#: Each rule: a name, a test on the content, and the reason it gives.
GUARD_RULES = (
    "empty",
    "command transcript",
    "timestamps at line starts",
    "temporary path",
    "currently running",
    "process id",
)


def transient_reason(content: str | None) -> str | None:
    """Why ``content`` is not durable knowledge, or None when it may be stored.

    >>> transient_reason("")
    'content is empty'
    >>> transient_reason("Build is currently running on the runner, wait for it")
    "mentions work in progress ('currently running'), which is transient state"
    >>> transient_reason("Results are in /tmp/pytest-of-root/pytest-3/out.json")
    "mentions a temporary path ('/tmp/pytest-of-root/pytest-3/out.json'), which will not exist later"
    """
    if content is None or not str(content).strip():
        return "content is empty"
    text = str(content)
    prompts = _PROMPT.findall(text)
    if len(prompts) >= 2:
        return f"reads like a pasted command transcript ({len(prompts)} shell prompt lines)"
    stamps = _STAMP.findall(text)
    if len(stamps) >= 2 or (len(stamps) == 1 and text.count("\n") == 0 and len(text) < 200 and _STAMP.match(text)):
        return f"reads like a session log ({len(stamps)} line(s) start with a timestamp)"
    m = _TMP_PATH.search(text)
    if m:
        return f"mentions a temporary path ({m.group(0)!r}), which will not exist later"
    m = _CURRENTLY.search(text)
    if m:
        return f"mentions work in progress ({m.group(0)!r}), which is transient state"
    m = _PID.search(text)
    if m:
        return f"mentions a process id ({m.group(0)!r}), which is transient state"
    return None
