"""verl adapters for the fatal-aware advantage estimators of ``opensearch_vl.rl.advantage``.

Registered names (``algorithm.adv_estimator=<name>``):

    fatal_grpo            group mean/std baseline, mode from +algorithm.fatal.mode (default clamp)
    fatal_grpo_no_clamp   mode fixed to no_clamp   (ablation: "fatal masking only" / vanilla GRPO)
    fatal_grpo_hard_mask  mode fixed to hard_mask  (ablation: "hard masking")
    fatal_rloo            leave-one-out baseline (the released recipe's rloo) + clamp
    fatal_rloo_no_clamp, fatal_rloo_hard_mask

Options come from verl's ``algorithm`` config (a DictConfig, never converted to ``AlgoConfig`` by the 0.9.1
trainers): ``algorithm.norm_adv_by_std_in_grpo`` (verl's own key, default True) and an optional
``algorithm.fatal`` section added with ``+`` because ``algorithm`` is struct-mode, e.g.
``+algorithm.fatal.std=unbiased +algorithm.fatal.epsilon=1e-6 +algorithm.fatal.singleton=raw``. Unknown keys
are rejected (``FatalAdvantageConfig``, extra="forbid").

Each call computes per-batch metrics (``fatal_adv/fatal_frac``, ``fatal_adv/clamped_frac``,
``fatal_adv/clamped_of_fatal_frac``, ``fatal_adv/clamped_rtilde_mean``). verl 0.9.1's trainers have no hook
that logs an estimator's metrics, so they are stashed on the batch as ``data.meta_info[METRICS_KEY]`` when the
estimator can see the batch, logged at INFO, and recomputable any time with ``fatal_advantage_metrics``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from opensearch_vl.rl.advantage import (
    Baseline,
    FatalAdvantageConfig,
    FatalMode,
    fatal_group_advantage,
)
from pydantic import ValidationError
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

from opensearch_vl.errors import ConfigError

from .fatal_flags import FLAG_KEY, find_fatal_flags

__all__ = [
    "ESTIMATOR_NAMES",
    "METRICS_KEY",
    "CONFIG_SECTION",
    "fatal_config_from_algorithm",
    "fatal_advantage_metrics",
    "register_estimators",
]

logger = logging.getLogger(__name__)

METRICS_KEY = "fatal_adv_metrics"
CONFIG_SECTION = "fatal"


def _cfg_get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping) or hasattr(config, "get"):  # DictConfig, dict, verl BaseConfig
        try:
            return config.get(key, default)
        except (AttributeError, KeyError, TypeError):
            pass
    return getattr(config, key, default)


def _to_plain(section: Any) -> dict:
    if section is None:
        return {}
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(section, DictConfig):
            return OmegaConf.to_container(section, resolve=True)  # type: ignore[return-value]
    except ImportError:  # pragma: no cover - verl depends on omegaconf
        pass
    if isinstance(section, Mapping):
        return dict(section)
    raise ConfigError(f"algorithm.{CONFIG_SECTION} must be a mapping like {{mode: clamp}}, got {section!r}")


def fatal_config_from_algorithm(config: Any, forced_mode: FatalMode | None = None) -> FatalAdvantageConfig:
    """Build the options from verl's ``algorithm`` config (DictConfig, dict, AlgoConfig or None).

    Example:
        >>> fatal_config_from_algorithm({"norm_adv_by_std_in_grpo": False, "fatal": {"std": "unbiased"}})
        FatalAdvantageConfig(mode='clamp', norm_by_std=False, std='unbiased', epsilon=1e-06, singleton='zero')
    """
    section = _to_plain(_cfg_get(config, CONFIG_SECTION, None))
    if "norm_by_std" in section:
        raise ConfigError(
            "algorithm.fatal.norm_by_std is not a setting; use verl's own "
            "algorithm.norm_adv_by_std_in_grpo=true|false"
        )
    if forced_mode is not None:
        if section.get("mode", forced_mode) != forced_mode:
            raise ConfigError(
                f"algorithm.fatal.mode={section['mode']} contradicts the estimator name, which "
                f"fixes mode={forced_mode}; drop the override or use adv_estimator=fatal_grpo"
            )
        section["mode"] = forced_mode
    try:
        return FatalAdvantageConfig(
            norm_by_std=bool(_cfg_get(config, "norm_adv_by_std_in_grpo", True)), **section
        )
    except ValidationError as exc:
        raise ConfigError(
            f"bad algorithm.{CONFIG_SECTION} settings {section}: {exc.errors()[0]['msg']} "
            "(accepted: mode=clamp|no_clamp|hard_mask, std=population|unbiased, epsilon>0, "
            "singleton=zero|raw)"
        ) from exc


def fatal_advantage_metrics(
    data: Any, config: Any = None, adv_estimator: str = "fatal_grpo"
) -> dict[str, float]:
    """Recompute the fatal-rule metrics of a verl ``DataProto`` (needs token_level_rewards, response_mask,
    uid, is_fatal), e.g. in a trainer after ``compute_advantage``: ``metrics.update(fatal_advantage_metrics(
    batch, config.algorithm, config.algorithm.adv_estimator))``.

    Example:
        >>> fatal_advantage_metrics(batch, cfg.algorithm)["fatal_adv/fatal_frac"]  # doctest: +SKIP
        0.125
    """
    baseline, forced = _NAMES.get(str(adv_estimator), ("grpo", None))
    result = fatal_group_advantage(
        data.batch["token_level_rewards"],
        data.batch["response_mask"],
        data.non_tensor_batch["uid"],
        data.non_tensor_batch[FLAG_KEY],
        fatal_config_from_algorithm(config, forced),
        baseline,
    )
    return result.stats.as_metrics()


def _make_estimator(name: str, baseline: Baseline, forced_mode: FatalMode | None) -> Callable:
    def estimator(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: np.ndarray | None = None,
        config: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # verl's signature for registered estimators (called at ray_trainer.py:279, kwargs of L250-259).
        flags = find_fatal_flags(token_level_rewards, response_mask, kwargs)
        if index is None:
            raise ConfigError(
                f"{name} groups rollouts by uid, but the batch has no non_tensor_batch['uid'] "
                "(verl adds it when it repeats prompts rollout.n times)"
            )
        options = fatal_config_from_algorithm(config, forced_mode)
        result = fatal_group_advantage(
            token_level_rewards, response_mask, index, flags.values, options, baseline
        )
        metrics = result.stats.as_metrics()
        if flags.data is not None:
            flags.data.meta_info[METRICS_KEY] = metrics
        logger.info("%s (%s, flags via %s): %s", name, options.mode, flags.source, metrics)
        return result.advantages, result.returns

    estimator.__name__ = estimator.__qualname__ = name
    estimator.__doc__ = (
        f"verl advantage estimator '{name}': fatal-aware {baseline} (see opensearch_vl.rl.advantage)."
    )
    return estimator


_NAMES: dict[str, tuple[Baseline, FatalMode | None]] = {
    "fatal_grpo": ("grpo", None),
    "fatal_grpo_no_clamp": ("grpo", "no_clamp"),
    "fatal_grpo_hard_mask": ("grpo", "hard_mask"),
    "fatal_rloo": ("rloo", None),
    "fatal_rloo_no_clamp": ("rloo", "no_clamp"),
    "fatal_rloo_hard_mask": ("rloo", "hard_mask"),
}
ESTIMATORS: dict[str, Callable] = {name: _make_estimator(name, *spec) for name, spec in _NAMES.items()}
ESTIMATOR_NAMES: tuple[str, ...] = tuple(ESTIMATORS)


def register_estimators() -> list[str]:
    """Register every fatal estimator in verl's (per-process) registry; idempotent, returns the names added.

    A name already bound to our function is skipped; one bound to a function of this module from an earlier
    import (``importlib.reload``) is rebound; one bound to someone else's function is left alone and logged,
    and ``startup.require_estimator`` reports it.

    Example:
        >>> register_estimators()   # already registered when the plugin was imported
        []
    """
    added = []
    for name, fn in ESTIMATORS.items():
        current = ADV_ESTIMATOR_REGISTRY.get(name)
        if current is fn:
            continue
        if current is None:
            register_adv_est(name)(fn)  # core_algos.py:116-134
        elif getattr(current, "__module__", None) == __name__:
            ADV_ESTIMATOR_REGISTRY[name] = fn  # stale copy from a reload; register_adv_est would raise
        else:
            logger.warning(
                "verl advantage estimator %r is already registered by %s.%s; opensearch_vl's is "
                "not installed",
                name,
                getattr(current, "__module__", "?"),
                current.__qualname__,
            )
            continue
        added.append(name)
    return added
