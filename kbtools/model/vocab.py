"""The bank's vocabularies: edge types, edge sources, entry kinds, and what each group means.

An edge reads ``src <type> dst``: "B corrects A" is ``src=B, dst=A, type="corrects"``.

>>> normalize_type("related_to")
'see_also'
>>> "corrects" in SOURCE_WINS and "part_of" in TARGET_WINS
True
>>> is_trusted("auto"), is_trusted("author")
(False, True)
"""

from __future__ import annotations

__all__ = [
    "SOURCE_WINS",
    "TARGET_WINS",
    "DOMINANCE_TYPES",
    "RELATION_TYPES",
    "PROCESS_TYPES",
    "EDGE_TYPES",
    "TYPE_ALIASES",
    "TRANSITIVE_TYPES",
    "TRUSTED_SOURCES",
    "FADING_SOURCES",
    "EDGE_SOURCES",
    "ENTRY_KINDS",
    "PROCESS_KINDS",
    "ENTRY_STATUSES",
    "METADATA_LINK_TYPES",
    "NEIGHBOR_TYPE_PRIORITY",
    "normalize_type",
    "is_trusted",
]

# Dominance (folding): in "B supersedes/corrects/clarifies A" the source B wins;
# in "B part_of/split_from/derived_from A" the target A (the parent) wins.
SOURCE_WINS: frozenset[str] = frozenset({"supersedes", "corrects", "clarifies"})
TARGET_WINS: frozenset[str] = frozenset({"part_of", "split_from", "derived_from"})
DOMINANCE_TYPES: frozenset[str] = SOURCE_WINS | TARGET_WINS

RELATION_TYPES: frozenset[str] = frozenset(
    {
        "cites",
        "see_also",
        "conflicts_with",
        "serves",
        "advances",
        "concerns",
        "informs",
        "refines",
        "learned_from",
        "applies_to",
        "resolves",
        "follows",
    }
)
PROCESS_TYPES: frozenset[str] = frozenset({"precedes", "requires", "produces", "owned_by"})
EDGE_TYPES: frozenset[str] = DOMINANCE_TYPES | RELATION_TYPES | PROCESS_TYPES

#: Accepted on input, stored as the canonical name.
TYPE_ALIASES: dict[str, str] = {"related_to": "see_also"}

#: Types for which X -t-> B -t-> Y implies X -t-> Y; deletion bridging keeps these.
TRANSITIVE_TYPES: frozenset[str] = frozenset(
    {"supersedes", "part_of", "derived_from", "split_from", "precedes", "see_also"}
)

#: Trusted sources never fade and always carry weight 1.0.
TRUSTED_SOURCES: frozenset[str] = frozenset(
    {"author", "judge", "citation_backfill", "metadata_backfill", "bridged", "import", "structure", "manual"}
)
#: Fading sources carry a weight in (0, 1] and decay unless seen again.
FADING_SOURCES: frozenset[str] = frozenset({"auto", "feedback", "review"})
EDGE_SOURCES: frozenset[str] = TRUSTED_SOURCES | FADING_SOURCES

PROCESS_KINDS: frozenset[str] = frozenset({"step", "artifact", "role"})
ENTRY_KINDS: frozenset[str] = frozenset(
    {
        "knowledge",
        "fact",
        "preference",
        "event",
        "goal",
        "decision",
        "procedure",
        "playbook",
        "skill",
        "lesson",
        "insight",
    }
) | PROCESS_KINDS

#: ``active`` entries are retrieved; ``superseded`` ones are history (trace still reaches them).
ENTRY_STATUSES: frozenset[str] = frozenset({"active", "superseded", "archived"})

#: Dedup metadata keys and the edge type each becomes in the metadata backfill.
METADATA_LINK_TYPES: dict[str, str] = {
    "split_from": "split_from",
    "replaces": "supersedes",
    "supersedes": "supersedes",
    "recovered_from": "derived_from",
}

#: Order in which neighbours are handed over (lower first): corrections and conflicts
#: ahead of the rest, see_also last. Note-carrying edges come before all of these.
NEIGHBOR_TYPE_PRIORITY: dict[str, int] = {"corrects": 0, "conflicts_with": 0, "see_also": 2}


def normalize_type(type_: str) -> str:
    """The canonical name of an edge type (aliases resolved); unknown names pass through.

    >>> normalize_type("cites")
    'cites'
    """
    return TYPE_ALIASES.get(type_, type_)


def is_trusted(source: str) -> bool:
    """Whether edges of this source are trusted (never fade, weight 1.0).

    >>> is_trusted("citation_backfill")
    True
    """
    return source in TRUSTED_SOURCES
