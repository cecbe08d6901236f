"""Pure text splitting for ingest: documents into sections, sections into pieces under a size cap,
text into sentences (hard-wrapped lines joined), and a section's first sentence.

Markdown headings are ATX lines (``## Title``) outside code fences; reStructuredText headings are
a title line with an underline (and optionally an overline) of one repeated punctuation character,
their levels in order of first appearance, as docutils assigns them. Plain text has no headings.

>>> [s.heading for s in split_sections("Intro.\\n\\nUsage\\n=====\\n\\nRun it.\\n", fmt="rst")]
['', 'Usage']
>>> sentences("E.g., the fixes in 6c915c3f (fetch: do not ask for\\ntags) landed. Next one.")
['E.g., the fixes in 6c915c3f (fetch: do not ask for tags) landed.', 'Next one.']
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Section", "split_sections", "split_at_paragraphs", "sentences", "first_sentence", "as_read", "prose",
           "LEAD_IN_WORDS", "readable", "FORMATS", "format_of", "front_matter", "SECTION_CAP", "expand_includes",
           "document_title"]

#: Document formats :func:`split_sections` knows, by file suffix.
FORMATS = {".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text", ".text": "text"}
#: Default size cap of one entry's content, in characters (sections above it split at paragraphs).
SECTION_CAP = 4000

_ADORN = re.compile(r"^([=\-~^\"'`#*+_:.])\1+\s*$")
#: a reST label (an internal hyperlink target), not an external one (``.. _name: https://...``)
_LABEL = re.compile(r"^\.\.\s+_([^:\s`][^:`]*?|`[^`]+`):\s*$")
_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|cf|vs|viz|al|approx|Mr|Mrs|Ms|Dr|No|Fig|Sec|resp)\.|\b[A-Z]\.)$")
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`*]?[A-Z0-9:])")


@dataclass(frozen=True)
class Section:
    """One section: its heading ('' before the first heading), level (0 for that preamble) and text."""

    heading: str
    level: int
    text: str
    #: the reST labels (``.. _name:``) that name a place in this section: those right before its
    #: title, and those inside its text
    labels: tuple[str, ...] = ()


def format_of(name: str) -> str:
    """The format of a file name by its suffix ('text' when unknown).

    >>> format_of("notes/intro.md"), format_of("pep-0008.rst"), format_of("README")
    ('markdown', 'rst', 'text')
    """
    for suffix, fmt in FORMATS.items():
        if name.lower().endswith(suffix):
            return fmt
    return "text"


def split_sections(text: str, *, fmt: str = "text", max_level: int = 1) -> list[Section]:
    """Sections of ``text`` at headings of level ``max_level`` or above (deeper headings stay
    inside their section's text). Empty sections are dropped, and so is a reST preamble of markup
    a reader never sees. Levels count from the document's top heading level; a lone first heading
    at that level is the document's title (Markdown's ``#`` over ``##`` sections, reST's one
    ``*****`` title over ``=====`` sections), so the headings under it are its sections (level 1)
    and the text under it its preamble (level 0).

    >>> [(s.heading, s.level) for s in split_sections("# A\\nx\\n## B\\ny\\n# C\\nz", fmt="markdown")]
    [('A', 1), ('C', 1)]
    >>> [(s.heading, s.level) for s in split_sections("# Guide\\nx\\n## Install\\ny\\n### Notes\\nz", fmt="markdown")]
    [('Guide', 0), ('Install', 1)]
    >>> [(s.heading, s.level) for s in split_sections("Guide\\n*****\\nx\\n\\nUse\\n===\\ny\\n", fmt="rst")]
    [('Guide', 0), ('Use', 1)]
    >>> split_sections("just text", fmt="text")[0].text
    'just text'
    """
    lines = text.replace("\r\n", "\n").split("\n")
    heads = [h for h in _heads(lines, fmt) if h[2] <= max_level]
    out: list[Section] = []
    starts = [(0, 0, "", 0)] + [(start, body, title, level) for start, body, title, level in
                                ((h[0], h[1], h[3], h[2]) for h in heads)]
    labels = _label_owners(lines, [s[0] for s in starts]) if fmt == "rst" else {}
    for i, (start, body, title, level) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(lines)
        chunk = "\n".join(lines[body:end]).strip()
        if chunk and not (fmt == "rst" and i == 0 and _markup_only(chunk)):
            out.append(Section(title, level, chunk, tuple(labels.get(i, ()))))
    return out


def _heads(lines: list[str], fmt: str) -> list[tuple[int, int, int, str]]:
    """(first line, first body line, level, title) of each heading, levels counted from the top
    (a lone first heading at the top level is level 0, the document's title)."""
    if fmt == "markdown":
        return _relative_levels(_markdown_heads(lines))
    if fmt == "rst":
        return _relative_levels(_rst_heads(lines))
    return []


def document_title(text: str, *, fmt: str = "text") -> str | None:
    """The document's own title: its lone first heading at the top level (None without one),
    also where no text stands under it before its first section.

    >>> document_title("# File system\\n\\n## fs.open()\\n\\nOpens it.", fmt="markdown")
    'File system'
    >>> document_title("# A\\nx\\n# B\\ny", fmt="markdown") is None
    True
    """
    heads = _heads(text.replace("\r\n", "\n").split("\n"), fmt)
    return heads[0][3] if heads and heads[0][2] == 0 else None


def _label_owners(lines: list[str], starts: list[int]) -> dict[int, list[str]]:
    """The reST labels of each section (by its index in ``starts``, the first line of each): a
    label followed by nothing but blank lines and labels up to the next section's title names that
    section (Sphinx's rule: a label right before a title is the title's); any other names the
    section it stands in.

    >>> _label_owners([".. _top:", "", "Guide", "=====", "x", ".. _mid:", "y", ".. _next:", "", "B", "="], [0, 2, 9])
    {1: ['top', 'mid'], 2: ['next']}
    """
    owners: dict[int, list[str]] = {}
    for at, line in enumerate(lines):
        m = _LABEL.match(line)
        if not m:
            continue
        i = bisect.bisect_right(starts, at) - 1
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        if i + 1 < len(starts) and all(not x.strip() or _LABEL.match(x) for x in lines[at + 1:end]):
            i += 1
        owners.setdefault(i, []).append(m.group(1).strip("`"))
    return owners


def _markup_only(text: str) -> bool:
    """Whether reST ``text`` holds nothing a reader of the rendered page sees: only comments,
    labels, substitution definitions and the directives in :data:`_UNSEEN` (``.. index::``,
    ``.. highlight::``, ``.. title::``), each with its indented lines. An admonition
    (``.. note::``) or any prose is seen.

    >>> _markup_only(".. _top:\\n\\n.. index::\\n   single: x\\n.. a comment"), _markup_only(".. note::\\n   x")
    (True, False)
    """
    rows = [line for line in text.split("\n") if line.strip()]
    if not rows or not rows[0].startswith(".."):
        return False
    for row in rows:
        if row.startswith((" ", "\t")):
            continue  # inside the block above
        m = _EXPLICIT.match(row)
        if m is None:
            return False  # prose
        directive = m.group("directive")
        if m.group("footnote") or (directive and directive.lower() not in _UNSEEN):
            return False
    return True


#: an explicit markup start: a footnote or citation (seen), a directive (its name), a
#: substitution definition, a label or a comment (anything else after ``..``)
_EXPLICIT = re.compile(r"^\.\.(?:\s+(?:(?P<footnote>\[[^\]]+\])|\|[^|]+\|\s+[\w:-]+::"
                       r"|(?P<directive>[\w:-]+)::|.*)|\s*$)")
#: directives whose output is no text of the page's own: how to show code, index terms, the
#: window title, metadata, a generated table of contents, another file's text
_UNSEEN = frozenset({"highlight", "index", "title", "meta", "default-role", "currentmodule", "module",
                     "contents", "sectionauthor", "moduleauthor", "role", "include", "raw"})


def _markdown_heads(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(first line, first body line, level, title) of each ATX heading outside code fences."""
    heads, fenced = [], False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _ATX.match(line)
        if m:
            heads.append((i, i + 1, len(m.group(1)), m.group(2)))
    return heads


def _relative_levels(heads: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """Markdown headings with levels counted from the top level present (a file of ``##`` sections
    has level-1 sections); a lone first heading at the top level is the title, level 0."""
    if not heads:
        return heads
    top = min(h[2] for h in heads)
    titled = heads[0][2] == top and sum(h[2] == top for h in heads) == 1 and len(heads) > 1
    shift = top if titled else top - 1
    return [(a, b, level - shift, title) for a, b, level, title in heads]


def _rst_heads(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(first line, first body line, level, title) of each reST section title."""
    heads, styles = [], []
    i = 0
    while i < len(lines) - 1:
        over = _ADORN.match(lines[i])
        if over and i + 2 < len(lines) and lines[i + 1].strip() and _ADORN.match(lines[i + 2]) \
                and lines[i + 2].strip()[0] == over.group(1):
            style, title, start, body = (over.group(1), True), lines[i + 1].strip(), i, i + 3
        else:
            under = _ADORN.match(lines[i + 1])
            title = lines[i].strip()
            if not (under and title and not _ADORN.match(lines[i]) and not lines[i].startswith((" ", "\t"))
                    and len(lines[i + 1].strip()) >= min(len(title), 3) and (i == 0 or not lines[i - 1].strip())):
                i += 1
                continue
            style, start, body = (under.group(1), False), i, i + 2
        if style not in styles:
            styles.append(style)
        heads.append((start, body, styles.index(style) + 1, title))
        i = body
    return heads


_FRONT_FIELD = re.compile(r"^([A-Za-z_][\w\-]*)\s*:\s*(.*?)\s*$")


def front_matter(text: str) -> tuple[dict, str]:
    """``(fields, the rest of text)``: a YAML front matter block (``---`` lines around ``key: value``
    lines, as static-site generators write at the top of a Markdown file) read as flat fields
    (quotes dropped, ``[a, b]`` a list; indented or nested lines skipped); no block: ``({}, text)``.

    >>> front_matter("---\\ntitle: 'Deploying'\\ntags: [ops, ci]\\n---\\n\\nBody.")
    ({'title': 'Deploying', 'tags': ['ops', 'ci']}, 'Body.')
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i, line in enumerate(lines[1:200], 1) if line.strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    fields: dict = {}
    for line in lines[1:end]:
        m = _FRONT_FIELD.match(line)
        if not m or not m.group(2):
            continue
        value = m.group(2)
        if value.startswith("[") and value.endswith("]"):
            fields[m.group(1)] = [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
        else:
            fields[m.group(1)] = value.strip("'\"")
    return fields, "\n".join(lines[end + 1:]).strip("\n")


def split_at_paragraphs(text: str, cap: int = SECTION_CAP) -> list[str]:
    """``text`` in pieces of at most ``cap`` characters, cut at blank lines (a paragraph over the
    cap is cut at line ends, its lines kept one to a line; a line over it at the cap). Nothing is
    lost or added but blank lines between paragraphs, and the fence lines that close a fenced code
    block a cut fell in and open it again in the next piece (a few characters over the cap).

    >>> split_at_paragraphs("aaaa\\n\\nbbbb\\n\\ncccc", cap=10)
    ['aaaa\\n\\nbbbb', 'cccc']
    >>> split_at_paragraphs("one\\ntwo\\nthree\\nfour", cap=9)  # a code block's lines stay single-spaced
    ['one\\ntwo', 'three', 'four']
    """
    if cap < 1:
        raise ValueError(f"cap {cap!r}: the size cap is a positive number of characters")
    if len(text) <= cap:
        return [text] if text.strip() else []
    units: list[tuple[str, str]] = []  # (text, what joins it to the unit before: a blank line or a line end)
    for para in re.split(r"\n\s*\n", text):
        if not para.strip():
            continue
        if len(para) <= cap:
            units.append((para, "\n\n"))
            continue
        sep = "\n\n"
        for line in para.split("\n"):
            for i in range(0, max(len(line), 1), cap):
                units.append((line[i:i + cap], sep))
                sep = "\n" if i + cap >= len(line) else ""  # the rest of a cut line joins it as it was
    pieces, current = [], ""
    for unit, sep in units:
        joined = f"{current}{sep}{unit}" if current else unit
        if len(joined) <= cap:
            current = joined
        else:
            pieces.append(current)
            current = unit
    if current.strip():
        pieces.append(current)
    return _fences_closed([p for p in pieces if p.strip()])


def _fences_closed(pieces: list[str]) -> list[str]:
    """``pieces`` where a cut fell inside a fenced code block: the piece closes it and the next one
    opens it again with the same line (language and all), so each piece reads as its own Markdown.

    >>> _fences_closed(["Intro.\\n```js\\nlet a;", "let b;\\n```\\nDone."])
    ['Intro.\\n```js\\nlet a;\\n```', '```js\\nlet b;\\n```\\nDone.']
    """
    out, opener = [], None
    for piece in pieces:
        if opener is not None:
            piece = f"{opener}\n{piece}"
            opener = None
        for line in piece.split("\n"):
            m = _FENCE.match(line)
            if not m:
                continue
            if opener is None:
                opener = line
            elif m.group(1) == _FENCE.match(opener).group(1):
                opener = None
        if opener is not None:
            piece = f"{piece}\n{_FENCE.match(opener).group(0).strip()}"
        out.append(piece)
    return out


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: paragraphs split at blank lines and list items, hard-wrapped lines joined by one
    space, then cut after ``.``, ``!`` or ``?`` followed by a capital, a digit or an opening mark
    (not after ``e.g.``, ``i.e.``, ``etc.``, ``cf.`` or an initial).

    >>> sentences("Use PEP 8.\\nIt is the style\\nguide.\\n\\nA new paragraph")
    ['Use PEP 8.', 'It is the style guide.', 'A new paragraph']
    """
    out: list[str] = []
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)])\s)", text):
        flat = " ".join(line.strip() for line in para.split("\n") if line.strip())
        if not flat:
            continue
        start = 0
        for m in _BOUNDARY.finditer(flat):
            head = flat[start:m.start()].rstrip("\"')]")
            if _ABBREV.search(head):
                continue
            piece = flat[start:m.start()].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = flat[start:].strip()
        if tail:
            out.append(tail)
    return out


