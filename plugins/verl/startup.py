"""Fail-fast checks a recipe runs before training: is the estimator registered, does ``is_fatal`` reach it?

verl loads ``verl.plugins`` entry points inside ``import verl`` and swallows any exception at DEBUG level
(verl/__init__.py:55-76), so a broken install shows up only after the first rollout as
"Unknown advantage estimator simply: fatal_grpo" (core_algos.py:148). ``require_estimator`` turns that into an
error at start-up that says what to fix.

Example:
    >>> from opensearch_vl.plugins.verl import require_estimator
    >>> require_estimator("fatal_grpo")          # doctest: +SKIP
    'caller_frame'
"""

from __future__ import annotations

import logging
from typing import Literal

from opensearch_vl.errors import ConfigError, PrerequisiteError

__all__ = ["require_estimator", "flag_delivery", "Delivery"]

logger = logging.getLogger(__name__)

Delivery = Literal["forwarded", "caller_frame"]
_PROBE = "_opensearch_vl_flag_probe"


def flag_delivery() -> Delivery:
    """Run verl's real ``compute_advantage`` on a 2-row batch with a probe estimator and report how
    ``non_tensor_batch['is_fatal']`` reaches estimators in this verl: ``forwarded`` (verl passes
    ``non_tensor_batch``, e.g. after verl-project/verl#7473) or ``caller_frame`` (our read-only bridge).

    Raises PrerequisiteError when neither works (a verl whose compute_advantage changed shape).

    Example:
        >>> flag_delivery()       # doctest: +SKIP
        'caller_frame'
    """
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    try:
        from verl.trainer.ppo.ray_trainer import compute_advantage
    except ImportError as exc:
        raise PrerequisiteError(
            f"cannot import verl's trainer ({exc}); install the rl extra: pip install 'opensearch-vl[rl]'"
        ) from exc
    from .fatal_flags import find_fatal_flags

    seen: dict[str, object] = {}

    def probe(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **kwargs):
        if non_tensor_batch is not None:
            kwargs["non_tensor_batch"] = non_tensor_batch
        try:
            flags = find_fatal_flags(token_level_rewards, response_mask, kwargs)
            seen["source"], seen["values"] = flags.source, list(np.asarray(flags.values))
        except ConfigError as exc:
            seen["error"] = str(exc)
        zeros = torch.zeros_like(token_level_rewards)
        return zeros, zeros

    data = DataProto.from_dict(
        tensors={
            "token_level_rewards": torch.tensor([[0.0, 1.0], [0.0, 0.0]]),
            "response_mask": torch.ones(2, 2),
        },
        non_tensors={"uid": np.array(["p", "p"], dtype=object), "is_fatal": np.array([False, True])},
    )
    ADV_ESTIMATOR_REGISTRY[_PROBE] = probe
    try:
        compute_advantage(data, adv_estimator=_PROBE, config={})
    finally:
        ADV_ESTIMATOR_REGISTRY.pop(_PROBE, None)
    if seen.get("values") != [False, True]:
        raise PrerequisiteError(
            "this verl's compute_advantage neither forwards non_tensor_batch to estimators nor has "
            f"the layout the opensearch_vl bridge reads ({seen.get('error', 'no flags seen')}); "
            "pin verl==0.9.1 or report it"
        )
    return seen["source"]  # type: ignore[return-value]


PLUGIN_MODULE = "opensearch_vl.plugins.verl"


def _require_actor_route() -> None:
    """The TaskRunner and worker actors import only verl: make sure ``import verl`` will load this plugin."""
    import os
    from importlib.metadata import entry_points

    external = [m.strip() for m in os.getenv("VERL_USE_EXTERNAL_MODULES", "").split(",")]
    if PLUGIN_MODULE in external:
        return
    policy = os.getenv("VERL_USE_EXTERNAL_PLUGINS", "auto").strip().lower()  # verl/__init__.py:59
    ours = [ep for ep in entry_points(group="verl.plugins") if ep.value == PLUGIN_MODULE]
    allowed = policy == "auto" or any(ep.name in {p.strip() for p in policy.split(",")} for ep in ours)
    if ours and policy != "none" and allowed:
        return
    raise PrerequisiteError(
        "verl's Ray actors will not load the opensearch_vl estimators: "
        + (
            "no 'verl.plugins' entry point for opensearch_vl.plugins.verl is installed "
            "(pip install -e . again)"
            if not ours
            else f"VERL_USE_EXTERNAL_PLUGINS={policy!r} excludes it"
        )
        + f". Fix that, or export VERL_USE_EXTERNAL_MODULES={PLUGIN_MODULE} (multi-node: "
        f"+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES={PLUGIN_MODULE})"
    )


def require_estimator(name: str = "fatal_grpo", check_flags: bool = True) -> Delivery | None:
    """Fail fast unless ``name`` resolves to opensearch_vl's estimator in this process (and, with
    ``check_flags``, ``is_fatal`` reaches it through verl's compute_advantage). Returns the delivery route.

    Example:
        >>> require_estimator("fatal_rloo", check_flags=False)   # doctest: +SKIP
    """
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from .estimators import ESTIMATOR_NAMES, ESTIMATORS, register_estimators

    if name not in ESTIMATOR_NAMES:
        raise ConfigError(
            f"algorithm.adv_estimator={name} is not an opensearch_vl estimator; "
            f"choose one of {', '.join(ESTIMATOR_NAMES)}"
        )
    register_estimators()  # no-op when the entry point already ran; registers if it failed silently
    try:
        fn = get_adv_estimator_fn(name)
    except ValueError as exc:  # pragma: no cover - register_estimators just ran
        raise PrerequisiteError(f"{name} is not registered in verl: {exc}") from exc
    if fn is not ESTIMATORS[name]:
        raise PrerequisiteError(
            f"verl's advantage estimator {name!r} is {fn.__module__}.{fn.__qualname__}, not opensearch_vl's; "
            "another plugin registered the same name, remove it or "
            "set VERL_USE_EXTERNAL_PLUGINS=opensearch_vl"
        )
    _require_actor_route()
    delivery = flag_delivery() if check_flags else None
    logger.info("advantage estimator %s ready (is_fatal via %s)", name, delivery)
    return delivery
