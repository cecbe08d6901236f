"""One meaning per name: the face holds at most forty daily verbs beside the error classes and the
namespaces, every name a namespace exports is bound to one object wherever it appears, and the
frame-first algorithms in ``kb.graph`` are named apart from the bank-level verbs they serve."""

from __future__ import annotations

import inspect
import types

import kbtools as kb
from kbtools.errors import KbError

NAMESPACES = ("evaluate", "views", "demo", "graph", "linker", "retrieval", "ops", "fleet", "model")


def _verbs() -> list[str]:
    return [n for n in kb.__all__ if not isinstance(getattr(kb, n), types.ModuleType)
            and not (inspect.isclass(getattr(kb, n)) and issubclass(getattr(kb, n), KbError))]


def test_the_face_holds_at_most_forty_daily_verbs_the_errors_and_the_namespaces():
    verbs = _verbs()
    assert len(verbs) <= 40, verbs
    assert set(NAMESPACES) <= set(kb.__all__)
    errors = [n for n in kb.__all__ if inspect.isclass(getattr(kb, n)) and issubclass(getattr(kb, n), KbError)]
    assert "KbError" in errors and len(kb.__all__) == len(verbs) + len(errors) + len(NAMESPACES)


def test_a_name_means_one_thing_in_every_namespace():
    seen: dict[str, tuple[str, object]] = {n: ("kb", getattr(kb, n)) for n in kb.__all__}
    clashes = []
    for space in NAMESPACES:
        module = getattr(kb, space)
        for name in module.__all__:
            obj = getattr(module, name)
            if name in seen and seen[name][1] is not obj:
                clashes.append(f"kb.{space}.{name} is not {seen[name][0]}.{name}")
            seen.setdefault(name, (f"kb.{space}", obj))
    assert not clashes, clashes


def test_the_frame_first_algorithms_take_frames_first():
    first = {name: next(iter(inspect.signature(getattr(kb.graph, name)).parameters))
             for name in ("related_entries", "shortest_trace", "find_communities", "centrality_scores",
                          "find_holes", "find_flows", "to_igraph")}
    assert first == {"related_entries": "adjacency", "shortest_trace": "adjacency_or_graph",
                     "find_communities": "graph", "centrality_scores": "graph", "find_holes": "entries",
                     "find_flows": "entries", "to_igraph": "entries"}
    bank_first = [name for name in ("related", "trace", "communities", "centrality", "workflow_holes",
                                    "process_flows", "explain", "check_bank")
                  if next(iter(inspect.signature(getattr(kb, name)).parameters)) not in ("bank", "bank_or_path")]
    assert not bank_first, bank_first