def first_sentence(text: str, *, limit: int = 300) -> str:
    """The first sentence of ``text`` that reads as prose (reST directives, literal-block markers,
    headings and bullets' markers skipped), trimmed to ``limit`` characters at a word boundary.

    A short sentence that only leads in to what follows ("Output:", "Fixing:", "The options are:")
    says nothing alone: it is read with the first paragraph, item or code block that follows it.

    >>> first_sentence(".. note::\\n\\nThis PEP describes a\\nstyle. More.")
    'This PEP describes a style.'
    >>> first_sentence("Fixing:\\n\\n lib/http.c:12: warning: unused variable 'len'\\n\\nCloses #3")
    "Fixing: lib/http.c:12: warning: unused variable 'len'"
    """
    for reading in (_prose_only(text), _prose_only(text, code=True)):  # code only where there is no prose
        for s in sentences(reading):
            s = as_read(s.strip())
            if len(s) >= 3 and re.search(r"[A-Za-z]{2}", s):
                s = s[:-1] if s.endswith("::") else s  # "for example::" reads "for example:"
                lead_in = s.endswith(":") and len(s.split()) <= LEAD_IN_WORDS
                return _trim(_with_what_follows(text, s) if lead_in else s, limit)
    return _trim(" ".join(text.split()), limit)


