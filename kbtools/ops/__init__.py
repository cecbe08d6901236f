"""Bank-level verbs beyond the daily ones in ``kb``: each takes a bank (or bank paths) and either
reads it or commits one audited plan.

- the bank's graphs, cached per version: ``bank_igraph``, ``bank_adjacency``; the edges they count:
  ``edges_counted``;
- smaller writes: ``add_triple``, ``record_usage``, ``import_frames``;
- BPMN in and out: ``ingest_bpmn``, ``export_bpmn_holes``;
- the linker's upkeep: ``reinforce``, ``feedback``, ``configure_linker``, ``propose_duplicates``;
- DuckDB over the bank's tables: ``duckdb``.

>>> import kbtools as kb
>>> "add_triple" in kb.ops.__all__ and "add_triple" not in kb.__all__
True
"""

from importlib import import_module

# Each name is imported from its module on first use, so that a process that needs one verb (the
# command line's `kb query`, a job) does not load igraph, scipy or the linker for the others.
_HOME = {
    "bank_igraph": "analytics", "bank_adjacency": "analytics", "edges_counted": "analytics",
    "export_bpmn_holes": "bpmn", "ingest_bpmn": "bpmn",
    "import_frames": "interchange",
    "propose_duplicates": "judging",
    "configure_linker": "maintenance", "feedback": "maintenance", "reinforce": "maintenance",
    "add_triple": "writes", "record_usage": "writes",
}

__all__ = [
    "bank_igraph", "bank_adjacency", "edges_counted",
    "add_triple", "record_usage", "import_frames",
    "ingest_bpmn", "export_bpmn_holes",
    "reinforce", "feedback", "configure_linker", "propose_duplicates",
    "duckdb",
]


def __getattr__(name: str):
    if name == "duckdb":
        from kbtools.store.scan import duckdb

        return duckdb
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kbtools.ops' has no attribute {name!r}")
    return getattr(import_module(f"kbtools.ops.{home}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
