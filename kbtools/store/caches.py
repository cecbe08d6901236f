"""Derived caches: files a bank keeps under ``cache/`` that are built from its tables or
vectors (the query and linker indexes, the linker's anchors, layouts), each sealed with the
fingerprint of what it was built from, so that a stale, damaged or foreign cache is never used:
it is rebuilt, silently (a cache is derived: nothing in it is lost, and no reader ever raises
:class:`~kbtools.errors.BankDamaged` for one). A read-only bank writes none. The caches held in memory are ``Bank.derived``.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
>>> write_cache(bank, "x.bin", "fp1", b"abc")
>>> read_cache(bank, "x.bin", "fp1"), read_cache(bank, "x.bin", "fp2")
(b'abc', None)
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kbtools.model.schema import TABLES

from kbtools.store.files import atomic_write_bytes, content_hash, read_json
from kbtools.store.vectors import continued, segment_ids

if TYPE_CHECKING:  # the bank imports this module
    from kbtools.store.bank import Bank

__all__ = ["DerivedValues", "fingerprint_of", "read_cache", "write_cache", "cache_file", "cached_file_meta", "write_cache_file",
           "reseal_cache_file", "carry_caches", "SEAL_SPAN"]


def fingerprint_of(manifest: dict, on: tuple[str, ...] = TABLES, *, usage_signature: tuple = (),
                   changed_outside: dict | None = None) -> str:
    """A short fingerprint of what ``manifest`` names for the tables ``on`` (and ``"vectors"``,
    ``"usage-log"``: the pending usage logs, by ``usage_signature``), with the files changed
    outside kbtools (``changed_outside``): it changes exactly when what they hold changes. What
    ``Bank.fingerprint`` gives; seals and in-memory caches are keyed by it.

    >>> m = {"tables": {"entries": ["tables/entries/1.parquet"]}}
    >>> fingerprint_of(m, ("entries",)) == fingerprint_of(m, ("entries",)) != fingerprint_of(m, ("edges",))
    True
    """
    parts = []
    for name in on:
        if name == "vectors":
            parts.append([s["data"] for s in (manifest.get("vectors") or {}).get("segments", [])])
        elif name == "usage-log":
            parts.append(list(usage_signature))
        else:
            parts.append(manifest["tables"].get(name, []))
    parts.append(sorted((changed_outside or {}).items()))
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


class DerivedValues:
    """Values computed from a snapshot, by name, each kept with the fingerprint it was built on
    (what ``Bank.derived`` keeps in memory).

    >>> memo = DerivedValues()
    >>> memo.get("n", "fp1", lambda: 1), memo.get("n", "fp1", lambda: 2), memo.get("n", "fp2", lambda: 3)
    (1, 1, 3)
    >>> memo.get("n", "fp3", lambda prior: prior + 1, grow=True)
    4
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[str, tuple[str, object]] = {}

    def get(self, name: str, key: str, build: Callable[..., object], *, grow: bool = False, keep: bool = True) -> object:
        """The value of ``name`` if it was built on ``key``; else ``build()`` (with ``grow``:
        ``build(previous value or None)``), kept unless ``keep`` is false."""
        hit = self._values.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        value = build(hit[1] if hit is not None else None) if grow else build()
        if keep:
            self._values[name] = (key, value)
        return value


def _cache_group(path: Path) -> list[Path]:
    """A cache file and its siblings (``name`` and ``name.*``), without the seal."""
    return sorted(p for p in path.parent.glob(path.name + "*")
                  if p.is_file() and not p.name.endswith(".json") and not p.name.endswith(".tmp"))


#: the bytes at each end of a cache file that its seal hashes (unless the seal says otherwise)
SEAL_SPAN = 1 << 20


