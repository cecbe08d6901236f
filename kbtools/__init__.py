"""kbtools: understand and maintain an AI agents' knowledge bank.

>>> import kbtools as kb
>>> "open_bank" in kb.__all__
True
"""

from __future__ import annotations

import os as _os

_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from kbtools.store.check import check_bank, repair_bank
from kbtools.errors import (
    BankExists,
    BpmnError,
    BankLocked,
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
    UnsafePath,
    StorageError,
    ValidationError,
)
from kbtools.model.plan import Plan
from kbtools.ops.analytics import (
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
from kbtools.model.answer import Answer, Pointer, Result
from kbtools.linker import LINKER_DEFAULTS, LINKER_LEXICAL, LinkerSettings
from kbtools.ops.maintenance import calibrate_bank, explain, feedback, reinforce
from kbtools.demo.banks import build_demo, read_truth, truth_path
from kbtools.demo import DemoBank, business_bank, engineering_bank, synthetic_bank
from kbtools.retrieval.embedders import Embedder, HashingEmbedder, MiniLMEmbedder, StaticEmbedder, default_embedder, get_embedder
from kbtools.model.config import FOLD_DEFAULTS, QUERY_DEFAULTS, FoldConfig, QueryConfig
from kbtools.retrieval.folding import EdgeLookup, collapse, flat, fold, mmr
from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, VectorIndex
from kbtools.ops.interchange import export_bank, import_files, import_frames
from kbtools.store.scan import duckdb, scan, sql
from kbtools.retrieval.pipeline import query
from kbtools.ops.embedding import embed_bank
from kbtools.retrieval.search import ranked_pool
from kbtools.evaluate.bank_stats import bank_stats
from kbtools.evaluate.health import Health, health
from kbtools.evaluate.judging import evaluate_judge
from kbtools.linker.judge import JUDGE_PROMPT, Verdict, llm_judge, rule_judge
from kbtools.ops.judging import judge_bank, propose_duplicates
from kbtools.evaluate.bank_stats import stats_many
from kbtools.ops.fleet import communities_many, holes_many, map_banks, run_jobs
from kbtools.demo.banks import build_fleet
from kbtools.ops.bpmn import export_bpmn_holes, ingest_bpmn
from kbtools.evaluate import (
    GoldJudge,
    HopLabReport,
    HopTask,
    ReaderAgent,
    ReplayReport,
    check_leaks,
    hop_tasks,
    hoplab_figure,
    leaky_notes,
    read_queries,
    replay_figure,
    run_hoplab,
    run_replay,
)

from kbtools.model.rules import Problem
from kbtools.store.bank import Bank, create_bank, open_bank
from kbtools.ops.writes import (
    add_triple,
    edit_edges,
    delete_entry,
    link,
    merge_entries,
    record_usage,
    report_learning,
    split_entry,
    unlink,
    update_entry,
)

__version__ = "0.1.0"

__all__ = [
    "Bank",
    "create_bank",
    "open_bank",
    "check_bank",
    "Problem",
    "report_learning",
    "update_entry",
    "link",
    "unlink",
    "delete_entry",
    "merge_entries",
    "split_entry",
    "add_triple",
    "edit_edges",
    "record_usage",
    "import_files",
    "import_frames",
    "export_bank",
    "scan",
    "duckdb",
    "sql",
    "bank_stats",
    "health",
    "Health",
    "propose_duplicates",
    "judge_bank",
    "Verdict",
    "rule_judge",
    "llm_judge",
    "JUDGE_PROMPT",
    "evaluate_judge",
    "run_jobs",
    "map_banks",
    "stats_many",
    "holes_many",
    "communities_many",
    "build_fleet",
    "build_demo",
    "read_truth",
    "truth_path",
    "DemoBank",
    "engineering_bank",
    "business_bank",
    "synthetic_bank",
    "Embedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "HashingEmbedder",
    "get_embedder",
    "default_embedder",
    "embed_bank",
    "ranked_pool",
    "DIMENSIONS",
    "DEFAULT_WEIGHTS",
    "VectorIndex",
    "query",
    "QUERY_DEFAULTS",
    "fold",
    "flat",
    "collapse",
    "mmr",
    "EdgeLookup",
    "FOLD_DEFAULTS",
    "FoldConfig",
    "QueryConfig",
    "Answer",
    "Result",
    "Pointer",
    "backfill",
    "connect",
    "decay",
    "explain",
    "calibrate_bank",
    "LinkerSettings",
    "LINKER_DEFAULTS",
    "LINKER_LEXICAL",
    "reinforce",
    "feedback",
    "to_igraph",
    "adjacency",
    "recall",
    "related",
    "trace",
    "communities",
    "centrality",
    "workflow_holes",
    "ingest_bpmn",
    "export_bpmn_holes",
    "process_flows",
    "run_hoplab",
    "run_replay",
    "hop_tasks",
    "check_leaks",
    "leaky_notes",
    "hoplab_figure",
    "replay_figure",
    "HopLabReport",
    "ReplayReport",
    "HopTask",
    "ReaderAgent",
    "GoldJudge",
    "read_queries",
    "layout_3d",
    "bank_layout",
    "graph_figure",
    "holes_figure",
    "community_figure",
    "save_html",
    "explorer",
    "graph_view",
    "holes_view",
    "community_view",
    "KbError",
    "BpmnError",
    "NotABank",
    "BankExists",
    "BankLocked",
    "EntryNotFound",
    "EdgeNotFound",
    "EdgeRuleError",
    "ValidationError",
    "NotEmbedded",
    "ReadOnlyBank",
    "UnsafePath",
    "Plan",
    "repair_bank",
    "GuardRejected",
    "EmbedderMismatch",
    "StaleCache",
    "StorageError",
]

# bound last: importing the submodules kbtools.linker.fading and kbtools.ops.maintenance rebinds those attribute names
from kbtools.ops.jobs import backfill, connect, decay  # noqa: E402

#: The JupyterLab views load on first use: they need the notebook extra (ipywidgets, IPython).
_VIEWS = frozenset({"layout_3d", "bank_layout", "graph_figure", "holes_figure", "community_figure", "save_html",
                    "explorer", "graph_view", "holes_view", "community_view"})


def __getattr__(name: str):
    if name in _VIEWS:
        try:
            from kbtools import views
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError(
                f"kb.{name} needs the notebook extra: pip install -e '.[notebook]' ({err})"
            ) from err
        return getattr(views, name)
    raise AttributeError(f"module 'kbtools' has no attribute {name!r}")
