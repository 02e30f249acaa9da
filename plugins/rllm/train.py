"""rLLM training entry: compose rLLM's verl config from an RL recipe and run ``AgentTrainer`` with the
workflow.

Used by ``recipes/rl/train_rllm.py``; see that script for the command line.

Example:
    >>> cfg = compose_recipe("recipes/rl/qwen3vl_8b.yaml", ["trainer.nnodes=2"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opensearch_vl.rl.recipes import recipe_base, recipe_overrides

__all__ = ["compose_recipe", "train"]


def compose_recipe(recipe: str, extra: Sequence[str] = ()) -> Any:
    """rLLM's trainer config (``agent_ppo_trainer_megatron`` or ``agent_ppo_trainer``) + the recipe's
    overrides."""
    from hydra import compose, initialize_config_module

    name = (
        "agent_ppo_trainer_megatron" if recipe_base(recipe) == "ppo_megatron_trainer" else "agent_ppo_trainer"
    )
    with initialize_config_module(config_module="rllm.trainer.config", version_base=None):
        return compose(config_name=name, overrides=recipe_overrides(recipe, "rllm", list(extra)))


def train(recipe: str, extra: Sequence[str] = ()) -> None:
    """Compose, check the estimator resolves, load the registered dataset, train."""
    from omegaconf import OmegaConf
    from opensearch_vl.plugins.rllm.workflow import VisionDeepResearchWorkflow
    from rllm.data.dataset import DatasetRegistry
    from rllm.trainer.agent_trainer import AgentTrainer
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from opensearch_vl.errors import ConfigError

    config = compose_recipe(recipe, extra)
    get_adv_estimator_fn(config.algorithm.adv_estimator)  # verl swallows plugin errors: fail fast here
    name = config.rllm.dataset
    train_set = DatasetRegistry.load_dataset(name, "train")
    if train_set is None:
        raise ConfigError(
            f"rLLM dataset {name!r} has no train split; run `opensearch-vl rl prepare FILE --out DIR "
            f"--register {name}` first, or set rllm.dataset=<name>"
        )
    val_set = DatasetRegistry.load_dataset(name, "test") or train_set
    agent = OmegaConf.to_container(config.get("opensearch_vl", {}), resolve=True)
    AgentTrainer(
        workflow_class=VisionDeepResearchWorkflow,
        workflow_args={"agent": agent},
        config=config,
        train_dataset=train_set,
        val_dataset=val_set,
    ).train()
