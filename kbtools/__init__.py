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

#: Where each daily verb lives: the face imports it on first use (PEP 562), so that ``import kbtools``
#: costs the errors module only and a process that queries a bank never loads the demo generators,
#: the evaluations or the graph algorithms it does not call.
_VERBS = {
    "kbtools.store.bank": ("Bank", "create_bank", "open_bank"),
    "kbtools.store.check": ("check_bank",),
    "kbtools.store.repair": ("repair_bank",),
    "kbtools.store.scan": ("scan", "sql"),
    "kbtools.retrieval.pipeline": ("query",),
    "kbtools.retrieval.folding": ("fold",),
    "kbtools.model.answer": ("Answer",),
    "kbtools.ops.analytics": ("centrality", "communities", "process_flows", "recall", "related", "trace",
                              "workflow_holes"),
    "kbtools.ops.writes": ("delete_entry", "edit_edges", "link", "merge_entries", "report_learning", "split_entry",
                           "unlink", "update_entry"),
    "kbtools.ops.embedding": ("embed_bank",),
    "kbtools.ops.fleet": ("run_jobs",),
    "kbtools.ops.ingest": ("ingest",),
    "kbtools.ops.interchange": ("export_bank", "import_files"),
    "kbtools.ops.judging": ("judge_bank",),
    "kbtools.judging.judge": ("JUDGE_PROMPT", "Verdict", "llm_judge", "rule_judge"),
    "kbtools.ops.maintenance": ("explain",),
    "kbtools.ops.jobs": ("backfill", "connect", "decay"),
    "kbtools.evaluate.health": ("health",),
    "kbtools.evaluate.bank_stats": ("bank_stats",),
}
_HOME = {name: module for module, names in _VERBS.items() for name in names}
#: The namespaces, imported on first use too.
_NAMESPACES = frozenset({"demo", "evaluate", "fleet", "graph", "judging", "linker", "model", "ops", "retrieval"})

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
    if name in _HOME or name in _NAMESPACES:
        import importlib

        value = importlib.import_module(f"kbtools.{name}") if name in _NAMESPACES else \
            getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value  # once: later reads find it without this call
        return value
    raise AttributeError(f"module 'kbtools' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
