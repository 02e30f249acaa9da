#!/usr/bin/env bash
# The main job: set up .venv, then run the whole recipe in miniature — on CPU, offline, with no API key.
#   1. tools   every tool answers with its offline default on the bundled sample data
#   2. SFT     a tiny Qwen3-VL built locally, the data check, then plain `llamafactory-cli train`
#   3. eval    the SFT model and a scripted oracle on the bundled mini-benchmark -> report + HTML viewer
#   4. RL      rollouts, Eq. 9 rewards and fatal_grpo advantages through verl's own compute_advantage
# Outputs go under $OUT (default runs/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VENV:-.venv}/bin/activate"
OUT=${OUT:-runs}
mkdir -p "$OUT"
GALLERY=tools_env/data/gallery

echo; echo "== 1. tools (offline defaults)"
opensearch-vl tools list --names
opensearch-vl tools call crop --image "$GALLERY/harbor_cafe_receipt.png" \
  --args '{"image": "img_1", "x": 0, "y": 0, "width": 160, "height": 120}' --out "$OUT/tools"
opensearch-vl tools call layout_parsing --image "$GALLERY/harbor_cafe_receipt.png" --args '{"image": "img_1"}'
opensearch-vl tools call image_search --image "$GALLERY/orrin_clock_tower.png" --args '{"url": "img_1"}'
opensearch-vl tools call text_search --args '{"q": "Orrin clock tower", "top_k": 2}'
opensearch-vl tools call python_interpreter --args '{"code": "print(sum(range(10)))"}'

echo; echo "== 2. SFT: tiny Qwen3-VL, data check, llamafactory-cli train"
python scripts/build_tiny_qwen3vl.py "$OUT/tiny-qwen3vl"
opensearch-vl sft check recipes/data/dataset_info.json --dataset opensearch_vl_sample \
  --model "$OUT/tiny-qwen3vl" --template qwen3_vl_agentic_nothink --cutoff-len 4096
llamafactory-cli train recipes/sft_smoke.yaml \
  model_name_or_path="$OUT/tiny-qwen3vl" output_dir="$OUT/sft_smoke"

echo; echo "== 3. eval: the SFT model and the oracle on the mini-benchmark"
opensearch-vl demo --out "$OUT/demo" --model "$OUT/sft_smoke" --no-progress

echo; echo "== 4. RL: rollouts, rewards, fatal_grpo advantages"
opensearch-vl rl demo --out "$OUT/rl-demo" --model "$OUT/sft_smoke"

echo; echo "done: report $OUT/demo/report.md, viewer $OUT/demo/index.html, RL table $OUT/rl-demo"
