"""RL recipes compose with verl's own Hydra config (and rLLM's, when installed) without training."""

from __future__ import annotations

from pathlib import Path

import pytest
from opensearch_vl.rl.agent import load_settings
from opensearch_vl.rl.recipes import RECIPE_DIR, recipe_base, recipe_overrides

pytest.importorskip("verl", reason="verl is not installed (pip install 'opensearch-vl[rl]')")

RECIPES = ["smoke", "qwen3vl_8b", "qwen3vl_30b_a3b", "qwen3vl_32b"]


def compose_verl(name, extra=()):
    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    path = RECIPE_DIR / f"{name}.yaml"
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name=recipe_base(path), overrides=recipe_overrides(path, "verl", list(extra)))
    OmegaConf.resolve(cfg)
    return cfg


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_recipe_composes_with_verl(name):
    cfg = compose_verl(name)
    assert cfg.algorithm.adv_estimator == "fatal_grpo" and cfg.trainer.use_v1 is False
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "vision_deepresearch"
    assert cfg.actor_rollout_ref.actor.clip_ratio_high == 0.28
    # the agent settings inside the trainer config validate
    settings = load_settings(cfg.opensearch_vl)
    if name != "smoke":
        r = cfg.actor_rollout_ref.rollout
        assert (r.name, r.mode, r.tensor_model_parallel_size, r.temperature) == ("sglang", "async", 4, 0.7)
        assert (cfg.data.train_batch_size, cfg.data.max_prompt_length, cfg.data.max_response_length) == (
            256,
            4096,
            70000,
        )
        assert settings.limits.max_turns == 50 and settings.max_new_tokens == 4096


@pytest.mark.slow
def test_paper_table_differences_between_sizes():
    c8, c30, c32 = (compose_verl(n) for n in RECIPES[1:])
    assert (
        c8.actor_rollout_ref.rollout.n,
        c30.actor_rollout_ref.rollout.n,
        c32.actor_rollout_ref.rollout.n,
    ) == (8, 16, 16)
    m8, m30 = c8.actor_rollout_ref.actor.megatron, c30.actor_rollout_ref.actor.megatron
    assert (m8.tensor_model_parallel_size, m8.pipeline_model_parallel_size, m8.context_parallel_size) == (
        4,
        2,
        8,
    )
    assert (m30.context_parallel_size, m30.expert_model_parallel_size, m30.expert_tensor_parallel_size) == (
        4,
        8,
        1,
    )
    assert m30.override_transformer_config.moe_router_dtype == "fp32"
    assert c30.actor_rollout_ref.actor.ppo_mini_batch_size == 128
    # a command-line override wins over the recipe
    assert (
        compose_verl("qwen3vl_8b", ["algorithm.adv_estimator=fatal_rloo"]).algorithm.adv_estimator
        == "fatal_rloo"
    )


@pytest.mark.slow
def test_recipe_composes_with_rllm_config():
    pytest.importorskip("rllm", reason="rLLM is not installed (GitHub source only)")
    from opensearch_vl.plugins.rllm.train import compose_recipe

    cfg = compose_recipe(str(RECIPE_DIR / "qwen3vl_8b.yaml"), ["trainer.nnodes=2"])
    assert cfg.algorithm.adv_estimator == "fatal_grpo" and cfg.rllm.workflow.use_workflow is True
    assert cfg.trainer.nnodes == 2 and cfg.rllm.dataset == "searchvl-rl"


def test_unknown_recipe_keys_are_rejected(tmp_path):
    from opensearch_vl.errors import ConfigError

    bad = tmp_path / "bad.yaml"
    bad.write_text("common: []\nverls: []\n")
    with pytest.raises(ConfigError, match="unknown keys"):
        recipe_overrides(bad, "verl")