#: A sentence ending in a colon of at most this many words leads in to what follows (a longer one,
#: "The following command deletes the bucket policy of my-bucket:", says something itself).
LEAD_IN_WORDS = 6


def _with_what_follows(text: str, lead: str) -> str:
    """``lead`` (a sentence of ``text`` ending in a colon) and the paragraph, first list item or code
    block that follows it in ``text`` (code included), as one line; ``lead`` alone when nothing does."""
    raw = text.split("\n")
    read = _prose_only(text, code=True).split("\n")  # line for line with ``raw``
    tail = " ".join(lead.split()[-3:])
    for at, line in enumerate(read):
        said = " ".join(as_read(line).split())
        if not (said[:-1] if said.endswith("::") else said).endswith(tail):
            continue
        taken: list[str] = []
        for nxt in range(at + 1, len(read)):
            said = read[nxt].strip()
            if not said:
                if taken:
                    break
                continue
            if taken and _ITEM.match(raw[nxt].strip()):
                break  # the first item of a list
            taken.append(as_read(said))
        return f"{lead} {' '.join(taken)}" if taken else lead
    return lead


def as_read(text: str) -> str:
    """``text`` with its inline markup as a reader of the rendered page sees it: reST roles
    (``:pep:`8``` reads "PEP 8", ``:ref:`the guide <guide>``` "the guide", ``:func:`~os.path.join```
    "join"), literals, emphasis and links of reST and Markdown reduced to their text.

    >>> as_read(":pep:`3107` introduced **syntax** for ``def f(x: int)``, see `the docs <https://x.org>`_.")
    'PEP 3107 introduced syntax for def f(x: int), see the docs.'
    >>> as_read("Use [the guide](/guide.md) and `make all`; *.py files stay *.py.")
    'Use the guide and make all; *.py files stay *.py.'
    >>> as_read("**If the shell option is set, do not pass user input.")  # bold the sentence cut opened
    'If the shell option is set, do not pass user input.'
    """
    text = _NUMBERED_ROLE.sub(lambda m: f"{m.group(1).upper()} {m.group(2)}", text)
    text = _ROLE.sub(lambda m: _role_text(m.group(1)), text)
    text = _RST_LINK.sub(lambda m: m.group(1).strip(), text)
    text = _MD_LINK.sub(r"\1", text)
    text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    text = _EMPHASIS.sub(r"\2", text)
    return _STRAY_STRONG.sub("", text)  # a bold run the sentence cut opened or the source left unclosed