def _file_seal(path: Path, whole: bool = False, span: int = SEAL_SPAN) -> list:
    """``[size, mtime_ns, hash of the first and last span bytes (a MiB)]``: enough to see a file
    was changed; ``whole``: a hash of every byte instead, read a MiB at a time (the file is never
    held whole)."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        if whole:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        else:
            h.update(fh.read(span))
            if st.st_size > span:
                fh.seek(max(st.st_size - span, span))
                h.update(fh.read(span))
    return [st.st_size, st.st_mtime_ns, h.hexdigest()]


def _seal_span(info: dict) -> int:
    span = info.get("span", SEAL_SPAN)
    return span if isinstance(span, int) and span > 0 else SEAL_SPAN

def read_cache(bank: Bank, name: str, fingerprint: str) -> bytes | None:
    """The bytes of a derived artefact if it was built from ``fingerprint``; None otherwise
    (a stale or foreign cache is never returned)."""
    path = bank.path / "cache" / name
    meta = path.with_name(path.name + ".json")
    try:
        info = read_json(meta)
        if not isinstance(info, dict) or info.get("fingerprint") != fingerprint:
            return None
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    if info.get("blake2b") != hashlib.blake2b(data, digest_size=16).hexdigest():
        return None  # truncated, flipped or foreign bytes: rebuilt, never used
    return data

def write_cache(bank: Bank, name: str, fingerprint: str, data: bytes) -> None:
    """Store a derived artefact with the fingerprint of what it was built from (atomic); a
    read-only bank keeps it in memory only (nothing is written)."""
    if bank.readonly:
        return
    folder = bank.path / "cache"
    try:
        folder.mkdir(exist_ok=True)
        atomic_write_bytes(folder / name, data)
        meta = {"fingerprint": fingerprint, "blake2b": hashlib.blake2b(data, digest_size=16).hexdigest()}
        atomic_write_bytes(folder / f"{name}.json", json.dumps(meta).encode())
    except OSError:  # a read-only file system, a full disk: kept in memory only, built again later
        pass


def cache_file(bank: Bank, name: str, fingerprint: str) -> Path | None:
    """The path of a derived file written by :func:`write_cache_file` if it was built from
    ``fingerprint`` and is as it was written (size, mtime and a hash of its first and last MiB
    recorded beside it: a file rewritten, truncated or replaced since is never returned, and
    checking it reads 2 MiB, not the whole file); None otherwise.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> write_cache_file(bank, "x.bin", "fp1", lambda p: p.write_bytes(b"abc"))
    >>> cache_file(bank, "x.bin", "fp1").read_bytes(), cache_file(bank, "x.bin", "other")
    (b'abc', None)
    """
    found = _sealed(bank, name)
    return found[0] if found is not None and found[1] == fingerprint else None

def cached_file_meta(bank: Bank, name: str) -> tuple[Path, str, dict] | None:
    """``(path, fingerprint, meta)`` of a derived file written by :func:`write_cache_file`,
    whatever snapshot it was built from, when it is as it was written (the seal checked as by
    :func:`cache_file`); None otherwise. For caches that can be brought up to date from an
    earlier snapshot (an index grown by the entries added since).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> write_cache_file(bank, "x.bin", "fp1", lambda p: p.write_bytes(b"abc"), meta={"rows": 3})
    >>> cached_file_meta(bank, "x.bin")[1:]
    ('fp1', {'rows': 3})

    None while a file of the bank's snapshot was changed outside kbtools (``Bank.changed_outside``):
    what was built over an earlier snapshot may have read the old bytes, which no fingerprint of it
    names (a cache for the snapshot as it is now is found by :func:`cache_file`).
    """
    if getattr(bank, "changed_outside", None):
        return None
    return _sealed(bank, name)


def _sealed(bank: Bank, name: str) -> tuple[Path, str, dict] | None:
    """``(path, fingerprint, meta)`` of the derived file ``name`` when it is as it was sealed."""
    path = bank.path / "cache" / name
    try:
        info = read_json(path.with_name(path.name + ".json"))
        if not isinstance(info, dict):
            return None  # a damaged seal: the cache is rebuilt
        whole = bool(info.get("whole"))
        sealed, group = info.get("files"), _cache_group(path)
        if not isinstance(sealed, dict) or set(sealed) != {p.name for p in group}:
            return None
        for p in group:
            now, was = _file_seal(p, whole, _seal_span(info)), sealed[p.name]
            if now != was and not _copied(bank, p, now, was, whole, info.get("full")):
                return None
    except (OSError, ValueError, TypeError):
        return None
    finally:
        seen = getattr(bank, "seen_files", None)
        if seen is not None:
            seen.save()  # what a copy's files were found to hold (nothing written unless hashed)
    return path, str(info.get("fingerprint")), dict(info.get("meta") or {})


def _copied(bank: Bank, path: Path, now: list, was, whole: bool, full) -> bool:
    """Whether a cache file whose seal differs in its time alone holds the bytes it was sealed with
    (a bank copied by a tool that does not keep times): a seal over every byte says so already;
    else the hash of every byte recorded at sealing is compared, once (``SeenFiles``)."""
    if not isinstance(was, list) or len(was) != 3 or now[0] != was[0] or now[2] != was[2]:
        return False  # its size or its sealed bytes differ
    if whole:
        return True
    content = full.get(path.name) if isinstance(full, dict) else None
    seen = getattr(bank, "seen_files", None)
    return isinstance(content, str) and seen is not None and seen.same(f"cache/{path.name}", was[0], content)

def write_cache_file(bank: Bank, name: str, fingerprint: str, write: Callable[[Path], None], *,
                     meta: dict | None = None, whole: bool = False, span: int = SEAL_SPAN) -> None:
    """Write a derived file with ``write(path)`` (it may write siblings ``path.*`` too), sealed
    with ``fingerprint`` and ``meta`` (JSON, read back by :func:`cached_file_meta`); what an
    older build left under the name is replaced. A read-only bank writes nothing.

    ``whole``: the seal hashes every byte (checked on each read, a MiB at a time), for a file
    whose damage would go unseen by its reader; else its first and last ``span`` bytes (a MiB;
    less for files a cold process checks on its first read).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> write_cache_file(bank, "x.bin", "fp1", lambda p: p.write_bytes(b"a" * 3_000_000), whole=True)
    >>> path = cache_file(bank, "x.bin", "fp1")
    >>> before = path.stat().st_mtime_ns
    >>> with open(path, "r+b") as f:  # one byte in the middle; its size and time kept
    ...     _ = f.seek(1_500_000); _ = f.write(b"b")
    >>> os.utime(path, ns=(before, before))
    >>> cache_file(bank, "x.bin", "fp1") is None
    True
    """
    if bank.readonly:
        return
    folder = bank.path / "cache"
    path = folder / name
    seal_path = path.with_name(path.name + ".json")
    tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}"
    try:
        folder.mkdir(exist_ok=True)
        try:
            seal_path.unlink()  # first unseal: a crash while writing leaves no seal over half a file
        except FileNotFoundError:
            pass
        write(tmp)  # written aside, then renamed: a reader that mapped the old file keeps it intact
        for part in sorted(folder.glob(tmp.name + "*")):
            os.replace(part, folder / (name + part.name[len(tmp.name):]))
        group = _cache_group(path)
        seal = {"fingerprint": fingerprint, "files": {p.name: _file_seal(p, whole, span) for p in group},
                "meta": meta or {}, **({"whole": True} if whole else {}),
                **({"span": span} if span != SEAL_SPAN else {})}
        if not whole:  # every byte's hash, read only where the file's time is found changed (a copied bank)
            seal["full"] = {p.name: content_hash(p) for p in group}
        atomic_write_bytes(seal_path, json.dumps(seal).encode())
    except OSError:  # a read-only file system, a full disk: the value is used unkept, built again later
        _drop(folder.glob(tmp.name + "*") if folder.is_dir() else ())


def _drop(paths) -> None:
    """Remove what a failed cache write left (as far as the file system lets us)."""
    for p in paths:
        try:
            p.unlink()
        except OSError:
            pass


def reseal_cache_file(bank: Bank, name: str, was: str, fingerprint: str, meta: dict) -> bool:
    """Seal the derived file ``name``, built from ``was`` and found to hold exactly what it would
    hold if built from ``fingerprint`` (a compaction rewrote the tables it was built from, not
    what they hold), as built from ``fingerprint`` with ``meta``: the next process reads it
    instead of bringing it up to date again. Only its seal is rewritten; nothing when the file is
    no longer as sealed or the bank is read-only. Returns whether it was resealed.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> write_cache_file(bank, "x.bin", "fp1", lambda p: p.write_bytes(b"abc"))
    >>> reseal_cache_file(bank, "x.bin", "fp1", "fp2", {}), cache_file(bank, "x.bin", "fp2") is not None
    (True, True)
    """
    if bank.readonly:
        return False
    path = bank.path / "cache" / name
    seal_path = path.with_name(path.name + ".json")
    try:
        info = read_json(seal_path)
        if not isinstance(info, dict) or info.get("fingerprint") != was or cached_file_meta(bank, name) is None:
            return False
        atomic_write_bytes(seal_path, json.dumps({**info, "fingerprint": fingerprint, "meta": meta}).encode())
    except (OSError, ValueError):
        return False
    return True



def carry_caches(bank: Bank, folded: list[dict], into: str) -> int:
    """Seal the cache files built over vector segments a compaction folded as built over the
    one segment they were folded into, which holds the same vectors: the query and neighbour
    indexes (whose seal's ``meta["segments"]`` names the segments they were built over, oldest
    first) are then read and grown, not rebuilt. A cache built over the first of the folded
    segments keeps the ids of the later ones as ``meta["appended_ids"]``: its reader treats
    them as it treats the ids of segments appended since (an entry among them that the cache
    holds was re-embedded: the cache is stale). Other seals are left as they are. Returns how
    many were carried over.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> write_cache_file(bank, "x.bin", "fp", lambda p: p.write_bytes(b"abc"), meta={"segments": ["v/1", "v/2"]})
    >>> carry_caches(bank, [{"data": "v/1"}, {"data": "v/2"}], "v/3"), cached_file_meta(bank, "x.bin")[2]
    (1, {'segments': ['v/3']})
    """
    folder = bank.path / "cache"
    if bank.readonly or not folder.is_dir():
        return 0
    carried = 0
    for seal_path in sorted(folder.glob("*.json")):
        try:
            info = read_json(seal_path)
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict):
            continue
        meta = info.get("meta")
        old = meta.get("segments") if isinstance(meta, dict) else None
        after = continued(folded, old) if "files" in info and isinstance(old, list) and old else None
        if after is None:
            continue
        try:  # after the commit: a seal that cannot be carried is left, its cache rebuilt
            later = [segment_ids(bank, seg) for seg in after]
            appended = sorted(set(meta.get("appended_ids") or []).union(*(ids.tolist() for ids in later)))
            info["meta"] = {**{k: v for k, v in meta.items() if k != "appended_ids"}, "segments": [into],
                            **({"appended_ids": appended} if appended else {})}
            atomic_write_bytes(seal_path, json.dumps(info).encode())
        except (OSError, ValueError):
            continue
        carried += 1
    return carried
