"""One exception root for everything kbtools raises on purpose.

Every message says what was given, which rule it broke and what is allowed, so that a
caller (an agent, a job, an analyst) can fix the input without reading the source.

>>> try:
...     raise EdgeRuleError("edge a1b2c3d4 -> a1b2c3d4 (clarifies): an entry cannot point at itself")
... except KbError as err:
...     print(err)
edge a1b2c3d4 -> a1b2c3d4 (clarifies): an entry cannot point at itself
"""

from __future__ import annotations

__all__ = [
    "KbError",
    "BpmnError",
    "NotABank",
    "BankDamaged",
    "BankUnrepairable",
    "BankExists",
    "BankLocked",
    "EntryNotFound",
    "EdgeNotFound",
    "EdgeRuleError",
    "ValidationError",
    "GuardRejected",
    "EmbedderMismatch",
    "StaleCache",
    "ReadOnlyBank",
    "NotEmbedded",
    "StorageError",
    "SqlRefused",
]


class KbError(Exception):
    """Root of every error kbtools raises on purpose.

    >>> issubclass(EntryNotFound, KbError)
    True
    """

    def __str__(self) -> str:
        # the message as given: KeyError's own __str__ would wrap it in quotes
        return BaseException.__str__(self)


class NotABank(KbError, FileNotFoundError):
    """A path that is not a kbtools bank folder.

    >>> str(NotABank("/tmp/nowhere", "no bank.json"))
    '/tmp/nowhere is not a kbtools bank: no bank.json'
    """

    def __init__(self, path, why: str = "no bank.json in it"):
        self.path = str(path)
        super().__init__(f"{path} is not a kbtools bank: {why}")


class BankDamaged(KbError):
    """A file of a bank that cannot be read as its commit wrote it (truncated, garbage, missing):
    names the bank, the file and what is wrong, and says how to check and repair the bank.
    Derived caches never raise it (a damaged cache is rebuilt).

    >>> print(BankDamaged("banks/eng", "tables/entries/00000003-c10644.parquet", "unreadable Parquet"))
    banks/eng: tables/entries/00000003-c10644.parquet is damaged (unreadable Parquet): run `kb check banks/eng` to see what is wrong and `kb repair banks/eng` to roll back to the newest version whose files are whole
    """

    def __init__(self, path, file: str, why: str):
        import shlex

        self.path, self.file, self.why = str(path), str(file), why
        quoted = shlex.quote(str(path))
        super().__init__(f"{path}: {file} is damaged ({why}): run `kb check {quoted}` to see what is wrong and "
                         f"`kb repair {quoted}` to roll back to the newest version whose files are whole")


class BankUnrepairable(BankDamaged):
    """A damaged bank of which no kept version is whole: repair cannot bring it back.

    >>> print(BankUnrepairable("banks/eng", 3))
    banks/eng: no kept version of the bank has all its files whole (3 manifest(s) tried): restore the bank folder from a copy (a backup, or the source it was built from)
    """

    def __init__(self, path, tried: int):
        self.path, self.tried = str(path), tried
        KbError.__init__(self, f"{path}: no kept version of the bank has all its files whole ({tried} manifest(s) "
                               "tried): restore the bank folder from a copy (a backup, or the source it was built from)")


class BankExists(KbError, FileExistsError):
    """create_bank on a folder that already holds a bank (or other files)."""

    def __init__(self, path, why: str = "a bank is already there"):
        self.path = str(path)
        super().__init__(f"cannot create a bank at {path}: {why}")


class BankLocked(KbError):
    """Another writer held the bank's lock for longer than the timeout.

    >>> str(BankLocked("banks/eng", 2.0, "pid 41 (kb connect) since 2026-11-29T10:00:00Z"))
    'bank banks/eng is locked by pid 41 (kb connect) since 2026-11-29T10:00:00Z; gave up after 2 s'
    """

    def __init__(self, path, timeout: float, holder: str):
        self.path = str(path)
        self.holder = holder
        super().__init__(f"bank {path} is locked by {holder}; gave up after {timeout:g} s")


class EntryNotFound(KbError, KeyError):
    """An entry id that is not in the bank.

    >>> str(EntryNotFound("deadbeef"))
    'entry deadbeef does not exist in this bank'
    """

    def __init__(self, entry_id: str, where: str = ""):
        self.entry_id = entry_id
        msg = f"entry {entry_id} does not exist in this bank"
        if where:
            msg = f"{where}: {msg}"
        super().__init__(msg)


class EdgeNotFound(KbError, KeyError):
    """An edge (src, dst, type) that is not in the bank."""

    def __init__(self, src: str, dst: str, type_: str):
        super().__init__(f"edge {src} -> {dst} ({type_}) does not exist in this bank")


class EdgeRuleError(KbError, ValueError):
    """An edge that breaks a rule of the edge table (type, source, self-loop, duplicate)."""