def _role_text(inner: str) -> str:
    said = re.match(r"(.*?)\s*<[^<>]*>\s*$", inner, re.S)
    if said and said.group(1):
        return said.group(1)
    inner = inner.lstrip("!")
    return inner[1:].rsplit(".", 1)[-1] if inner.startswith("~") else inner


_NUMBERED_ROLE = re.compile(r":(pep|rfc):`(\d+)(?:#[^`]*)?`", re.I)
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)?:`([^`]+)`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*(?:<[^`>]*>)?`__?(?![\w])")
_MD_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\([^)\s]*\)")
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`(?!_)")
_STRAY_STRONG = re.compile(r"^\*\*+(?=\S)|(?<=\S)\*\*+$")
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*|\*)(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])")


def readable(text: str) -> bool:
    """Whether ``text`` holds anything a reader reads here, prose or code: False for a page of
    directives only (``.. contents::``, ``.. withdrawn::``, ``.. cmake-module:: X.cmake``: what they
    render comes from elsewhere), labels and comments.

    >>> readable(".. only:: html\\n\\n   .. contents::"), readable(".. code-block:: c\\n\\n   int x;")
    (False, True)
    """
    return bool(_prose_only(text, code=True).strip())


def prose(text: str) -> str:
    """What a reader of the rendered page reads as prose in ``text`` (reST or Markdown), line for
    line: the code of literal blocks, code directives and fences, inline code spans, directives and
    headings' adornments blanked (an example's shell session, output or command is not the
    author's prose).

    >>> prose("Run::\\n\\n   $ make all\\n   12:00:01 done\\n\\nThen test.").split("\\n")
    ['Run::', '', '', '', '', 'Then test.']
    >>> prose("Keep it with ``--workdir /tmp/big``.")
    'Keep it with  .'
    """
    return _LITERAL.sub(" ", _prose_only(text))


