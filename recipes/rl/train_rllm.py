"""Train the OpenSearch-VL agent with rLLM (AgentTrainer + VisionDeepResearchWorkflow) from an RL recipe.

    python recipes/rl/train_rllm.py --recipe recipes/rl/qwen3vl_8b.yaml actor_rollout_ref.model.path=/ckpt/sft-8b

Composes rLLM's verl config (``agent_ppo_trainer_megatron`` for Megatron recipes, ``agent_ppo_trainer`` for
FSDP ones) with the recipe's ``common`` + ``rllm`` overrides and your extras, loads the train/test splits
registered by ``opensearch-vl rl prepare --register NAME`` (``rllm.dataset``), and runs rLLM's verl-path
``AgentTrainer``. The ``opensearch_vl`` section becomes the workflow's ``agent`` settings.
Needs rLLM installed from source (``pip install --no-deps -e <rllm checkout>``; tested at 9beb6e0f).
"""

from __future__ import annotations

import argparse

from opensearch_vl.rl.recipes import recipe_base, recipe_overrides


def compose(recipe: str, extra: list[str]):
    """The composed rLLM trainer config (no training)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    name = "agent_ppo_trainer_megatron" if recipe_base(recipe) == "ppo_megatron_trainer" else "agent_ppo_trainer"
    with initialize_config_module(config_module="rllm.trainer.config", version_base=None):
        return hydra_compose(config_name=name, overrides=recipe_overrides(recipe, "rllm", extra))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", required=True, help="recipes/rl/<size>.yaml")
    args, extra = parser.parse_known_args()

    from omegaconf import OmegaConf
    from rllm.data.dataset import DatasetRegistry
    from rllm.trainer.agent_trainer import AgentTrainer
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from opensearch_vl.plugins.rllm.workflow import VisionDeepResearchWorkflow

    config = compose(args.recipe, extra)
    get_adv_estimator_fn(config.algorithm.adv_estimator)  # fail fast if the estimator is not registered
    name = config.rllm.dataset
    train = DatasetRegistry.load_dataset(name, "train")
    val = DatasetRegistry.load_dataset(name, "test") or train
    agent = OmegaConf.to_container(config.get("opensearch_vl", {}), resolve=True)
    trainer = AgentTrainer(workflow_class=VisionDeepResearchWorkflow, workflow_args={"agent": agent}, config=config,
                           train_dataset=train, val_dataset=val)
    trainer.train()


if __name__ == "__main__":
    main()
