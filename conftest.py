"""What every test run shares, the tests and the doctests alike: the temporary files that tests,
doctests (``tempfile.mkdtemp()``), notebook kernels and subprocesses make go under pytest's own
base folder, which pytest keeps for the last three runs and then removes, instead of staying in
the system's temporary folder after every run.
"""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def contained_temp_files(tmp_path_factory):
    """Point ``tempfile`` in this process, and ``TMPDIR`` for the processes it starts, at a folder
    under this run's (and this xdist worker's) base temporary folder."""
    where = str(tmp_path_factory.mktemp("tempfiles", numbered=False))
    before_env, before = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = where
    tempfile.tempdir = where
    yield where
    tempfile.tempdir = before
    if before_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before_env