def _prose_only(text: str, *, code: bool = False) -> str:
    """``text`` with what no reader reads as prose blanked, line for line: directive and comment
    lines and their options (``:class: good``), the code of a literal block (after ``::``), of a
    ``code-block`` / ``code`` / ``literalinclude`` directive or of a Markdown fence (kept with
    ``code``), headings' adornments; bullets, numbers and Markdown headings lose their markers. An
    admonition's and a footnote's text (``.. note::``, ``.. [1]``) stays.

    >>> _prose_only("Run::\\n\\n   make all\\n\\nThen test.").split("\\n")
    ['Run::', '', '', '', 'Then test.']
    >>> _prose_only('    "Id": "r-1234"\\n}\\n\\nThen test.').split("\\n")  # a piece cut inside a literal block
    ['', '}', '', 'Then test.']
    >>> _prose_only("1. .. versionadded:: 3.12\\n   Searches the prefix.\\n.. [2] Lockstep Iteration").split("\\n")
    ['', 'Searches the prefix.', 'Lockstep Iteration']
    """
    keep: list[str] = []
    first = next((line for line in text.split("\n") if line.strip()), "")
    # the indentation a literal block must exceed (None: not in one); a text that starts indented is
    # the rest of a literal block that a cut at the size cap began in the piece before
    code_at: int | None = 0 if first[:1] in (" ", "\t") else None
    options = False  # right after a directive line: its option lines
    fenced = False
    for line in text.split("\n"):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _FENCE.match(line):
            fenced = not fenced
            keep.append("")
            continue
        if fenced:
            keep.append(stripped if code else "")
            continue
        if options and _DIRECTIVE_OPTION.match(line):
            keep.append("")
            continue
        options = False
        if code_at is not None:
            if not stripped or indent > code_at:
                keep.append(stripped if code else "")
                continue
            code_at = None
        item = _ITEM.sub("", stripped)  # "1. .. versionadded:: 3.12": a directive in a list item
        if item.startswith(".. ") or item == "..":
            options = True
            if _CODE_DIRECTIVE.match(item):
                code_at = indent  # its indented body is code, a table or a list of names: no prose
            said = _ADMONITION.match(item) or _FOOTNOTE.match(item)  # a note's or a footnote's text is prose
            keep.append(item[said.end():].strip() if said else "")
            continue
        if _ADORN.match(stripped or "x"):
            keep.append("")
            continue
        if stripped.endswith("::") and stripped != "::":
            code_at = indent
        elif stripped == "::":
            code_at = indent
            keep.append("")
            continue
        keep.append(item)
    return "\n".join(keep)


