"""The files of a bank folder: atomic writes (temp name, fsync, rename), every path a manifest names resolves inside the bank (no symlink
followed out of it), every committed file carries its size, mtime and a content hash, and the last
manifests are kept so that a damaged bank can be rolled back.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "tables").mkdir()
>>> inside(root, "tables/x.parquet").name
'x.parquet'
>>> inside(root, "../../etc/hostname")
Traceback (most recent call last):
...
kbtools.errors.UnsafePath: ../../etc/hostname: a bank file must be a relative path inside the bank folder (no '..', no absolute path, no symlink)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from pathlib import Path

import numpy as np
import polars as pl

from kbtools.errors import UnsafePath
from kbtools.store.lock import fsync_dir, fsync_paths

__all__ = ["inside", "digest", "HISTORY", "KEEP_MANIFESTS", "history", "write_history", "manifest_files",
           "temp_files", "symlinks", "changed_files", "atomic_write_bytes", "write_parquet", "write_npy", "read_json",
           "RETIRED_LOG", "log_retired", "read_retired", "rewrite_retired", "VECTOR_FILES", "content_hash",
           "SEEN_FILES", "SeenFiles"]

#: the folder of the bank that keeps the last manifests, one file per version
HISTORY = "manifests"
#: how many committed manifests are kept for ``kb repair``
KEEP_MANIFESTS = 20


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True, synced_with: list[Path] = ()) -> None:
    """Write ``data`` to ``path`` atomically (temp name, rename); with ``durable`` the bytes are
    fsynced before the rename and the folder after it. ``synced_with``: files (and folders) that
    must be durable before the rename, fsynced together with the temp file.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> atomic_write_bytes(target, b"{}"); target.read_bytes()
    b'{}'
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
    fsync_paths([tmp, *synced_with] if durable else synced_with)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def write_parquet(frame: pl.DataFrame, path: Path, *, durable: bool = True) -> None:
    """Write a segment: ``frame`` as zstd Parquet with statistics, under a temp name renamed into
    place (fsynced first with ``durable``)."""
    tmp = path.with_name(f".{path.name}.tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    if durable:
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_npy(array: np.ndarray, path: Path, *, durable: bool = True) -> None:
    """Write a vector file: ``array`` as ``.npy`` (no pickles), under a temp name renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        if durable:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


#: the log of the files commits retired (one JSON line per commit: when, and which), read by the sweep
RETIRED_LOG = "retired.jsonl"


def log_retired(root: Path, files, at: float, earlier: dict | None = None) -> None:
    """Append to the bank's retired log that ``files`` (relative paths) left the manifest at ``at``
    (and ``earlier``: name -> time, what a manifest of an older kbtools listed itself). One line
    appended per commit, never the whole list rewritten: a burst of writes keeps its manifest small.
    Not fsynced: a line lost in a power cut leaves the sweep the file's own age to go by.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> log_retired(root, ["tables/a.parquet"], 5.0); log_retired(root, ["v.npy"], 6.0, {"old.npy": 1.0})
    >>> sorted(read_retired(root).items())
    [('old.npy', 1.0), ('tables/a.parquet', 5.0), ('v.npy', 6.0)]
    """
    text = _retired_lines(earlier or {}) + _retired_lines(dict.fromkeys(files, at))
    if text:
        with open(root / RETIRED_LOG, "a", encoding="utf-8") as fh:
            fh.write(text)


def _retired_lines(retired: dict) -> str:
    """``retired`` (name -> time) as the log's lines: one a time, its names sorted."""
    by_time: dict = {}
    for name, at in retired.items():
        by_time.setdefault(float(at), []).append(name)
    return "".join(json.dumps({"at": t, "files": sorted(names)}, separators=(",", ":")) + "\n"
                   for t, names in sorted(by_time.items()))


def read_retired(root: Path) -> dict[str, float]:
    """The retired log of the bank at ``root``: each file's latest retirement time (a line a crash
    cut short is skipped)."""
    out: dict[str, float] = {}
    try:
        with open(root / RETIRED_LOG, encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                    at, files = float(entry["at"]), entry["files"]
                except (ValueError, TypeError, KeyError):
                    continue
                for name in files if isinstance(files, list) else ():
                    if isinstance(name, str):
                        out[name] = max(at, out.get(name, at))
    except FileNotFoundError:
        pass
    return out


def rewrite_retired(root: Path, retired: dict[str, float]) -> None:
    """Replace the retired log by ``retired`` (name -> time; the sweep keeps the files still there)."""
    if not retired and not (root / RETIRED_LOG).exists():
        return
    atomic_write_bytes(root / RETIRED_LOG, _retired_lines(retired).encode(), durable=False)


def read_json(path: Path) -> dict:
    """The JSON object in the file at ``path``."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def inside(root: Path, rel: str) -> Path:
    """``root / rel`` after checking that ``rel`` stays inside the bank: relative, without ``..``,
    and crossing no symlink (a symlinked folder or file could lead anywhere)."""
    if not isinstance(rel, str) or not rel or os.path.isabs(rel) or "\\" in rel:
        raise UnsafePath(rel)
    parts = Path(rel).parts
    if any(p in ("..", ".", "") for p in parts):
        raise UnsafePath(rel)
    path = root
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise UnsafePath(rel)
    return path


def digest(path: Path) -> list:
    """``[size, mtime_ns, blake2b-128 hex]`` of a file: what a manifest records of each file it names."""
    content = content_hash(path)
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, content]


def content_hash(path: Path) -> str:
    """The blake2b-128 hex of a file's bytes, read a MiB at a time (never held whole)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: the record, in a bank's ``cache/``, of files found with other times than recorded but the same bytes
SEEN_FILES = "seen-files.json"


class SeenFiles:
    """Files whose modification time is not the one recorded but whose bytes are: a bank copied by
    a tool that does not keep times (``cp -r``, an object store, a checkout). Whether such a file
    is as recorded is told by hashing it once; what was found is kept (path -> ``[size,
    mtime_ns, hash]``) in ``cache/seen-files.json``, so that a later process stats it only. A file
    changed again gets another time and is hashed again.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); (root / "cache").mkdir(); f = root / "a"
    >>> _ = f.write_bytes(b"abc"); rec = digest(f); os.utime(f, ns=(1, 1))
    >>> seen = SeenFiles(root)
    >>> seen.same("a", rec[0], rec[2]), seen.hashed, SeenFiles(root).same("a", rec[0], rec[2])
    (True, 1, True)
    """

    def __init__(self, root: Path, *, keep: bool = True):
        self.root, self.keep, self.hashed = root, keep, 0
        try:
            held = read_json(root / "cache" / SEEN_FILES)
        except (OSError, ValueError):
            held = None
        self.files: dict = held if isinstance(held, dict) else {}
        self._dirty = False

    def same(self, rel: str, size: int, content: str) -> bool:
        """Whether file ``rel`` (under the bank's folder) holds ``size`` bytes hashing to
        ``content``, whatever its time says (False when it cannot be read)."""
        path = os.path.join(os.fspath(self.root), rel)
        try:
            st = os.stat(path)
            if st.st_size != size:
                return False
            if self.files.get(rel) == [st.st_size, st.st_mtime_ns, content]:
                return True
            self.hashed += 1
            if content_hash(Path(path)) != content:
                return False
        except OSError:
            return False
        self.files[rel] = [st.st_size, st.st_mtime_ns, content]
        self._dirty = True
        return True

    def forget(self, rels) -> None:
        """Drop what was found of these files (no longer named by the bank: retired by a compaction)."""
        for rel in rels:
            if self.files.pop(rel, None) is not None:
                self._dirty = True

    def save(self) -> None:
        """Keep what was found (nothing for a read-only bank; a failure only means hashing again)."""
        if not (self._dirty and self.keep):
            return
        self._dirty = False
        try:
            if (self.root / "cache").is_dir():
                atomic_write_bytes(self.root / "cache" / SEEN_FILES, json.dumps(self.files).encode(), durable=False)
        except OSError:
            pass


#: the files of a vector segment, by the key the manifest names each under (``codes`` only in a
#: segment that stores each distinct vector once, see ``vectors.CodedVectors``)
VECTOR_FILES = ("data", "codes", "ids", "hashes")


def manifest_files(manifest: dict) -> list[str]:
    """Every file a manifest names (table segments and vector segments), relative to the bank."""
    files = [p for segs in (manifest.get("tables") or {}).values() for p in segs]
    for seg in (manifest.get("vectors") or {}).get("segments", []):
        files += [seg[k] for k in VECTOR_FILES if seg.get(k)]
    return files


def history(root: Path) -> list[dict]:
    """The kept manifests, newest first (unreadable ones, and those naming no tables, left out)."""
    folder = root / HISTORY
    if not folder.is_dir() or folder.is_symlink():
        return []
    out = []
    for path in sorted(folder.glob("*.json"), reverse=True):
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and isinstance(manifest.get("tables"), dict):
            out.append(manifest)
    return out


def write_history(root: Path, manifest: dict, data: bytes) -> None:
    """Keep ``manifest`` (already serialised as ``data``) as ``manifests/<version>.json`` and drop
    all but the newest ``KEEP_MANIFESTS``.

    A copy, not a link to ``manifest.json``: damage written into that file in place must leave its
    history whole for ``kb repair``. A commit drops the one version that falls out of the window;
    every ``KEEP_MANIFESTS`` versions the folder is listed and anything older goes too (a gap, a
    restore), so a commit does not list the folder.
    """
    folder = root / HISTORY
    if folder.is_symlink():
        return
    folder.mkdir(exist_ok=True)
    version = int(manifest.get("version", 0))
    (folder / f"{version:010d}.json").write_bytes(data)
    if version % KEEP_MANIFESTS == 0:
        kept = sorted(folder.glob("*.json"))
        for old in kept[:-KEEP_MANIFESTS]:
            old.unlink(missing_ok=True)
    else:
        (folder / f"{version - KEEP_MANIFESTS:010d}.json").unlink(missing_ok=True)


def temp_files(root: Path, *, older_than: float = 0.0) -> list[Path]:
    """Temporary files (``.name.*.tmp``) in the bank's own folders, at least ``older_than`` seconds
    old: a write in flight has a fresh one, a crashed write leaves one behind."""
    out = []
    now = time.time()
    for folder in [root, root / "cache", root / "vectors", root / HISTORY, *(root / "tables").glob("*")]:
        if folder.is_dir() and not folder.is_symlink():
            for p in folder.iterdir():
                if p.name.startswith(".") and p.name.endswith(".tmp"):
                    try:
                        if now - p.stat().st_mtime >= older_than:
                            out.append(p)
                    except FileNotFoundError:
                        continue
    return sorted(out)


def symlinks(root: Path) -> list[str]:
    """Every symlink inside the bank folder (relative paths); a bank holds none."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def changed_files(root: Path, recorded: dict, checked: set[str], seen: SeenFiles | None = None) -> dict:
    """The files of ``recorded`` (a manifest's ``files``: path -> ``[size, mtime_ns, hash]``) whose
    size or bytes differ from what their commit recorded: rewritten by another tool, as path ->
    ``[size, mtime_ns]``. A bank puts them into every fingerprint, so no cache built before is used
    again. A file of the recorded size whose time alone differs is hashed (``seen``: once; without
    it, it counts as changed): a copied bank keeps its caches.

    A file found as recorded goes into ``checked`` and is not looked at again (segments are
    immutable: a reload stats only the files it has not checked yet, not every file of the bank);
    a bank opened later checks them all, so no cache it finds on disk was built over changed bytes.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); _ = (root / "a").write_bytes(b"x")
    >>> changed_files(root, {"a": [2, 0, "h"]}, set())
    {'a': [1, ...]}
    """
    out = {}
    base = os.fspath(root)
    if len(checked) > 2 * len(recorded) + 64:
        checked.intersection_update(recorded)
    for rel, (size, mtime_ns, content) in recorded.items():
        if rel in checked:
            continue
        try:
            st = os.stat(os.path.join(base, rel))
        except OSError:
            continue
        if st.st_size == size and (st.st_mtime_ns == mtime_ns or (seen is not None and seen.same(rel, size, content))):
            checked.add(rel)
        else:
            out[rel] = [st.st_size, st.st_mtime_ns]
    if seen is not None:
        seen.forget(rel for rel in list(seen.files) if not rel.startswith("cache/") and rel not in recorded)
        seen.save()
    return out
