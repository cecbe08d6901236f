"""The report_learning guard: a bank keeps durable knowledge, not session logs or transient state.

>>> transient_reason("The session-create POST needs --http1.1 from curl.") is None
True
>>> transient_reason("$ kubectl get pods\\nNAME READY STATUS\\n$ kubectl logs web-1")
'reads like a pasted command transcript (2 shell prompt lines, their output and no prose)'

A recipe is not a transcript: commands shown to be run, with prose around them, are knowledge
(:func:`is_transcript` counts the words of prose outside the prompt lines and their output).

>>> transient_reason("To see why a pod restarts, list the pods and read the logs of the one that\\n"
...                  "keeps restarting; the last lines name the failing probe.\\n\\n"
...                  "    $ kubectl get pods\\n    NAME READY STATUS\\n    $ kubectl logs web-1\\n\\n"
...                  "Look for the probe's path in the output and compare it with the service's health route.") is None
True
"""

from __future__ import annotations

import re

__all__ = ["transient_reason", "is_transcript", "GUARD_RULES", "GUARD_MODES"]

#: What import and ingest do with rows the guard flags: import and list them, refuse the whole
#: write, or not look.
GUARD_MODES = ("report", "reject", "off")

#: a prompt and the start of a command; a root prompt (``#``) only before a command-like word: a
#: line ``# ...`` or ``# Set the flag`` is a comment of a code example, not a shell
_PROMPT = re.compile(r"^\s*(?:\$|#(?=\s+(?:[a-z~/]|\./))|>>>|PS [A-Z]:\\[^>]*>|[\w.-]+@[\w.-]+:[^$#]*[$#])\s+\S", re.M)
#: a ``#`` line that reads as a sentence of a comment block, not a root prompt: five words or more
#: and none of a command's marks (a `` -flag``, ``/`` ``=`` ``|`` ``>`` ``$``, a ``.`` before a
#: letter): a config file's "# one, as well as empty lines are ignored." wraps a comment
_COMMENT = re.compile(r"^\s*#\s+(?![^\n]*(?:\s-|[/=|>$]|\.\w))(?:[^\W\d_][\w'’-]*[,;:.!?]?\s+){4,}\S")
_STAMP = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]?", re.M
)
_TMP_PATH = re.compile(
    r"(?:(?<![\w/])/tmp/[^\s`'\"]+|/var/folders/\S+|/private/var/folders/\S+"
    r"|[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\\S*|(?<![\w/])/var/tmp/[^\s`'\"]+|/dev/shm/\S+)"
)
#: work said to be going on now ("the build is currently running"); "the currently running
#: thread", "a suite that is currently running", "is not currently running" name or describe a
#: thing by what it does, as reference pages do
_CURRENTLY = re.compile(r"(?<![Tt]he )(?<![Aa] )(?<!that is )(?<!which is )(?<!not )"
                        r"\b(?:currently|right now|at the moment)\s+"
                        r"(?:running|executing|in progress|building|deploying)\b", re.I)
_PID = re.compile(r"\b(?:pid|PID)[ \t]*[:=#]?[ \t]*\d{2,}\b|\bprocess(?: id)?[ \t]+\d{3,}\b")

#: Each rule: a name, a test on the content, and the reason it gives.
GUARD_RULES = (
    "empty",
    "command transcript",
    "timestamps at line starts",
    "temporary path",
    "currently running",
    "process id",
)


_WORD = re.compile(r"[A-Za-z][a-z'’]+")


def is_transcript(text: str) -> tuple[int, int]:
    """(prompt lines, words of prose) of ``text``. A prompt line's output runs to the next blank
    line; prose is every other line with at least four words (a heading or a lone path is not).

    >>> is_transcript("$ ls\\nREADME\\n$ cd /")
    (2, 0)
    >>> is_transcript("Install it first, then check the version it reports:\\n\\n$ pip install x\\n$ x --version")
    (2, 9)
    """
    prompts = prose = 0
    in_output = False
    for line in text.split("\n"):
        if not line.strip():
            in_output = False
            continue
        if _PROMPT.match(line) and not _COMMENT.match(line):
            prompts += 1
            in_output = True
            continue
        if in_output:
            continue
        words = _WORD.findall(line)
        if len(words) >= 4:
            prose += len(words)
    return prompts, prose


def transient_reason(content: str | None) -> str | None:
    """Why ``content`` is not durable knowledge, or None when it may be stored.

    >>> transient_reason("")
    'content is empty'
    >>> transient_reason("Build is currently running on the runner, wait for it")
    "mentions work in progress ('currently running'), which is transient state"
    >>> transient_reason("Returns the handle of the currently running thread.") is None
    True
    >>> transient_reason("Stops a test suite that is currently running.") is None
    True
    >>> transient_reason("Results are in /tmp/pytest-of-root/pytest-3/out.json")
    "mentions a temporary path ('/tmp/pytest-of-root/pytest-3/out.json'), which will not exist later"
    """
    if content is None or not str(content).strip():
        return "content is empty"
    text = str(content)
    prompts, prose = is_transcript(text)
    if prompts >= 2 and prose < max(8, 0.15 * len(text.split())):
        return f"reads like a pasted command transcript ({prompts} shell prompt lines, their output and no prose)"
    stamps = _STAMP.findall(text)
    if len(stamps) >= 2 or (len(stamps) == 1 and text.count("\n") == 0 and len(text) < 200 and _STAMP.match(text)):
        return f"reads like a session log ({len(stamps)} line(s) start with a timestamp)"
    # each pattern is searched only in a text holding the words it cannot match without (a bank's
    # long pages are read through quickly)
    m = _TMP_PATH.search(text) if any(mark in text for mark in _TMP_MARKS) else None
    if m:
        return f"mentions a temporary path ({m.group(0).rstrip('.,;:)]')!r}), which will not exist later"
    m = _CURRENTLY.search(text) if _says_now(text) else None
    if m:
        return f"mentions work in progress ({m.group(0)!r}), which is transient state"
    m = _PID.search(text) if "pid" in text or "PID" in text or "process" in text else None
    if m:
        return f"mentions a process id ({m.group(0)!r}), which is transient state"
    return None


#: What every match of ``_TMP_PATH`` holds
_TMP_MARKS = ("/tmp/", "/var/folders/", "\\Users\\", "/dev/shm/")


def _says_now(text: str) -> bool:
    """Whether ``text`` holds a phrase ``_CURRENTLY`` starts with, in any case (as its ``re.I``
    reads it: a dotless or dotted capital i is an i)."""
    low = text.lower()
    if "\u0131" in low or "i\u0307" in low:
        low = low.replace("\u0131", "i").replace("i\u0307", "i")
    return "currently" in low or "right now" in low or "at the moment" in low