_DIRECTIVE_OPTION = re.compile(r"^[ \t]+:[\w-]+:(?:\s|$)")
#: a bullet's, a number's (``1.``, ``#.``) or a Markdown heading's marker
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)]|#\.|#{1,6})\s+")
#: a reST footnote or citation (``.. [1] text``, ``.. [#note] text``): its text is read
_FOOTNOTE = re.compile(r"^\.\.\s+\[[^\]]+\]\s*")
_ADMONITION = re.compile(r"^\.\.\s+(?:note|warning|tip|important|caution|attention|danger|error|hint|seealso)::",
                         re.I)
_CODE_DIRECTIVE = re.compile(r"^\.\.\s+(?:code-block|code|sourcecode|literalinclude|highlight|productionlist|"
                             r"parsed-literal|doctest|testcode|testoutput|csv-table|list-table|table|math|raw|"
                             r"image|figure|graphviz|toctree|index)::", re.I)


def _trim(s: str, limit: int) -> str:
    """``s`` cut to ``limit`` characters at a word boundary, or inside a word where the last
    boundary would leave under half of it (a long path, a line of code without spaces)."""
    if len(s) <= limit:
        return s
    cut = s[: limit - 1].rsplit(" ", 1)[0]
    if len(cut) < limit // 2:
        cut = s[: limit - 1]
    return cut + "…"


