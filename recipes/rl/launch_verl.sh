#!/usr/bin/env bash
# Launch plain-verl RL from a recipe: bash recipes/rl/launch_verl.sh RECIPE.yaml [hydra overrides...]
# Checks first that fatal_grpo resolves in this environment (verl swallows plugin import errors).
set -euo pipefail
recipe="$1"; shift
python - <<'PY'
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
get_adv_estimator_fn("fatal_grpo")
PY
base=$(python -c "from opensearch_vl.rl.recipes import recipe_base; print(recipe_base('$recipe'))")
mapfile -t overrides < <(python -c "
import sys
from opensearch_vl.rl.recipes import recipe_overrides
print('\n'.join(recipe_overrides('$recipe', 'verl', sys.argv[1:])))" "$@")
exec python -m verl.trainer.main_ppo --config-name "$base" "${overrides[@]}"
