#!/usr/bin/env bash
# Launch plain-verl RL from a recipe: bash recipes/rl/launch_verl.sh RECIPE.yaml [hydra overrides...]
# Checks first that fatal_grpo resolves and receives is_fatal in this environment (verl swallows plugin
# import errors, so a broken install would otherwise train with an unknown-estimator error much later).
set -euo pipefail
recipe="$1"; shift
python -c "from opensearch_vl.plugins.verl import require_estimator; require_estimator('fatal_grpo')"
base=$(python -c "import sys; from opensearch_vl.rl.recipes import recipe_base; print(recipe_base(sys.argv[1]))" "$recipe")
mapfile -t overrides < <(python -c "
import sys
from opensearch_vl.rl.recipes import recipe_overrides
print('\n'.join(recipe_overrides(sys.argv[1], 'verl', sys.argv[2:])))" "$recipe" "$@")
exec python -m verl.trainer.main_ppo --config-name "$base" "${overrides[@]}"
