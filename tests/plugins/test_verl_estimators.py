"""The fatal estimators through verl's REAL compute_advantage, config and registry (verl 0.9.1, CPU)."""

import os

import numpy as np
import pytest
import torch

pytest.importorskip("verl")
ray_trainer = pytest.importorskip("verl.trainer.ppo.ray_trainer")

from omegaconf import OmegaConf  # noqa: E402
from opensearch_vl.plugins import verl as plugin  # noqa: E402
from opensearch_vl.plugins.verl import estimators  # noqa: E402
from opensearch_vl.rl.advantage import FatalAdvantageConfig, fatal_group_advantage  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn  # noqa: E402

from opensearch_vl.errors import ConfigError, PrerequisiteError  # noqa: E402

EPS = 1e-6
R = 0.5 / (0.5 + EPS)  # |r̃| for a 1/0 reward in a half-correct group (population std 0.5)


def rollout_batch(fatal_key=True):
    """Two prompts × 4 rollouts, laid out as a multi-turn producer emits them: action tokens 1, observation
    tokens 0, the fatal step and later zeroed, right padding, reward on the last response token."""
    length = 10
    #                  a  a  o  o  a  a  o  o  a  pad
    full = torch.tensor([1, 1, 0, 0, 1, 1, 0, 0, 1, 0], dtype=torch.int64)
    mask = full.repeat(8, 1)
    mask[1] = 0  # prompt p, rollout 1: fatal at step 0 (cascade starts at its first action)
    mask[2, 4:] = 0  # prompt p, rollout 2: fatal at step 1
    mask[5, 8:] = 0  # prompt q, rollout 1: fatal at its last step
    reward = [1, 0, 0, 1, 1, 1, 0, 0]
    token_rewards = torch.zeros(8, length)
    token_rewards[:, 8] = torch.tensor(reward, dtype=torch.float32)
    non_tensors = {"uid": np.array(["p"] * 4 + ["q"] * 4, dtype=object)}
    if fatal_key:
        non_tensors["is_fatal"] = np.array([False, True, True, False, False, True, False, False])
    return DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask},
        non_tensors=non_tensors,
        meta_info={"global_steps": 1},
    )


def algorithm(**overrides):
    cfg = OmegaConf.create(
        {
            "adv_estimator": "fatal_grpo",
            "norm_adv_by_std_in_grpo": True,
            "gamma": 1.0,
            "lam": 1.0,
            **overrides,
        }
    )
    OmegaConf.set_struct(cfg, True)  # as verl composes it
    return cfg


def run(data, name, cfg=None):
    cfg = cfg if cfg is not None else algorithm(adv_estimator=name)
    return ray_trainer.compute_advantage(data, adv_estimator=name, num_repeat=4, config=cfg)


def test_every_name_is_registered_to_our_function():
    for name in plugin.ESTIMATOR_NAMES:
        assert get_adv_estimator_fn(name) is estimators.ESTIMATORS[name]
    assert plugin.register_estimators() == []  # idempotent


def test_fatal_grpo_through_compute_advantage():
    data = run(rollout_batch(), "fatal_grpo")
    adv, mask = data.batch["advantages"], data.batch["response_mask"]
    row = adv.max(dim=1).values + adv.min(dim=1).values  # each row holds one value (and zeros)
    # p: rewards 1 0 0 1, rows 1 and 2 fatal with r̃ = −R -> 0;  q: rewards 1 1 0 0, row 5 fatal with +R kept
    assert row.tolist() == pytest.approx([R, 0.0, 0.0, R, R, R, -R, -R])
    assert torch.all(adv[mask == 0] == 0)
    assert torch.equal(data.batch["returns"], adv)
    assert data.meta_info[plugin.METRICS_KEY] == pytest.approx(
        {
            "fatal_adv/fatal_frac": 3 / 8,
            "fatal_adv/clamped_frac": 2 / 8,
            "fatal_adv/clamped_of_fatal_frac": 2 / 3,
            "fatal_adv/clamped_rtilde_mean": -R,
        }
    )
    assert plugin.fatal_advantage_metrics(data, algorithm()) == data.meta_info[plugin.METRICS_KEY]
    # the stash travels with the batch to the actor update: chunking and TensorDict conversion still work
    assert all(plugin.METRICS_KEY in part.meta_info for part in data.chunk(2))
    assert data.to_tensordict()["fatal_adv_metrics"]["fatal_adv/fatal_frac"] == 3 / 8


