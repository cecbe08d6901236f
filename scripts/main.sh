#!/usr/bin/env bash
# The main job on the demo banks: set up; build fresh working copies of the demo banks under
# banks/demo (the committed data/demo stays untouched); check them; run the scheduled jobs
# (backfill, connect, decay); print their stats, the workflow holes of the business bank, and for a
# demo question the flat top-8 beside the folded answer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export ORT_DISABLE_TELEMETRY=1
kb=.venv/bin/kb
eng=banks/demo/engineering
biz=banks/demo/business
$kb demo --out banks/demo --force
$kb check $eng $biz
$kb backfill $eng $biz
$kb embed $eng
$kb connect $eng $biz
$kb decay $eng $biz
$kb check $eng $biz
$kb stats $eng $biz
$kb holes $biz --flows
$kb query $eng "how do I log in to production with playwright" --compare --no-usage

# The real bank: Python's PEPs (data/peps, public domain / CC0), one entry per section, header
# relations as typed edges, prose citations written by backfill. Embedded in the fast mode
# (minilm-static): MiniLM on these ~8,000 long sections is a ten-minute batch job on two cores.
peps=banks/peps
time $kb demo --peps --out $peps --force
time $kb backfill $peps
time $kb embed $peps --embedder minilm-static
time $kb connect $peps
time $kb decay $peps
$kb stats $peps
$kb query $peps "deferred evaluation of annotations" --compare --no-usage
