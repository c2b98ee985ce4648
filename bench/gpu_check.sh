#!/bin/sh
# The device check (issue: one-click probe on the local NVIDIA GPU). On a machine with one NVIDIA GPU, probes
# every engine that can run there on the bundled model and prints one line per engine. Under 8 minutes.
#   bench/gpu_check.sh            uses ./.venv/bin/python, or python3
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
exec timeout 480 "$PY" bench/gpu_check.py
