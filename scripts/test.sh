#!/usr/bin/env bash
# Set up everything the tests need (the package with its dev extras, headless Chromium for the
# browser tests) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "notebook,dev,mcp,duckdb,pandas,dask,fast"
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "could not install chromium: the browser tests will say why they skip"
fi
export ORT_DISABLE_TELEMETRY=1
exec .venv/bin/python -m pytest -q -n 2 "$@"
