"""The manifest: ``manifest.json`` names the files that make up one version of a bank (the
segments of each table, the vector segments, the settings) and records the commit that wrote it.
A bank is the folder that ``bank.json`` says it is; :func:`read_manifest` checks that first.

>>> m = {"version": 3, "tables": {"entries": ["a"]}, "settings": {}}
>>> new_tag(4)[:9], stamp(copy_manifest(m), 4, actor="me", reason="why")["commit"]
('00000004-', {'actor': 'me', 'reason': 'why'})
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

import json

from kbtools.errors import BankDamaged, NotABank
from kbtools.store.files import atomic_write_bytes, read_json

__all__ = ["FORMAT", "FORMAT_VERSION", "SWEEP_AGE_S", "require_format", "utcnow", "read_manifest", "parse_manifest",
           "copy_manifest", "new_tag", "stamp"]

FORMAT = "kbtools-bank"
#: 2: a vector segment may store each distinct vector once (``codes``), which a kbtools of format 1
#: cannot read; a bank of format 1 becomes 2 when its first such segment is written
FORMAT_VERSION = 2
#: A file no manifest names any more stays this long (a reader's snapshot stays readable), as does
#: a temp file (a write may be in flight); the sweep removes it after.
SWEEP_AGE_S = 120.0


def require_format(root: Path, version: int) -> None:
    """Say in the bank's ``bank.json`` that it needs a kbtools of format ``version`` or later
    (before a file only those read is committed); a bank that says so already is left as it is."""
    meta_path = Path(root) / "bank.json"
    meta = read_json(meta_path)
    if int(meta.get("version", 0)) < version:
        atomic_write_bytes(meta_path, json.dumps({**meta, "version": version}, indent=1).encode())


def utcnow() -> datetime:
    """The current time in UTC, at the bank's resolution (microseconds).

    >>> utcnow().tzinfo is not None
    True
    """
    return datetime.now(timezone.utc)


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of the bank at ``path`` (its segment lists), after checking the folder is a bank.

    >>> read_manifest("/nonexistent")
    Traceback (most recent call last):
    ...
    kbtools.errors.NotABank: /nonexistent is not a kbtools bank: the folder does not exist
    """
    root = Path(path)
    meta_path = root / "bank.json"
    if not root.exists():
        raise NotABank(root, "the folder does not exist")
    if not root.is_dir():
        raise NotABank(root, "it is a file, not a folder")
    if not meta_path.exists():
        raise NotABank(root, "no bank.json in it")
    try:
        meta = read_json(meta_path)
    except (OSError, ValueError) as err:
        raise NotABank(root, f"bank.json is unreadable ({err})") from None
    if meta.get("format") != FORMAT:
        raise NotABank(root, f"bank.json says format={meta.get('format')!r}, expected {FORMAT!r}")
    if int(meta.get("version", 0)) > FORMAT_VERSION:
        raise NotABank(root, f"format version {meta.get('version')} is newer than this kbtools ({FORMAT_VERSION})")
    try:
        raw = (root / "manifest.json").read_bytes()
    except FileNotFoundError:
        raise BankDamaged(root, "manifest.json", "missing") from None
    except (PermissionError, IsADirectoryError):
        raise  # the file system's answer, said as it is
    except OSError as err:
        raise BankDamaged(root, "manifest.json", f"unreadable: {err.strerror or err}") from None
    return parse_manifest(root, raw)


def parse_manifest(root: str | os.PathLike, raw: bytes) -> dict:
    """The manifest in the bytes ``raw`` of the bank at ``root``'s ``manifest.json``: the one door
    every reader of a manifest goes through. Bytes that are not a JSON object naming the segment
    lists of the tables raise :class:`~kbtools.errors.BankDamaged`.

    >>> parse_manifest("b", b'{"version": 1, "tables": {"entries": []}}')["version"]
    1
    >>> parse_manifest("b", b'{"vers')
    Traceback (most recent call last):
    ...
    kbtools.errors.BankDamaged: b: manifest.json is damaged (not JSON: Unterminated string starting at: line 1 column 2 (char 1)): run `kb check b` to see what is wrong and `kb repair b` to roll back to the newest version whose files are whole
    """
    try:
        manifest = json.loads(raw)
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError both
        raise BankDamaged(root, "manifest.json", f"not JSON: {err}") from None
    if not isinstance(manifest, dict):
        raise BankDamaged(root, "manifest.json", f"a JSON {type(manifest).__name__}, not an object")
    tables = manifest.get("tables")
    if not isinstance(tables, dict) or not all(isinstance(v, list) for v in tables.values()):
        raise BankDamaged(root, "manifest.json", "it names no segment lists of the tables")
    return manifest


def copy_manifest(manifest: dict) -> dict:
    """A copy of ``manifest`` that a commit may change (its segment lists, vector info and settings
    are new objects; the files it records are replaced, never changed): without a JSON round trip,
    whose cost grows with every segment the manifest names.

    >>> m = {"tables": {"entries": ["a"]}, "vectors": {"segments": [{"data": "v"}]}, "settings": {}}
    >>> c = copy_manifest(m); c["tables"]["entries"].append("b"); c["vectors"]["segments"].append({})
    >>> m["tables"]["entries"], len(m["vectors"]["segments"])
    (['a'], 1)
    """
    out = dict(manifest)
    out["tables"] = {t: list(segs) for t, segs in (manifest.get("tables") or {}).items()}
    if isinstance(manifest.get("vectors"), dict):
        vectors = out["vectors"] = dict(manifest["vectors"])
        vectors["segments"] = [dict(seg) for seg in vectors.get("segments", [])]
    out["settings"] = dict(manifest.get("settings") or {})
    return out


def new_tag(version: int) -> str:
    """The name stem of the files the commit of ``version`` writes: the version, then a random
    suffix (two writers that both crashed never collide)."""
    return f"{version:08d}-{uuid.uuid4().hex[:6]}"


def stamp(manifest: dict, version: int, *, actor: str | None, reason: str | None) -> dict:
    """``manifest`` marked as ``version``, committed now by ``actor`` for ``reason``."""
    manifest["version"] = version
    manifest["committed_at"] = utcnow().isoformat()
    manifest["commit"] = {"actor": actor, "reason": reason}
    return manifest