class ValidationError(KbError, ValueError):
    """A row whose value breaks a rule; names the row, the column, the value and the rule.

    >>> str(ValidationError("kind", "poem", "must be one of knowledge, fact", row=3))
    "row 3: kind='poem': must be one of knowledge, fact"
    """

    def __init__(self, column: str, value, rule: str, row=None):
        self.column = column
        self.value = value
        self.rule = rule
        self.row = row
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        where = f"row {row}: " if row is not None else ""
        super().__init__(f"{where}{column}={shown}: {rule}")


class GuardRejected(ValidationError):
    """report_learning content that reads as a session log or transient state."""


class EmbedderMismatch(KbError):
    """A bank whose vectors were built by another embedder than the one asked for."""


class StaleCache(KbError):
    """A derived artefact (index, layout) whose fingerprint does not match the tables."""


class ReadOnlyBank(KbError):
    """A write on a bank opened read-only (or on a read-only file system)."""

    def __init__(self, path, what: str):
        super().__init__(f"{path}: {what}: the bank is open read-only (open it without readonly=True / --readonly "
                         "to write)")


class NotEmbedded(KbError):
    """A query on a bank whose entries have no vectors yet: embedding is an explicit step."""

    def __init__(self, path, missing: int, total: int):
        super().__init__(f"{path}: {missing} of {total} entries have no vectors; embed them first with "
                         f"`kb embed {path}` or kb.embed_bank(bank) (reads never embed or write)")


class BpmnError(KbError, ValueError):
    """A BPMN file that cannot be read as a process model; names the file, the element id and the rule.

    >>> str(BpmnError("order.bpmn", "Flow_1", "sourceRef 'Task_9' is not a flow node of process 'P'"))
    "order.bpmn: element 'Flow_1': sourceRef 'Task_9' is not a flow node of process 'P'"
    """

    def __init__(self, file: str, element: str | None, rule: str):
        self.file, self.element, self.rule = file, element, rule
        where = f"element {element!r}: " if element else ""
        super().__init__(f"{file}: {where}{rule}")


class SqlRefused(KbError, ValueError):
    """A ``kb sql`` query that is not one read-only SELECT over the bank's tables (several
    statements, a COPY, an ATTACH, a file outside the bank); it ran nothing and wrote nothing.

    >>> print(SqlRefused("COPY (SELECT 1) TO 'out.csv'", "statement type COPY"))
    SQL "COPY (SELECT 1) TO 'out.csv'": refused (statement type COPY); kb sql runs exactly one read-only SELECT (WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE) over the views entries, edges, events, triples, usage, and reads or writes no file
    """

    def __init__(self, query: str, rule: str):
        self.query, self.rule = query, rule
        shown = repr(query) if len(query) <= 200 else repr(query[:197] + "...")
        super().__init__(f"SQL {shown}: refused ({rule}); kb sql runs exactly one read-only SELECT (WITH, FROM, "
                         "VALUES, DESCRIBE, SHOW, SUMMARIZE) over the views entries, edges, events, triples, usage, "
                         "and reads or writes no file")


class UnsafePath(KbError, ValueError):
    """A path in a bank's manifest (or a file in its folders) that would lead outside the bank."""

    def __init__(self, rel):
        super().__init__(f"{rel}: a bank file must be a relative path inside the bank folder "
                         "(no '..', no absolute path, no symlink)")


class StorageError(KbError, OSError):
    """The file system refused a write (read-only, permission, disk full, a folder where a file
    should be): names the path, the errno and what to do. The write did not happen.

    >>> print(StorageError("banks/eng/.lock", 21, "Is a directory"))
    banks/eng/.lock: Is a directory (errno EISDIR): a folder is where kbtools expects a file; remove or rename it
    """

    _HINTS = {
        "ENOSPC": "the disk is full; free some space and write again",
        "EFBIG": "the file system refused a file this large (disk quota or size limit); free space or raise the limit",
        "EDQUOT": "the disk quota is exhausted; free some space and write again",
        "EROFS": "the file system is read-only; open the bank with readonly=True / --readonly to read it",
        "EACCES": "no permission to write here; open the bank with readonly=True / --readonly to read it",
        "EPERM": "no permission to write here; open the bank with readonly=True / --readonly to read it",
        "EISDIR": "a folder is where kbtools expects a file; remove or rename it",
        "ENOTDIR": "a file is where kbtools expects a folder; remove or rename it",
    }

    def __init__(self, path, errno_: int | None, strerror: str):
        import errno as _errno

        self.path = str(path)
        name = _errno.errorcode.get(errno_ or -1, "")
        hint = self._HINTS.get(name, "")
        super().__init__(f"{path}: {strerror}" + (f" (errno {name})" if name else "") + (f": {hint}" if hint else ""))
        self.errno, self.strerror, self.filename = errno_, strerror, str(path)

