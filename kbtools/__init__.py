"""kbtools: understand and maintain an AI agents' knowledge bank.

The face holds the verbs a user types daily; the rest lives in namespaces, as networkx groups
``nx.community``: ``kb.evaluate`` (hop lab, replay, judge and link evaluations, baselines),
``kb.views`` (JupyterLab views and figure builders), ``kb.demo`` (the seeded demo banks),
``kb.graph`` (the pure, frame-first twins of the analytics), ``kb.linker`` (link planning and
its settings) and ``kb.retrieval`` (embedders, indexes, the ranked pool).

>>> import kbtools as kb
>>> "open_bank" in kb.__all__ and "run_hoplab" in kb.evaluate.__all__
True
"""

from __future__ import annotations

import os as _os

_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from kbtools import demo, evaluate, graph, linker, retrieval  # noqa: E402  (the namespaces)
from kbtools.errors import (  # noqa: E402
    BankExists,
    BankLocked,
    BpmnError,
    EdgeNotFound,
    EdgeRuleError,
    EmbedderMismatch,
    EntryNotFound,
    GuardRejected,
    KbError,
    NotABank,
    NotEmbedded,
    ReadOnlyBank,
    StaleCache,
    StorageError,
    UnsafePath,
    ValidationError,
)
from kbtools.evaluate.bank_stats import bank_stats, stats_many  # noqa: E402
from kbtools.evaluate.health import Health, health  # noqa: E402
from kbtools.linker.judge import Verdict, llm_judge, rule_judge  # noqa: E402
from kbtools.model.answer import Answer, Pointer, Result  # noqa: E402
from kbtools.model.config import FOLD_DEFAULTS, QUERY_DEFAULTS, FoldConfig, QueryConfig  # noqa: E402
from kbtools.model.plan import Plan  # noqa: E402
from kbtools.model.rules import Problem  # noqa: E402
from kbtools.ops.analytics import (  # noqa: E402
    adjacency,
    centrality,
    communities,
    process_flows,
    recall,
    related,
    to_igraph,
    trace,
    workflow_holes,
)
from kbtools.ops.bpmn import export_bpmn_holes, ingest_bpmn  # noqa: E402
from kbtools.ops.embedding import embed_bank  # noqa: E402
from kbtools.ops.fleet import communities_many, holes_many, map_banks, run_jobs  # noqa: E402
from kbtools.ops.ingest import ingest  # noqa: E402
from kbtools.ops.interchange import export_bank, import_files, import_frames  # noqa: E402
from kbtools.ops.judging import judge_bank, propose_duplicates  # noqa: E402
from kbtools.ops.maintenance import calibrate_bank, configure_linker, explain, feedback, reinforce  # noqa: E402
from kbtools.ops.writes import (  # noqa: E402
    add_triple,
    delete_entry,
    edit_edges,
    link,
    merge_entries,
    record_usage,
    report_learning,
    split_entry,
    unlink,
    update_entry,
)
from kbtools.retrieval.embedders import get_embedder  # noqa: E402
from kbtools.retrieval.folding import fold  # noqa: E402
from kbtools.retrieval.pipeline import query  # noqa: E402
from kbtools.store.bank import Bank, create_bank, open_bank  # noqa: E402
from kbtools.store.check import check_bank, repair_bank  # noqa: E402
from kbtools.store.scan import duckdb, scan, sql  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    # the bank
    "Bank", "open_bank", "create_bank", "check_bank", "repair_bank", "Plan", "Problem", "scan", "duckdb", "sql",
    # answers
    "query", "recall", "fold", "Answer", "Result", "Pointer", "QUERY_DEFAULTS", "FOLD_DEFAULTS", "QueryConfig",
    "FoldConfig", "get_embedder",
    # writes
    "report_learning", "update_entry", "link", "unlink", "edit_edges", "delete_entry", "merge_entries", "split_entry",
    "add_triple", "record_usage",
    # in and out
    "import_frames", "import_files", "export_bank", "ingest", "ingest_bpmn", "export_bpmn_holes",
    # jobs and maintenance
    "embed_bank", "backfill", "connect", "decay", "reinforce", "feedback", "explain", "calibrate_bank", "configure_linker",
    "judge_bank", "propose_duplicates", "Verdict", "rule_judge", "llm_judge",
    # many banks
    "run_jobs", "map_banks", "stats_many", "holes_many", "communities_many",
    # analytics
    "related", "trace", "communities", "centrality", "workflow_holes", "process_flows", "to_igraph", "adjacency",
    "bank_stats", "health", "Health",
    # views (the notebook extra)
    "explorer", "graph_view", "holes_view", "community_view",
    # errors
    "KbError", "BankExists", "BankLocked", "BpmnError", "EdgeNotFound", "EdgeRuleError", "EmbedderMismatch",
    "EntryNotFound", "GuardRejected", "NotABank", "NotEmbedded", "ReadOnlyBank", "StaleCache", "StorageError",
    "UnsafePath", "ValidationError",
    # namespaces
    "evaluate", "views", "demo", "graph", "linker", "retrieval",
]

# bound last: importing the submodule kbtools.ops.jobs would otherwise rebind these names
from kbtools.ops.jobs import backfill, connect, decay  # noqa: E402

#: The JupyterLab views load on first use: they need the notebook extra (ipywidgets, IPython).
_VIEWS = frozenset({"explorer", "graph_view", "holes_view", "community_view"})


def __getattr__(name: str):
    if name in _VIEWS or name == "views":
        try:
            import kbtools.views as views
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError(
                f"kb.{name} needs the notebook extra: pip install -e '.[notebook]' ({err})"
            ) from err
        return views if name == "views" else getattr(views, name)
    raise AttributeError(f"module 'kbtools' has no attribute {name!r}")
