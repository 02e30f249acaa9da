"""RL recipes: one YAML per model size holding Hydra overrides for both launch paths.

A recipe has three override lists: ``common`` (the paper's RL settings, valid for verl and rLLM's verl
config),
``verl`` (plain ``python -m verl.trainer.main_ppo``: agent loop, legacy trainer path) and ``rllm``
(``recipes/rl/train_rllm.py``: rLLM workflow keys). :func:`recipe_overrides` returns ``common`` + the path's
list
+ user extras (later ones win, as on a Hydra command line).

Example:
    >>> recipe_overrides("recipes/rl/qwen3vl_8b.yaml", "verl")[:1]  # doctest: +SKIP
    ['algorithm.adv_estimator=fatal_grpo']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml

from opensearch_vl.errors import ConfigError

__all__ = ["recipe_overrides", "RECIPE_DIR"]

RECIPE_DIR = Path(__file__).resolve().parents[1] / "recipes" / "rl"


def recipe_overrides(
    path: str | Path, launcher: Literal["verl", "rllm"], extra: Sequence[str] = ()
) -> list[str]:
    """The Hydra overrides of a recipe for ``launcher``, then ``extra``.

    Example:
        >>> extra = ["trainer.total_training_steps=1"]
        >>> recipe_overrides("recipes/rl/smoke.yaml", "verl", extra)[-1]  # doctest: +SKIP
        'trainer.total_training_steps=1'
    """
    path = Path(path)
    if not path.is_file() and (RECIPE_DIR / path.name).is_file():
        path = RECIPE_DIR / path.name
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read RL recipe {path}: {exc}") from exc
    if launcher not in ("verl", "rllm"):
        raise ConfigError(f"launcher {launcher!r}; use verl or rllm")
    if not isinstance(data, dict) or not isinstance(data.get("common"), list):
        raise ConfigError(f"{path}: an RL recipe is a mapping with override lists 'common', 'verl', 'rllm'")
    unknown = set(data) - {"base", "common", "verl", "rllm"}
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}; allowed: base, common, verl, rllm")
    return [str(o) for o in data["common"]] + [str(o) for o in data.get(launcher) or []] + list(extra)


def recipe_base(path: str | Path) -> str:
    """The verl config the recipe builds on (``ppo_megatron_trainer`` or ``ppo_trainer``)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return str(data.get("base", "ppo_megatron_trainer"))
