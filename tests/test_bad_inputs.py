"""Every bad input a user can hand kbtools, in one table: each is refused with a named KbError
(or, at the command line, one line on stderr and the documented exit status), and nothing is
written: the bank's files and version are exactly as before.

A probe is one row of PROBES: ``kind`` says how it runs (``lib``: a library call that must raise
``error`` matching ``match``; ``proc``: a Python child process (a limit or a mount the test process
must not take on) that prints the error it got; ``cli``: ``kb`` as a subprocess that must exit with
``status`` and print one line matching ``match`` on stderr).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import ReadOnlyBank

ROOT = Path(__file__).resolve().parents[1]
KB = [sys.executable, "-m", "kbtools"]


def _env(**extra) -> dict:
    return dict(os.environ, ORT_DISABLE_TELEMETRY="1", PYTHONPATH=str(ROOT), **extra)


def _bank_files(path: Path) -> dict[str, int]:
    """Every file of a bank with its size, but the lock and the temp files a refused write may
    leave half-written (``.name.tmp``, never named by a manifest, swept later): what a write changes."""
    return {str(p.relative_to(path)): p.stat().st_size for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith(".lock") and not (p.name.startswith(".") and p.name.endswith(".tmp"))}


def _write(tmp: Path, name: str, data: str | bytes) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _line(obj) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


# ---- what the probes do -----------------------------------------------------------------------

def _import(name: str, data: str | bytes, table: str = "entries"):
    """A probe that imports ``data`` as the file ``name`` (written into the test's tmp folder)."""
    return lambda b, tmp: kb.import_files(b, **{table: _write(tmp, name, data)})


def _read_only_write(tmp: Path, bank: Path) -> subprocess.CompletedProcess:
    """A write on a bank whose file system is mounted read-only (a user namespace; no root needed)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not available to mount a read-only file system")
    script = _child("kb.report_learning(kb.open_bank(sys.argv[1]), content='A fact for a read-only bank.', actor='x')")
    cmd = f"mount --bind -o ro {bank} {bank} || exit 99; exec {sys.executable} -c \"$KB_CHILD\" {bank}"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, timeout=300,
                          env=_env(KB_CHILD=script))
    if proc.returncode == 99 or "unshare" in proc.stderr:
        pytest.skip(f"cannot mount read-only here: {proc.stderr.strip()[:200]}")
    return proc


def _disk_full_write(tmp: Path, bank: Path) -> subprocess.CompletedProcess:
    """A write that the file system refuses part-way (a file-size limit: EFBIG, what a full disk or
    an exhausted quota look like to the writer)."""
    script = _child(
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))\n"
        "kb.report_learning(kb.open_bank(sys.argv[1]), content='A fact written on a full disk. ' * 30, actor='x')"
    )
    return subprocess.run([sys.executable, "-c", script, str(bank)], capture_output=True, text=True, timeout=300,
                          env=_env())


def _child(body: str) -> str:
    return "import sys\nimport kbtools as kb\ntry:\n" + textwrap.indent(body, "    ") + (
        "\n    print('ACCEPTED')\nexcept kb.KbError as err:\n    print(f'{type(err).__name__}: {err}')\n")


def _kb(*args, close_stdout: bool = False) -> subprocess.CompletedProcess:
    if not close_stdout:
        return subprocess.run([*KB, *map(str, args)], capture_output=True, text=True, timeout=300, env=_env())
    # the reader goes away before kb writes (what `| head -1` does to a long output)
    proc = subprocess.Popen([*KB, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err.decode())


def _lock_is_a_folder(b):
    (b.path / ".lock").unlink(missing_ok=True)
    (b.path / ".lock").mkdir()
    kb.report_learning(b, content="A fact behind a broken lock.", actor="x")


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str  # lib | proc | cli
    run: Callable  # lib: fn(bank); proc: fn(tmp, bank path); cli: fn(tmp, bank path, ids)
    match: str
    error: type | None = None
    status: int | None = None


A, B = "a1b2c3d4", "b2c3d4e5"  # the two entries of the probe bank

PROBES = [
    # ---- item 7: raw tracebacks become named errors
    Probe("metadata that JSON cannot hold", "lib",
          lambda b, t: kb.report_learning(b, content="A fact with a set.", actor="x", metadata={"tags": {"a", "b"}}),
          r"metadata.*must be a JSON object: Object of type set", kb.ValidationError),
    Probe("evidence that JSON cannot hold", "lib",
          lambda b, t: kb.link(b, A, B, "cites", actor="x", evidence={"seen": {1, 2}}),
          r"evidence.*must be a JSON object: Object of type set", kb.ValidationError),
    Probe("a lone surrogate in text", "lib",
          lambda b, t: kb.report_learning(b, content="Broken " + chr(0xD800) + " text.", actor="x"),
          r"content=.*lone surrogate \\ud800 at position 7", kb.ValidationError),
    Probe("a lone surrogate in an imported line", "lib",
          _import("surrogate.jsonl", '{"id": "c3d4e5f6", "content": "Bad \\ud800 escape."}\n'),
          r"row 1: content=.*lone surrogate", kb.ValidationError),
    Probe("a latin-1 import file", "lib",
          _import("latin1.jsonl", _line({"id": "c3d4e5f6", "content": "Café au lait."}).encode("latin-1")),
          r"row 1: .*latin1.jsonl: not UTF-8 text \(byte 0xe9", kb.ValidationError),
    Probe("an undecodable import file", "lib",
          _import("binary.jsonl", b"\n\n\xff\xfe\x00garbage\n"),
          r"row 3: .*not UTF-8 text \(byte 0xff at column 1\)", kb.ValidationError),
    Probe("created_at 1e20 on import", "lib",
          _import("future.jsonl", _line({"id": "c3d4e5f6", "content": "From the far future.", "created_at": 1e20})),
          r"row 1: created_at=1e\+20: .*Unix seconds between the years 1 and 9999", kb.ValidationError),
    Probe("created_at 1e20 in report_learning", "lib",
          lambda b, t: kb.report_learning(b, content="From the far future.", actor="x", created_at=1e20),
          r"created_at=1e\+20", kb.ValidationError),
    Probe("both from and src columns", "lib",
          _import("both.jsonl", _line({"from": A, "src": B, "to": B, "type": "cites"}), "edges"),
          r"row 1: .*both 'from' and 'src' are given", kb.ValidationError),
    Probe("a garbage .parquet", "lib",
          _import("garbage.parquet", b"this is not parquet at all"),
          r"not a readable Parquet file", kb.ValidationError),
    Probe("a folder given as a file", "lib",
          lambda b, t: kb.import_files(b, entries=(t / "folder.jsonl").mkdir() or t / "folder.jsonl"),
          r"is a folder, not a file", kb.ValidationError),
    Probe("a .lock that is a folder", "lib", lambda b, t: _lock_is_a_folder(b),
          r"\.lock: Is a directory \(errno EISDIR\): a folder is where kbtools expects a file", kb.StorageError),
    Probe("a write on a bank opened read-only", "lib",
          lambda b, t: kb.report_learning(kb.open_bank(b.path, readonly=True), content="A fact.", actor="x"),
          r"the bank is open read-only", ReadOnlyBank),
    Probe("a write on a read-only file system (EROFS)", "proc", _read_only_write,
          r"StorageError: .*\.lock: Read-only file system \(errno EROFS\)"),
    Probe("a disk that refuses the write part-way", "proc", _disk_full_write,
          r"StorageError: .*File too large \(errno EFBIG\)"),
    Probe("export to an unwritable path", "lib",
          lambda b, t: kb.export_bank(b, _write(t, "a-file", "x") / "out"),
          r"a-file/out: cannot create the export folder .*errno ENOTDIR", kb.StorageError),
    Probe("kb export --to an unwritable path", "cli",
          lambda t, p: _kb("export", p, "--to", _write(t, "a-file", "x") / "out"),
          r"^kb export: .*a-file/out: cannot create the export folder", status=1),
    Probe("kb hubs --csv | head -1 (the reader goes away)", "cli",
          lambda t, p: _kb("hubs", p, "--csv", "--all", close_stdout=True), r"^$", status=0),
    Probe("--json and --csv together", "cli", lambda t, p: _kb("hubs", p, "--json", "--csv"),
          r'^\{"error": "UsageError", "message": "--json and --csv cannot be used together', status=2),
    Probe("an error under --json is a JSON object on stderr", "cli",
          lambda t, p: _kb("related", p, "deadbeef", "--json"),
          r'^\{"error": "EntryNotFound", "message": "entry deadbeef does not exist in this bank", "exit_status": 1',
          status=1),
    Probe("an error message without KeyError's quotes", "cli", lambda t, p: _kb("related", p, "deadbeef"),
          r"^kb related: entry deadbeef does not exist in this bank$", status=1),
    Probe("a bad import line at the command line", "cli",
          lambda t, p: _kb("import", p, "--entries", _write(t, "l1.jsonl", _line({"id": "c3d4e5f6", "content": "Café."})
                                                             .encode("latin-1"))),
          r"^kb import: row 1: .*not UTF-8 text", status=1),
    # ---- item 8: accepted although wrong, now refused
    Probe("update_entry(title=5)", "lib", lambda b, t: kb.update_entry(b, A, actor="x", title=5),
          r"title=5: title must be a string, not int", kb.ValidationError),
    Probe("update_entry(metadata=[1])", "lib", lambda b, t: kb.update_entry(b, A, actor="x", metadata=[1]),
          r"metadata=\[1\]: metadata must be a JSON object \(a dict or JSON text\), not list", kb.ValidationError),
    Probe("metadata that is a JSON list", "lib",
          lambda b, t: kb.report_learning(b, content="A fact.", actor="x", metadata="[1, 2]"),
          r"metadata must be a JSON object \(\{\.\.\.\}\), not a JSON list", kb.ValidationError),
    Probe("metadata holding NaN (a dict)", "lib",
          lambda b, t: kb.report_learning(b, content="A fact.", actor="x", metadata={"score": float("nan")}),
          r"NaN and Infinity are not JSON", kb.ValidationError),
    Probe("metadata holding NaN (JSON text)", "lib",
          lambda b, t: kb.report_learning(b, content="A fact.", actor="x", metadata='{"score": NaN}'),
          r"NaN and Infinity are not JSON", kb.ValidationError),
    Probe("weight=True", "lib", lambda b, t: kb.link(b, A, B, "see_also", actor="x", source="auto", weight=True),
          r"weight=True: weight is a number .* not bool", kb.ValidationError),
    Probe("usage_count=-5 on import", "lib",
          _import("neg.jsonl", _line({"id": "c3d4e5f6", "content": "A fact.", "usage_count": -5})),
          r"row 1: usage_count=-5: entries: usage_count is 0 or more", kb.ValidationError),
    Probe("invalid-JSON metadata on import", "lib",
          _import("meta.jsonl", _line({"id": "c3d4e5f6", "content": "A fact.", "metadata": "{not json"})),
          r"row 1: metadata='\{not json': metadata must be a JSON object: invalid JSON", kb.ValidationError),
    Probe("import rows count blank lines", "lib",
          _import("blank.jsonl", "\n\n" + _line({"id": "c3d4e5f6", "content": "A fact.", "kind": "poem"})),
          r"^row 3: kind='poem'", kb.ValidationError),
    Probe("a duplicate id names its own line", "lib",
          _import("dup.jsonl", _line({"id": "c3d4e5f6", "content": "One."}) + "\n"
                       + _line({"id": "d4e5f6a7", "content": "Two."}) + _line({"id": "c3d4e5f6", "content": "Three."})),
          r"^row 4: id='c3d4e5f6': entries: ids are unique in a bank; line 1 has the same id", kb.ValidationError),
    Probe("an imported id the bank holds", "lib",
          _import("held.jsonl", "\n" + _line({"id": A, "content": "Again."})),
          r"^row 2: id='a1b2c3d4': .*the bank already holds this id", kb.ValidationError),
]


@pytest.fixture
def probe_bank(tmp_path):
    b = kb.create_bank(tmp_path / "bank", settings={"auto_link": False})
    kb.ops.import_frames(b, entries=pl.DataFrame(
        {"id": [A, B], "content": ["The deploy job needs the registry token.", "The token expires after 30 days."]}))
    return b


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_a_bad_input_is_refused_by_name_and_writes_nothing(probe: Probe, probe_bank, tmp_path):
    before, version = _bank_files(probe_bank.path), probe_bank.version
    if probe.kind == "lib":
        with pytest.raises(probe.error, match=probe.match) as info:
            probe.run(probe_bank, tmp_path)
        assert isinstance(info.value, kb.KbError)
        assert not str(info.value).startswith("'"), "a message reads as given, not quoted"
    elif probe.kind == "proc":
        proc = probe.run(tmp_path, probe_bank.path)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert re.search(probe.match, proc.stdout), proc.stdout
    else:
        proc = probe.run(tmp_path, probe_bank.path)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == probe.status, (proc.returncode, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) <= 1, f"an error is one line: {proc.stderr!r}"
        assert re.search(probe.match, lines[0] if lines else ""), proc.stderr
        if lines and lines[0].startswith("{"):
            assert json.loads(lines[0])["exit_status"] == probe.status
    if (probe_bank.path / ".lock").is_dir():
        (probe_bank.path / ".lock").rmdir()
    assert _bank_files(probe_bank.path) == before, "the probe wrote into the bank"
    assert kb.open_bank(probe_bank.path).version == version
