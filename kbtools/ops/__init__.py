"""Bank-level verbs beyond the daily ones in ``kb``: each takes a bank (or bank paths) and either
reads it or commits one audited plan.

- the bank's graphs, cached per version: ``bank_igraph``, ``bank_adjacency``; the edges they count:
  ``edges_counted``;
- smaller writes: ``add_triple``, ``record_usage``, ``import_frames``;
- BPMN in and out: ``ingest_bpmn``, ``export_bpmn_holes``;
- the linker's upkeep: ``reinforce``, ``feedback``, ``calibrate_bank``, ``configure_linker``,
  ``propose_duplicates``;
- DuckDB over the bank's tables: ``duckdb``.

>>> import kbtools as kb
>>> "add_triple" in kb.ops.__all__ and "add_triple" not in kb.__all__
True
"""

from kbtools.ops.analytics import bank_adjacency, bank_igraph, edges_counted
from kbtools.ops.bpmn import export_bpmn_holes, ingest_bpmn
from kbtools.ops.interchange import import_frames
from kbtools.ops.judging import propose_duplicates
from kbtools.ops.maintenance import calibrate_bank, configure_linker, feedback, reinforce
from kbtools.ops.writes import add_triple, record_usage
from kbtools.store.scan import duckdb

__all__ = [
    "bank_igraph", "bank_adjacency", "edges_counted",
    "add_triple", "record_usage", "import_frames",
    "ingest_bpmn", "export_bpmn_holes",
    "reinforce", "feedback", "calibrate_bank", "configure_linker", "propose_duplicates",
    "duckdb",
]
