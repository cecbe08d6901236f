"""The writers' lock runs on a platform without fcntl: the portable backend (filelock) holds it,
names its holder in a sidecar, and ``import kbtools`` never needs fcntl."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kbtools as kb
from kbtools.store import lock

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra):
    return dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1", **extra)


def test_kbtools_imports_and_writes_without_fcntl(tmp_path):
    """What Windows sees: no fcntl module at all."""
    script = textwrap.dedent(f"""
        import sys
        sys.modules["fcntl"] = None  # `import fcntl` now raises ImportError, as on Windows
        import kbtools as kb
        from kbtools.store.lock import lock_backend
        bank = kb.create_bank({str(tmp_path / "b")!r}, settings={{"auto_link": False}})
        kb.report_learning(bank, content="A fact written without fcntl.", actor="x")
        print(lock_backend(), kb.open_bank(bank.path).entries.height)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["portable", "1"]
    assert (tmp_path / "b" / ".lock.holder").exists()


def test_portable_lock_waits_names_the_holder_and_frees_on_death(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOLS_LOCK", "portable")
    assert lock.lock_backend() == "portable"
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from kbtools.store.lock import flock_file
            with flock_file(Path({str(bank.path / ".lock")!r}), timeout=5, actor="holder-job", busy=RuntimeError):
                print("held", flush=True)
                time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True, env=_env(KBTOOLS_LOCK="portable"))
    try:
        assert holder.stdout.readline().strip() == "held"
        slow = kb.open_bank(bank.path, lock_timeout=0.2)
        with pytest.raises(kb.BankLocked, match=r"locked by pid \d+ .* for holder-job since .*gave up after 0.2 s"):
            kb.report_learning(slow, content="A fact that must wait.", actor="x")
        assert slow.reload().version == 0
        holder.kill()  # the kernel frees the lock of a killed holder
        holder.wait(timeout=30)
        kb.report_learning(kb.open_bank(bank.path, lock_timeout=5), content="A fact after the holder died.", actor="x")
        assert kb.open_bank(bank.path).entries.height == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_both_backends_exclude_each_other(tmp_path, monkeypatch):
    """On Linux filelock also flocks: a bank shared by both backends stays single-writer."""
    path = tmp_path / ".lock"
    with lock.flock_file(path, timeout=1, actor="flock", busy=RuntimeError):
        monkeypatch.setenv("KBTOOLS_LOCK", "portable")
        with pytest.raises(RuntimeError):
            with lock.flock_file(path, timeout=0.1, actor="portable", busy=RuntimeError):
                pass