@pytest.mark.parametrize(
    "name, expected",
    [
        ("fatal_grpo_no_clamp", [R, 0.0, -R, R, R, R, -R, -R]),  # row 1 is fully masked
        ("fatal_grpo_hard_mask", [R, 0.0, 0.0, R, R, 0.0, -R, -R]),
        ("fatal_rloo", [2 / 3, 0.0, 0.0, 2 / 3, 2 / 3, 2 / 3, -2 / 3, -2 / 3]),
        ("fatal_rloo_no_clamp", [2 / 3, 0.0, -2 / 3, 2 / 3, 2 / 3, 2 / 3, -2 / 3, -2 / 3]),
        ("fatal_rloo_hard_mask", [2 / 3, 0.0, 0.0, 2 / 3, 2 / 3, 0.0, -2 / 3, -2 / 3]),
    ],
)
def test_ablation_rows_by_name(name, expected):
    adv = run(rollout_batch(), name).batch["advantages"]
    assert (adv.max(dim=1).values + adv.min(dim=1).values).tolist() == pytest.approx(expected)


def test_options_come_from_the_algorithm_section():
    cfg = algorithm(norm_adv_by_std_in_grpo=False)
    with pytest.raises(Exception):  # struct mode: a new key needs Hydra's '+', exactly as on the command line
        cfg.fatal = {"mode": "no_clamp"}
    OmegaConf.set_struct(cfg, False)
    cfg.fatal = {"mode": "no_clamp", "std": "unbiased"}
    OmegaConf.set_struct(cfg, True)
    adv = run(rollout_batch(), "fatal_grpo", cfg).batch["advantages"]
    assert (adv.max(dim=1).values + adv.min(dim=1).values).tolist() == pytest.approx(
        [0.5, 0.0, -0.5, 0.5, 0.5, 0.5, -0.5, -0.5]
    )  # r − μ, no clamp (row 1 fully masked)
    with pytest.raises(ConfigError, match="contradicts"):
        run(rollout_batch(), "fatal_grpo_hard_mask", cfg)
    OmegaConf.set_struct(cfg, False)
    cfg.fatal = {"mode": "clamp", "typo": 1}
    with pytest.raises(ConfigError, match="typo|Extra"):
        run(rollout_batch(), "fatal_grpo", cfg)


def test_hydra_composes_the_documented_overrides():
    hydra = pytest.importorskip("hydra")
    from verl.trainer import config as verl_config

    with hydra.initialize_config_dir(os.path.dirname(verl_config.__file__), version_base=None):
        cfg = hydra.compose(
            "ppo_trainer",
            overrides=[
                "algorithm.adv_estimator=fatal_grpo",
                "+algorithm.fatal.std=unbiased",
                "+algorithm.fatal.singleton=raw",
            ],
        )
    assert estimators.fatal_config_from_algorithm(cfg.algorithm) == FatalAdvantageConfig(
        std="unbiased", singleton="raw"
    )
    data = run(rollout_batch(), "fatal_grpo", cfg.algorithm)
    assert data.meta_info[plugin.METRICS_KEY]["fatal_adv/fatal_frac"] == 3 / 8


def test_a_batch_without_is_fatal_is_an_error_not_vanilla_grpo():
    with pytest.raises(ConfigError, match="is_fatal"):
        run(rollout_batch(fatal_key=False), "fatal_grpo")


def test_v1_trainer_path_names_the_fix():
    # V1 rebuilds the batch from TransferQueue with uid only (v1/trainer_base.py:1745-1751), then calls
    # compute_advantage_for_multi_trajectories (v1/utils.py:148). verl.trainer.ppo.v1.utils imports
    # transfer_queue, which the CPU install lacks, so its caller is compiled under V1's file name instead.
    caller = {}
    exec(
        compile(
            "def v1_advantage(compute_advantage, data, cfg):\n"
            "    return compute_advantage(data, adv_estimator='fatal_grpo', config=cfg)\n",
            "/site-packages/verl/trainer/ppo/v1/utils.py",
            "exec",
        ),
        caller,
    )
    with pytest.raises(ConfigError, match="use_v1=false"):
        caller["v1_advantage"](ray_trainer.compute_advantage, rollout_batch(fatal_key=False), algorithm())


