"""A `kb` command starts with what it runs: reading the command line loads no data library, and
`kb query` loads neither the graph library, scipy, the linker nor the judge (every `kb query` is a
fresh process, so what it imports is paid on every call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import kbtools as kb

HEAVY = ("igraph", "scipy", "sklearn", "duckdb", "pandas", "plotly", "dask", "numba",
         "kbtools.linker", "kbtools.graph", "kbtools.judging", "kbtools.evaluate", "kbtools.demo")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it leaves its result in ``out``. Returns that result and
    which of the data libraries and kbtools packages the process loaded."""
    script = (code + "\nimport json, sys\n"
              f"print(json.dumps({{'out': out, 'loaded': [m for m in {HEAVY + ('polars', 'numpy')!r} "
              "if m in sys.modules]}))")
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_reading_the_command_line_loads_no_data_library():
    got = _loaded_after("from kbtools.cli.main import subcommands\nout = sorted(subcommands())")
    assert {"query", "connect", "bench", "mcp", "judge"} <= set(got["out"])
    assert got["loaded"] == [], f"building the kb parser imported {got['loaded']}"


def test_kb_query_in_a_fresh_process_loads_no_graph_linker_or_scipy(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    for text in ("The invoice export job needs the vendor flag set before it runs.",
                 "Rotate the staging database password every ninety days.",
                 "The nightly backup writes to the cold storage bucket."):
        kb.report_learning(bank, content=text, actor="test")
    code = ("import contextlib, io\nfrom kbtools.cli.main import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    status = main(['query', {str(bank.path)!r}, 'vendor flag for the invoice export', '--json'])\n"
            "out = [status, buf.getvalue()]")
    got = _loaded_after(code)
    status, printed = got["out"]
    assert status == 0
    assert "vendor flag" in printed  # it answered with the entry
    assert not set(got["loaded"]) & set(HEAVY), f"kb query imported {set(got['loaded']) & set(HEAVY)}"
