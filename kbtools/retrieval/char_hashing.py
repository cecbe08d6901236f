"""Hashed character n-grams, as scikit-learn's ``HashingVectorizer(analyzer="char_wb")`` counts them,
without importing scikit-learn (whose import, with the SciPy and pandas modules it pulls in, would
outweigh a fresh process's first query on a bank embedded with ``hashing-char``).

The same counts, bit for bit: each text lower-cased, runs of white space made one space, each word
padded with a space on either side and cut into its character n-grams (a word shorter than ``n``
once, whole), each n-gram's UTF-8 bytes hashed by MurmurHash3 (x86, 32 bits, seed 0) into
``abs(h) % dim`` with the sign of ``h``. ASCII texts are cut and hashed as arrays (every n-gram of
one length at once); the others n-gram by n-gram.

>>> hashed_counts(["the cat"], 8).astype(int).tolist()
[[0, -1, 0, 1, 2, 1, 0, -1]]
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

__all__ = ["hashed_counts", "murmur3_32", "char_wb_grams"]

_WHITE = re.compile(r"\s\s+")
_LO, _HI = 3, 5  #: n-gram sizes (a padded word is at least 3 characters: each is cut at every size it reaches)
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_32(keys: np.ndarray, length: int) -> np.ndarray:
    """The signed MurmurHash3 (x86, 32 bits, seed 0) of each row of ``keys`` (uint8, ``(m, length)``).

    >>> int(murmur3_32(np.frombuffer(b"abc", np.uint8).reshape(1, 3), 3)[0])
    -1277324294
    """
    m = keys.shape[0]
    h = np.zeros(m, np.uint32)
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as the hash means it to
        blocks = length // 4
        if blocks:
            words = np.ascontiguousarray(keys[:, : 4 * blocks]).view("<u4")
            for b in range(blocks):
                k = _rotl(words[:, b].astype(np.uint32) * _C1, 15) * _C2
                h ^= k
                h = _rotl(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        if length & 3:
            k = np.zeros(m, np.uint32)
            for i in range((length & 3) - 1, -1, -1):
                k = (k << np.uint32(8)) | keys[:, 4 * blocks + i].astype(np.uint32)
            h ^= _rotl(k * _C1, 15) * _C2
        h ^= np.uint32(length)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def char_wb_grams(text: str) -> list[str]:
    """The character 3- to 5-grams of ``text``'s space-padded words, in scikit-learn's order.

    >>> char_wb_grams("To be")
    [' to', 'to ', ' to ', ' be', 'be ', ' be ']
    """
    out: list[str] = []
    for w in _WHITE.sub(" ", text.lower()).split():
        w = f" {w} "
        for n in range(_LO, _HI + 1):
            out.extend(w[i : i + n] for i in range(max(1, len(w) - n + 1)))
            if len(w) <= n:  # a word shorter than n is counted once, whole
                break
    return out


def hashed_counts(texts: Sequence[str], dim: int) -> np.ndarray:
    """float64 ``(len(texts), dim)``: each text's n-gram counts, signed, hashed into ``dim`` buckets."""
    hashes, owners = [], []
    padded, lengths, owner, wide = [], [], [], []
    for i, text in enumerate(texts):
        if not text.isascii():
            wide.append(i)
            continue
        words = _WHITE.sub(" ", text.lower()).split()
        if words:  # laid out as " w1  w2 " (each word padded), texts one byte apart
            padded.append(" " + "  ".join(words) + " ")
            lengths += [len(w) + 2 for w in words]
            owner += [i] * len(words)
    if padded:
        buffer = np.frombuffer(" ".join(padded).encode("ascii"), np.uint8)
        lengths_ = np.asarray(lengths, np.int64)
        owner_ = np.asarray(owner, np.int64)
        # a word starts where the one before ends, one byte more at each text's first word
        first = np.r_[True, owner_[1:] != owner_[:-1]]
        starts = np.cumsum(np.r_[0, lengths_[:-1]]) + np.cumsum(first) - 1
        for n in range(_LO, _HI + 1):
            has = lengths_ >= n  # a shorter word was counted whole at its own length
            if not has.any():
                continue
            count = lengths_[has] - n + 1
            at = np.repeat(starts[has] - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
            grams = np.lib.stride_tricks.sliding_window_view(buffer, n)[at]
            hashes.append(murmur3_32(np.ascontiguousarray(grams), n))
            owners.append(np.repeat(owner_[has], count))
    if wide:
        grams_of = [(i, g.encode("utf-8")) for i in wide for g in char_wb_grams(texts[i])]
        if grams_of:
            data = [g for _, g in grams_of]
            sizes = np.fromiter(map(len, data), np.int64, len(data))
            h = np.empty(len(data), np.int32)
            for size in np.unique(sizes).tolist():
                at = np.flatnonzero(sizes == size)
                keys = np.frombuffer(b"".join([data[j] for j in at.tolist()]), np.uint8).reshape(len(at), size)
                h[at] = murmur3_32(keys, size)
            hashes.append(h)
            owners.append(np.fromiter((i for i, _ in grams_of), np.int64, len(grams_of)))
    if not hashes:
        return np.zeros((len(texts), dim), np.float64)
    h = np.concatenate(hashes).astype(np.int64)  # abs(-2**31) is 2**31 here, as scikit-learn defines it
    cells = np.concatenate(owners) * dim + np.abs(h) % dim
    counts = np.bincount(cells, weights=np.where(h >= 0, 1.0, -1.0), minlength=len(texts) * dim)
    return counts.reshape(len(texts), dim)
