#!/usr/bin/env bash
# Set up everything the tests need (the package with its dev extras, headless Chromium for the
# browser tests, node with bpmnlint for the BPMN comparison) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "notebook,dev,mcp,duckdb,pandas,dask"
# the peers `kb bench --peers` measures (the bench extra: LanceDB, Chroma, DuckDB + vss) in a venv of
# their own: the extra pins DuckDB to the build its vss extension ships for, older than the one the
# duckdb extra gives .venv; tests/test_bench_peers.py runs the bench there
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
if [ ! -x .venv-bench/bin/python ]; then
  "$py" -m venv .venv-bench
fi
.venv-bench/bin/python -m pip install --quiet -e ".[bench]" \
  || echo "could not install the bench extra: tests/test_bench_peers.py will say why it skips"
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "could not install chromium: the browser tests will say why they skip"
fi
# node and npm for bpmnlint, the BPMN linter the holes walker is compared with (tests/test_bpmnlint.py),
# installed into tests/bpmnlint/node_modules from its package.json and lock file
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
    || echo "could not install nodejs/npm: the bpmnlint comparison will say why it skips"
fi
if command -v npm >/dev/null 2>&1 && [ ! -f tests/bpmnlint/node_modules/bpmnlint/package.json ]; then
  (cd tests/bpmnlint && npm ci --no-audit --no-fund --silent >/dev/null) \
    || echo "could not install bpmnlint: the bpmnlint comparison will say why it skips"
fi
export ORT_DISABLE_TELEMETRY=1
exec .venv/bin/python -m pytest -q -n 2 "$@"
