"""kbtools: understand and maintain an AI agents' knowledge bank.

The face holds the forty verbs a user types daily, the error classes and the namespaces; the rest
lives in namespaces, as networkx groups ``nx.community``: ``kb.ops`` (bank-level verbs beyond the
daily ones: BPMN, the linker's upkeep, the bank's cached graphs), ``kb.fleet`` (many banks at once),
``kb.evaluate`` (hop lab, replay, judge and link evaluations, baselines), ``kb.views`` (JupyterLab
views and figure builders), ``kb.demo`` (the seeded demo banks), ``kb.graph`` (the pure, frame-first
algorithms the analytics hand a bank's frames to), ``kb.linker`` (link planning, the judges and
their settings), ``kb.retrieval`` (embedders, indexes, the ranked pool, query and fold settings)
and ``kb.model`` (plans and problems).

>>> import kbtools as kb
>>> "open_bank" in kb.__all__ and "run_hoplab" in kb.evaluate.__all__ and "map_banks" in kb.fleet.__all__
True
"""

from __future__ import annotations

import os as _os

_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from kbtools import demo, evaluate, fleet, graph, linker, model, ops, retrieval  # noqa: E402  (the namespaces)
from kbtools.errors import (  # noqa: E402
    BankDamaged,
    BankExists,
    BankLocked,
    BankUnrepairable,
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
    SqlRefused,
    StaleCache,
    StorageError,
    UnsafePath,
    ValidationError,
)
from kbtools.evaluate.health import health  # noqa: E402
from kbtools.model.answer import Answer  # noqa: E402
from kbtools.ops.analytics import (  # noqa: E402
    centrality,
    communities,
    process_flows,
    recall,
    related,
    trace,
    workflow_holes,
)
from kbtools.ops.embedding import embed_bank  # noqa: E402
from kbtools.ops.fleet import run_jobs  # noqa: E402
from kbtools.ops.ingest import ingest  # noqa: E402
from kbtools.ops.interchange import export_bank, import_files  # noqa: E402
from kbtools.ops.judging import judge_bank  # noqa: E402
from kbtools.ops.maintenance import explain  # noqa: E402
from kbtools.evaluate.bank_stats import bank_stats  # noqa: E402
from kbtools.ops.writes import (  # noqa: E402
    delete_entry,
    edit_edges,
    link,
    merge_entries,
    report_learning,
    split_entry,
    unlink,
    update_entry,
)
from kbtools.retrieval.folding import fold  # noqa: E402
from kbtools.retrieval.pipeline import query  # noqa: E402
from kbtools.store.bank import Bank, create_bank, open_bank  # noqa: E402
from kbtools.store.check import check_bank  # noqa: E402
from kbtools.store.repair import repair_bank  # noqa: E402
from kbtools.store.scan import scan, sql  # noqa: E402

__version__ = "0.1.0"

#: The daily verbs (forty), the error classes and the namespaces.
__all__ = [
    # the bank
    "Bank", "open_bank", "create_bank", "check_bank", "repair_bank", "sql", "scan",
    # answers
    "query", "recall", "fold", "Answer",
    # writes
    "report_learning", "update_entry", "link", "unlink", "delete_entry", "merge_entries", "split_entry", "edit_edges",
    # in and out
    "import_files", "export_bank", "ingest", "embed_bank",
    # jobs and maintenance
    "backfill", "connect", "decay", "judge_bank", "health", "bank_stats", "run_jobs",
    # analytics
    "related", "trace", "explain", "communities", "centrality", "workflow_holes", "process_flows",
    # views (the notebook extra)
    "explorer", "graph_view", "holes_view",
    # errors
    "KbError", "BankDamaged", "BankUnrepairable", "BankExists", "BankLocked", "BpmnError", "EdgeNotFound",
    "EdgeRuleError", "EmbedderMismatch", "EntryNotFound", "GuardRejected", "NotABank", "NotEmbedded", "ReadOnlyBank",
    "SqlRefused", "StaleCache", "StorageError",
    "UnsafePath", "ValidationError",
    # namespaces
    "evaluate", "views", "demo", "graph", "linker", "retrieval", "ops", "fleet", "model",
]

# bound last: importing the submodule kbtools.ops.jobs would otherwise rebind these names
from kbtools.ops.jobs import backfill, connect, decay  # noqa: E402

#: The JupyterLab views load on first use: they need the notebook extra (ipywidgets, IPython).
_VIEWS = frozenset({"explorer", "graph_view", "holes_view"})


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
