"""A persistent cache of entry vectors by text hash, per embedder, so that rebuilding a bank (or a
second copy of it) does not embed the same texts again. Files live under ``$KBTOOLS_CACHE`` (default
``~/.cache/kbtools``)/vectors/<embedder>/ as shards of (hashes.npy, vectors.npy); the oldest shards
go first when the cache passes its size limit. Set ``KBTOOLS_EMBED_CACHE=0`` to turn it off. A shard
that does not load (truncated, garbage) is passed over: its texts are embedded again.

>>> import tempfile, numpy as np
>>> cache = EmbeddingCache("test-embedder", root=tempfile.mkdtemp())
>>> cache.put(np.array([7], dtype=np.uint64), np.ones((1, 4, 2), np.float32))
>>> found, vecs = cache.get(np.array([7, 8], dtype=np.uint64))
>>> found.tolist()
[True, False]
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np

__all__ = ["EmbeddingCache", "cache_root"]

MAX_BYTES = 1 << 30
#: Shards whose vectors file is under this size (a few entries' vectors) are merged once there are
#: MERGE_SMALL of them; a bank's embedding job writes one big shard, never rewritten by a merge.
SMALL_SHARD_BYTES = 1 << 20
MERGE_SMALL = 32
#: The hashes of each shard read by this process, with their sort order (shards are immutable).
_KEYS: dict[Path, tuple[np.ndarray, np.ndarray]] = {}
#: The shard list of each cache folder with the folder's (mtime, inode) it was listed at.
_LISTED: dict[Path, tuple[tuple[int, int], list[Path]]] = {}


def cache_root() -> Path:
    """Where kbtools keeps caches that outlive a bank (embedder tables, vectors by text hash)."""
    return Path(os.environ.get("KBTOOLS_CACHE") or Path.home() / ".cache" / "kbtools")


class EmbeddingCache:
    """Vectors (4 dimensions x d) by 64-bit text hash for one embedder."""

    def __init__(self, embedder: str, *, root: str | os.PathLike | None = None, max_bytes: int = MAX_BYTES,
                 enabled: bool = True):
        self.folder = Path(root or cache_root()) / "vectors" / embedder
        self.max_bytes = max_bytes
        self.enabled = enabled and os.environ.get("KBTOOLS_EMBED_CACHE", "1") != "0"

    def _shards(self) -> list[Path]:
        """The shards, oldest first; listed again only when the folder changed (its mtime), so a
        look-up per write does not list and stat every shard."""
        try:
            st = os.stat(self.folder)
        except OSError:
            return []
        key = (st.st_mtime_ns, st.st_ino)
        memo = _LISTED.get(self.folder)
        if memo is not None and memo[0] == key:
            return memo[1]
        shards = []
        for p in self.folder.glob("*.hashes.npy"):
            try:
                shards.append((p.stat().st_mtime, p))
            except OSError:
                continue  # removed by another process's trim meanwhile
        listed = [p for _, p in sorted(shards, key=lambda t: t[0])]
        _LISTED[self.folder] = (key, listed)
        return listed

    def _keys(self, shard: Path) -> tuple[np.ndarray, np.ndarray]:
        """A shard's hashes and their sort order, read once per process (shards never change)."""
        memo = _KEYS.get(shard)
        if memo is None:
            keys = np.load(shard)
            memo = _KEYS[shard] = (keys, np.argsort(keys))
        return memo

    def get(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(found mask, vectors for the found rows in order) for the given text hashes."""
        found = np.zeros(len(hashes), dtype=bool)
        if not self.enabled or len(hashes) == 0:
            return found, None
        out = None
        for shard in reversed(self._shards()):
            try:
                keys, order = self._keys(shard)
                if not len(keys):
                    continue
                pos = np.clip(np.searchsorted(keys, hashes, sorter=order), 0, len(keys) - 1)
                hit = (keys[order[pos]] == hashes) & ~found
                if not hit.any():
                    continue  # nothing here: the vectors file is never opened
                data = np.load(_vectors_of(shard), mmap_mode="r")
            except (OSError, ValueError, EOFError):  # a damaged shard is passed over: its texts are embedded
                continue
            if data.ndim < 2 or len(data) != len(keys):
                continue  # a shard whose two files do not match: passed over
            if hit.any():
                if out is None:
                    out = np.zeros((len(hashes), *data.shape[1:]), dtype=np.float32)
                if out.shape[1:] != data.shape[1:]:
                    continue
                out[hit] = data[order[pos[hit]]]
                found |= hit
            if found.all():
                break
        return found, (out[found] if out is not None else None)

    def put(self, hashes: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors for text hashes (a new shard; old shards beyond the size limit are removed)."""
        if not self.enabled or len(hashes) == 0:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tag = uuid.uuid4().hex[:12]
            for suffix, arr in ((".vectors.npy", np.asarray(vectors, np.float32)), (".hashes.npy", np.asarray(hashes, np.uint64))):
                tmp = self.folder / f".{tag}{suffix}.tmp"
                with open(tmp, "wb") as fh:
                    np.save(fh, arr)
                os.replace(tmp, self.folder / f"{tag}{suffix}")
            _LISTED.pop(self.folder, None)  # a change within the folder's mtime tick: list again
            self._merge_small()
            self._trim()
        except OSError:
            pass  # a cache that cannot be written is only a slower path

    def _merge_small(self) -> None:
        """Fold the small shards (one per single-entry write) into one once there are
        :data:`MERGE_SMALL` of them, so a lookup reads a bounded number of files."""
        small = [sh for sh in self._shards() if _vectors_of(sh).stat().st_size < SMALL_SHARD_BYTES]
        if len(small) < MERGE_SMALL:
            return
        keys, vecs = [], []
        for sh in small:
            try:
                k = np.load(sh)
                v = np.load(_vectors_of(sh))
            except (OSError, ValueError, EOFError):
                continue
            if vecs and v.shape[1:] != vecs[0].shape[1:]:
                continue
            keys.append(k)
            vecs.append(v)
        if not keys:
            return
        tag = uuid.uuid4().hex[:12]
        for suffix, arr in ((".vectors.npy", np.concatenate(vecs)), (".hashes.npy", np.concatenate(keys))):
            tmp = self.folder / f".{tag}{suffix}.tmp"
            with open(tmp, "wb") as fh:
                np.save(fh, arr)
            os.replace(tmp, self.folder / f"{tag}{suffix}")
        for sh in small:
            _KEYS.pop(sh, None)
            for p in (sh, _vectors_of(sh)):
                p.unlink(missing_ok=True)
        _LISTED.pop(self.folder, None)

    def _trim(self) -> None:
        shards = self._shards()
        sizes = [s.stat().st_size + _vectors_of(s).stat().st_size for s in shards]
        total = sum(sizes)
        for shard, size in zip(shards, sizes):
            if total <= self.max_bytes:
                break
            for p in (shard, _vectors_of(shard)):
                p.unlink(missing_ok=True)
            _KEYS.pop(shard, None)  # its hashes are no longer read: do not keep them
            _LISTED.pop(self.folder, None)
            total -= size


def _vectors_of(shard: Path) -> Path:
    """The vectors file beside a shard's hashes file."""
    return shard.with_name(shard.name.replace(".hashes.npy", ".vectors.npy"))
