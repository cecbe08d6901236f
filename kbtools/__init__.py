"""kbtools: understand and maintain an AI agents' knowledge bank.

>>> import kbtools as kb
>>> "open_bank" in kb.__all__
True
"""

from __future__ import annotations

import os as _os

_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from .check import check_bank
from .errors import (
    BankExists,
    BankLocked,
    EdgeNotFound,
    EdgeRuleError,
    EmbedderMismatch,
    EntryNotFound,
    GuardRejected,
    KbError,
    NotABank,
    StaleCache,
    ValidationError,
)
from .interchange import export_bank, import_files, import_frames
from .rules import Problem
from .store import Bank, create_bank, open_bank
from .writes import (
    add_triple,
    apply_plan,
    delete_entry,
    link,
    merge_entries,
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
    "apply_plan",
    "import_files",
    "import_frames",
    "export_bank",
    "KbError",
    "NotABank",
    "BankExists",
    "BankLocked",
    "EntryNotFound",
    "EdgeNotFound",
    "EdgeRuleError",
    "ValidationError",
    "GuardRejected",
    "EmbedderMismatch",
    "StaleCache",
]