_INCLUDE = re.compile(r"^(?P<indent>[ \t]*)\.\.\s+include::\s*(?P<target>\S+)\s*$")
_OPTION = re.compile(r"^[ \t]+:(?P<name>[\w-]+):\s*(?P<value>.*?)\s*$")
#: how deep one include may include another (a loop is never followed)
INCLUDE_DEPTH = 8


def expand_includes(texts: Mapping[str, str], rst: set[str] | frozenset[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The reST files among ``texts`` (path in the corpus -> text; ``rst``: the reST ones) with
    each ``.. include:: other`` directive replaced by the other file's text, as Sphinx renders it:
    the path relative to the including file (from the corpus root when it starts with ``/``),
    ``:start-line:`` / ``:end-line:`` / ``:start-after:`` / ``:end-before:`` honoured, indented like
    the directive, includes inside it expanded too. An include of a file the corpus lacks, a loop or
    one past :data:`INCLUDE_DEPTH` stays as written. Returns ``(texts, included)``: every text
    (the reST ones expanded) and each included file with the first file that includes it.

    >>> texts = {"a.rst": "Title\\n=====\\n\\n.. include:: parts/opt.txt\\n   :start-line: 1\\n",
    ...          "parts/opt.txt": "skip\\nShared text."}
    >>> out, inc = expand_includes(texts, {"a.rst"})
    >>> out["a.rst"].splitlines()[-1], inc
    ('Shared text.', {'parts/opt.txt': 'a.rst'})
    """
    included: dict[str, str] = {}

    def expand(name: str, text: str, depth: int, seen: frozenset) -> str:
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines):
            m = _INCLUDE.match(lines[i])
            if m is None:
                out.append(lines[i])
                i += 1
                continue
            j, options = i + 1, {}
            while (j < len(lines) and (o := _OPTION.match(lines[j]))
                   and len(lines[j]) - len(lines[j].lstrip()) > len(m["indent"])):
                options[o["name"]] = o["value"]
                j += 1
            target = m["target"]
            target = posixpath.normpath(target.lstrip("/") if target.startswith("/")
                                        else posixpath.join(posixpath.dirname(name), target))
            if target not in texts or target in seen or depth >= INCLUDE_DEPTH:
                out.extend(lines[i:j])
            else:
                included.setdefault(target, name)
                body = _included_part(expand(target, texts[target], depth + 1, seen | {target}), options)
                out.extend(m["indent"] + line if line.strip() else line for line in body.split("\n"))
            i = j
        return "\n".join(out)

    expanded = {name: (expand(name, text, 0, frozenset({name})) if name in rst else text)
                for name, text in texts.items()}
    return expanded, included


def _included_part(text: str, options: Mapping[str, str]) -> str:
    """The part of an included ``text`` its directive's options name."""
    after, before = options.get("start-after"), options.get("end-before")
    if after and after in text:
        text = text.split(after, 1)[1]
    if before and before in text:
        text = text.split(before, 1)[0]
    lines = text.split("\n")
    start, end = options.get("start-line", ""), options.get("end-line", "")
    lo = int(start) if start.lstrip("-").isdigit() else None
    hi = int(end) if end.lstrip("-").isdigit() else None
    return "\n".join(lines[lo:hi])
