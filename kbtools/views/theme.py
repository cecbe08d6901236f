"""Colours, marker styles and text helpers shared by the figure builders (no plotting here).

>>> community_color(-1) == ISOLATED_COLOR, community_color(0) == COMMUNITY_PALETTE[0]
(True, True)
>>> short("a fairly long sentence", 10)
'a fairly…'
"""

from __future__ import annotations

import html
import textwrap

__all__ = [
    "BACKGROUND", "FOREGROUND", "MUTED", "ISOLATED_COLOR", "COMMUNITY_PALETTE", "KIND_COLORS", "ROLE_STYLES",
    "HOLE_COLOR", "community_color", "kind_color", "short", "hover_text",
]

#: The constellation view's night sky.
BACKGROUND = "#0b1020"
FOREGROUND = "#e8ecf5"
MUTED = "#8a93a8"
ISOLATED_COLOR = "#55607a"
HOLE_COLOR = "#e5383b"

#: Community colours, cycled (bright enough to read on the dark background).
COMMUNITY_PALETTE = (
    "#4cc9f0", "#f72585", "#b5e48c", "#ffb703", "#9b5de5", "#00f5d4", "#fb8500", "#90e0ef",
    "#e9c46a", "#f15bb5", "#80ed99", "#a0c4ff", "#ffadad", "#caffbf", "#bdb2ff", "#fdffb6",
    "#06d6a0", "#ef476f", "#48cae4", "#ffd166",
)

#: One colour per entry kind (the vocabulary's kinds; others fall back to MUTED).
KIND_COLORS = {
    "knowledge": "#4cc9f0", "fact": "#90e0ef", "preference": "#bdb2ff", "event": "#ffadad",
    "goal": "#caffbf", "decision": "#ffb703", "procedure": "#80ed99", "playbook": "#06d6a0",
    "skill": "#f15bb5", "lesson": "#ef476f", "insight": "#9b5de5", "step": "#a0c4ff",
    "artifact": "#e9c46a", "role": "#fdffb6",
}

#: How each role of an answer is drawn in the constellation view, strongest first.
ROLE_STYLES = {
    "result": {"color": "#ff4d6d", "symbol": "circle", "size": 15, "label": "result"},
    "folded": {"color": "#ffb703", "symbol": "diamond", "size": 11, "label": "folded pointer"},
    "neighbor": {"color": "#4cc9f0", "symbol": "square", "size": 9, "label": "neighbour"},
    "linked": {"color": "#c77dff", "symbol": "cross", "size": 9, "label": "linked (activation)"},
}


def community_color(community: int) -> str:
    """The colour of a community id (-1, entries without links, is a muted grey)."""
    return ISOLATED_COLOR if community < 0 else COMMUNITY_PALETTE[community % len(COMMUNITY_PALETTE)]


def kind_color(kind: str | None) -> str:
    """The colour of an entry kind.

    >>> kind_color("lesson"), kind_color("unknown kind") == MUTED
    ('#ef476f', True)
    """
    return KIND_COLORS.get(kind or "", MUTED)


def short(text: str | None, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with an ellipsis when cut."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",.;:") + "…"


def hover_text(title: str | None, summary: str | None, *lines: str, width: int = 60) -> str:
    """Hover HTML: bold title, the summary wrapped at ``width``, then extra lines in italics.

    >>> hover_text("T", "one two", "kind · id")
    '<b>T</b><br>one two<br><i>kind · id</i>'
    """
    parts = [f"<b>{html.escape(short(title, 90))}</b>"]
    if summary:
        parts.append("<br>".join(html.escape(line) for line in textwrap.wrap(short(summary, 240), width)))
    parts.extend(f"<i>{html.escape(line)}</i>" for line in lines if line)
    return "<br>".join(parts)
