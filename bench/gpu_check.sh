#!/usr/bin/env bash
# The GPU check's last call on the GPU machine, in the project's root, once groups a and b of the
# wheels are stashed (bench/gpu_wheels.sh) and with .whl/c and .gpucheck/ carried in this call
# (bench/gpu_check_prepare.sh makes them): stash c, install, check the imports, run bench/gpu_check.py.
# Results go to $OUT (bench.log, bench.json, escrag-run.log, check.json).
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=${SITE:-/tmp/escrag-site}
bash bench/gpu_wheels.sh stash c
SITE=$SITE bash bench/gpu_wheels.sh install
export PYTHONPATH="$SITE:$PWD"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true DVC_NO_ANALYTICS=1 \
    GX_ANALYTICS_ENABLED=false PREFECT_SERVER_ANALYTICS_ENABLED=false TOKENIZERS_PARALLELISM=false \
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
bash bench/gpu_wheels.sh check 2>&1 | tail -25 || echo "(the import check above found problems; the run goes on and shows their effect)"
python3 bench/gpu_check.py --out "${OUT:-gpu-check-out}" "$@"
