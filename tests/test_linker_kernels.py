"""The compiled loops (``kbtools.linker.kernels``, the ``fast`` extra): the numpy steps' bits on a
generated and on the real PEP bank, and only once a big connect warms them (a small write never
imports numba). A connect's plans with and without them: tests/test_linker_paths.py."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from kbtools.demo import synthetic_bank
from kbtools.linker import TermStats, evidence, kernels
from kbtools.linker.pipeline import KERNELS_FROM, use_kernels
from kbtools.linker.planning import PlanContext
from kbtools.linker.rules import LINKER_DEFAULTS

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed (the `fast` extra)")


def _synthetic():
    return synthetic_bank(entries=3000, seed=5).entries


def _peps(tmp_path):
    from kbtools.demo.peps import PEPS_FILE, build_peps_bank

    src = tmp_path / "slice.jsonl.gz"
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
        for k, line in enumerate(fh):
            if k % 6 == 0:  # about 120 PEPs: long sections, many shared terms a pair
                out.write(line)
    return build_peps_bank(tmp_path / "bank", source=src)[0].entries


@pytest.mark.parametrize("source", ["synthetic", "peps"])
def test_the_compiled_steps_give_the_numpy_steps_bits(source, tmp_path, monkeypatch):
    entries = _synthetic() if source == "synthetic" else _peps(tmp_path)
    stats = TermStats.build(entries)
    ctx = PlanContext.open(entries, None, None, stats, LINKER_DEFAULTS, None, None, None, None)
    n = len(stats.ids)
    rng = np.random.default_rng(1)
    # some entries linked before (every row sees them), some closed (none does): every visibility rule
    linked = rng.random(n) < 0.3
    open_ = ctx.open_ & (rng.random(n) > 0.05)
    order = np.argsort(stats.rank, kind="stable")
    assert kernels.warm() and evidence.compiled_kernels() is not None
    most_shared = 0
    for start in range(0, n, 512):
        rows = order[start : start + 512]
        got = {}
        for mode in ("fast", "numpy"):
            monkeypatch.setenv("KB_KERNELS", "" if mode == "fast" else "numpy")
            assert (evidence.compiled_kernels() is not None) == (mode == "fast")
            pairs = evidence.candidate_pairs(stats, rows, rel=ctx.rel, open_=open_, linked=linked,
                                             settings=LINKER_DEFAULTS)
            ev = evidence.pair_evidence(stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=LINKER_DEFAULTS)
            got[mode] = pairs, ev
        for fast, slow in zip(got["fast"], got["numpy"]):
            assert fast.keys() == slow.keys()
            for key in fast:
                assert np.array_equal(fast[key], slow[key], equal_nan=True), (start, key)
        most_shared = max(most_shared, int(got["fast"][1]["shared_n"].max(initial=0)))
        assert len(got["fast"][0]["m"]) > 512
    # sums of many terms, where the order of a running sum shows in the last bits
    assert most_shared >= 9


def test_equal_votes_keep_the_newer_entries_and_the_cut_holds():
    # one voting term held by 12 entries (ranks = rows): the best 5 of a row at rank 10 are the
    # newest it sees, 9..5; rows from the cut on are never read
    n = 12
    indptr, indices = np.array([0, n]), np.arange(n, dtype=np.int32)
    joined = kernels.joined_parts([(indptr, indices, np.ones(n))])
    seen = kernels.visibility(np.arange(n), np.arange(n))
    r, c, pos = kernels.best_votes(np.array([0, 1]), np.array([0]), np.array([2.0]), joined, n, np.array([10]),
                                   np.array([10]), seen, n, 5)
    assert c.tolist() == [9, 8, 7, 6, 5] and pos.tolist() == [0, 1, 2, 3, 4] and r.tolist() == [0] * 5
    _, c, _ = kernels.best_votes(np.array([0, 1]), np.array([0]), np.array([2.0]), joined, 7, np.array([10]),
                                 np.array([10]), seen, n, 5)
    assert c.tolist() == [6, 5, 4, 3, 2]
    want = evidence._best(np.zeros(10, np.int64), np.arange(10), np.full(10, 2.0), 5, np.arange(n), 1)[1]
    assert want.tolist() == [9, 8, 7, 6, 5]


def test_a_negative_value_is_refused_and_the_numpy_steps_run():
    with pytest.raises(ValueError, match="negative"):
        kernels.joined_parts([(np.array([0, 2]), np.array([0, 1], np.int32), np.array([1.0, -1.0]))])
    joined = kernels.joined_parts([(np.array([0, 2]), np.array([0, 1], np.int32), np.array([1.0, 1.0]))])
    with pytest.raises(ValueError, match="negative"):
        kernels.best_votes(np.array([0, 1]), np.array([0]), np.array([-1.0]), joined, 2, np.array([1]),
                           np.array([1]), kernels.visibility(np.arange(2), np.arange(2)), 2, 1)


def test_only_a_big_connect_uses_them_and_a_small_write_never_imports_numba(tmp_path, monkeypatch):
    monkeypatch.delenv("KB_KERNELS", raising=False)
    assert not use_kernels(KERNELS_FROM - 1) and use_kernels(KERNELS_FROM)
    monkeypatch.setenv("KB_KERNELS", "numpy")
    assert not use_kernels(KERNELS_FROM) and not kernels.available() and evidence.compiled_kernels() is None
    code = ("import sys, kbtools as kb\n"
            "bank = kb.create_bank(sys.argv[1])\n"
            "for i in range(12):\n"
            "    kb.report_learning(bank, content=f'Deploy gate {i} needs the canary flag set.', actor='x')\n"
            "print((bank.edges['source'] == 'auto').sum(), 'numba' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "KB_KERNELS"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "b")], capture_output=True, text=True,
                         timeout=300, env={**env, "ORT_DISABLE_TELEMETRY": "1"})
    assert out.returncode == 0, out.stderr
    links, imported = out.stdout.split()
    assert int(links) > 0 and imported == "False"  # linked at write time, with the numpy steps


def test_a_failing_compile_warns_and_leaves_the_numpy_steps(monkeypatch):
    def broken(*args):
        raise RuntimeError("LLVM says no")

    monkeypatch.setattr(kernels, "_warmed", False)
    monkeypatch.setattr(kernels, "_shared", broken)
    with pytest.warns(RuntimeWarning, match="numpy steps run instead"):
        assert kernels.warm() is False
    assert not kernels.ready() and evidence.compiled_kernels() is None


def test_without_a_writable_cache_the_loops_compile_in_the_process(monkeypatch):
    numba = kernels.numba
    real = numba.njit

    def njit(*args, **options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")  # what numba raises then
        return real(*args, **options)

    monkeypatch.setattr(numba, "njit", njit)

    def twice(x):
        return 2 * x

    assert kernels._jit()(twice)(21) == 42
