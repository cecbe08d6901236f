#!/usr/bin/env bash
# The main job on the demo banks: set up, build fresh working copies of the demo banks under
# banks/demo (the committed data/demo stays untouched), check them and print their stats.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export ORT_DISABLE_TELEMETRY=1
kb=.venv/bin/kb
$kb demo --out banks/demo --force
$kb check banks/demo/engineering banks/demo/business
$kb stats banks/demo/engineering banks/demo/business
