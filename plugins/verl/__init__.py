"""verl plugin: the fatal-aware advantage estimators (``algorithm.adv_estimator=fatal_grpo`` and friends).

Importing this package registers ``fatal_grpo``, ``fatal_grpo_no_clamp``, ``fatal_grpo_hard_mask``,
``fatal_rloo``, ``fatal_rloo_no_clamp`` and ``fatal_rloo_hard_mask`` in verl's advantage-estimator registry
(a per-process dict, core_algos.py:113). That import is the plugin's whole job, so it happens at import time;
it is idempotent. verl imports this package in every process that imports verl, through either

- the ``verl.plugins`` entry point in pyproject.toml (verl >= 0.9.0 loads the group in ``verl/__init__``,
  L55-76; ``VERL_USE_EXTERNAL_PLUGINS=none`` turns that off), or
- ``VERL_USE_EXTERNAL_MODULES=opensearch_vl.plugins.verl`` (any verl since 0.6; verl/__init__.py:49-52); on a
  multi-node cluster pass it with
  ``+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=opensearch_vl.plugins.verl``.

verl swallows plugin import errors, so recipes call ``require_estimator(name)`` at start-up.

Keep this file light: it imports only the estimator modules (torch, verl.trainer.ppo.core_algos). Agent-loop
modules are imported by verl's own config (``_target_``), not from here.

Example:
    >>> from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    >>> get_adv_estimator_fn("fatal_grpo").__name__
    'fatal_grpo'
"""

from .estimators import (
    ESTIMATOR_NAMES,
    METRICS_KEY,
    fatal_advantage_metrics,
    fatal_config_from_algorithm,
    register_estimators,
)
from .startup import flag_delivery, require_estimator

__all__ = [
    "ESTIMATOR_NAMES",
    "METRICS_KEY",
    "fatal_advantage_metrics",
    "fatal_config_from_algorithm",
    "flag_delivery",
    "register_estimators",
    "require_estimator",
]

register_estimators()