def test_forwarded_non_tensor_batch_wins_and_the_bridge_switches_off():
    """Emulate a verl that forwards non_tensor_batch (PR #7473): its flags are used, the frame is not read."""
    data = rollout_batch()
    fn = get_adv_estimator_fn("fatal_grpo")
    forwarded = {"uid": data.non_tensor_batch["uid"], "is_fatal": np.zeros(8, dtype=bool)}

    def compute_advantage(data):  # same name and tensors as verl's: the bridge would match this frame
        return fn(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch["uid"],
            config=algorithm(),
            non_tensor_batch=forwarded,
        )

    adv, _ = compute_advantage(data)
    assert (adv.max(dim=1).values + adv.min(dim=1).values).tolist() == pytest.approx(
        [R, 0.0, -R, R, R, R, -R, -R]
    )  # nothing fatal in the forwarded flags -> row 2 not clamped
    assert plugin.METRICS_KEY not in data.meta_info


def test_direct_calls_need_explicit_flags():
    data = rollout_batch()
    fn = get_adv_estimator_fn("fatal_rloo")
    args = dict(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=data.batch["response_mask"],
        index=data.non_tensor_batch["uid"],
        config=None,
    )
    with pytest.raises(ConfigError, match="neither"):
        fn(**args)
    adv, _ = fn(**args, is_fatal=data.non_tensor_batch["is_fatal"])
    expected = fatal_group_advantage(
        args["token_level_rewards"],
        args["response_mask"],
        args["index"],
        data.non_tensor_batch["is_fatal"],
        baseline="rloo",
    )
    assert torch.equal(adv, expected.advantages)


def test_flag_delivery_on_stock_verl_is_the_caller_frame_bridge():
    assert plugin.flag_delivery() == "caller_frame"
    assert "_opensearch_vl_flag_probe" not in ADV_ESTIMATOR_REGISTRY


def test_require_estimator(monkeypatch):
    monkeypatch.delenv("VERL_USE_EXTERNAL_MODULES", raising=False)
    monkeypatch.delenv("VERL_USE_EXTERNAL_PLUGINS", raising=False)
    assert plugin.require_estimator("fatal_grpo") == "caller_frame"
    with pytest.raises(ConfigError, match="fatal_grpo_hard_mask"):
        plugin.require_estimator("grpo")
    monkeypatch.setenv("VERL_USE_EXTERNAL_PLUGINS", "none")
    with pytest.raises(PrerequisiteError, match="VERL_USE_EXTERNAL_MODULES=opensearch_vl.plugins.verl"):
        plugin.require_estimator("fatal_grpo", check_flags=False)
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "opensearch_vl.plugins.verl")
    assert plugin.require_estimator("fatal_grpo", check_flags=False) is None


def test_foreign_and_stale_registrations():
    ours = ADV_ESTIMATOR_REGISTRY["fatal_rloo"]

    def foreign(**kwargs):
        raise AssertionError("never called")

    try:
        ADV_ESTIMATOR_REGISTRY["fatal_rloo"] = foreign
        assert "fatal_rloo" not in plugin.register_estimators()  # someone else's: left alone ...
        with pytest.raises(PrerequisiteError, match="another plugin"):  # ... and reported
            plugin.require_estimator("fatal_rloo", check_flags=False)

        def stale(**kwargs):
            raise AssertionError("never called")

        stale.__module__ = estimators.__name__  # what importlib.reload leaves behind
        ADV_ESTIMATOR_REGISTRY["fatal_rloo"] = stale
        assert plugin.register_estimators() == ["fatal_rloo"]
        assert ADV_ESTIMATOR_REGISTRY["fatal_rloo"] is ours
    finally:
        ADV_ESTIMATOR_REGISTRY["fatal_rloo"] = ours
