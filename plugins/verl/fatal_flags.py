"""How the rollout's per-row ``is_fatal`` flag reaches a registered verl advantage estimator.

verl 0.9.1's ``compute_advantage`` (verl/trainer/ppo/ray_trainer.py:187) calls a registered estimator with
``token_level_rewards``, ``response_mask``, ``config``, ``index`` (= ``non_tensor_batch["uid"]``,
L256-257) and
``reward_baselines`` (L258-259) only; ``non_tensor_batch`` goes to ``gdpo`` alone (L261-263). Open upstream PR
verl-project/verl#7473 would pass it to every estimator that accepts it. Until then the flag is found here,
in this order:

1. ``is_fatal=`` passed directly (callers that use the estimator function themselves);
2. ``non_tensor_batch=`` passed by verl (gdpo-style forwarding, or verl once #7473-like forwarding lands):
   the bridge below is then never consulted, so it switches itself off without a version check;
3. the *caller-frame bridge*: walk up at most ``MAX_FRAMES`` frames to verl's ``compute_advantage`` and read
   its ``data`` (a ``DataProto``). It is read-only (nothing in verl is patched, so import order and
   ``from ... import compute_advantage`` copies, e.g. in rLLM's trainer, do not matter) and guarded: the
   frame must belong to a function named ``compute_advantage`` whose ``data.batch["token_level_rewards"]`` and
   ``data.batch["response_mask"]`` are the very tensor objects this estimator received. On any other
   layout (a future verl refactor) it finds nothing and the estimator fails with a clear error.

``opensearch_vl.plugins.verl.startup.flag_delivery()`` runs verl's real ``compute_advantage`` once with a
probe
estimator and reports which route (2 or 3) this verl takes, so a recipe can fail fast before training.

verl's V1 trainer (``trainer.use_v1=true``) reads only uid, response_mask, rm_scores and log-prob fields
from TransferQueue before computing advantages (verl/trainer/ppo/v1/trainer_base.py:1745-1751), so
``is_fatal`` is not in its batch at all: the fatal estimators raise and name ``trainer.use_v1=false``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal, Mapping

from opensearch_vl.errors import ConfigError

__all__ = ["FatalFlags", "FLAG_KEY", "find_fatal_flags", "MAX_FRAMES"]

FLAG_KEY = "is_fatal"
MAX_FRAMES = 6
"""How far up the stack the bridge looks for compute_advantage (estimator <- compute_advantage is 1 frame;
the slack allows a decorator or two around either)."""

Source = Literal["argument", "forwarded", "caller_frame"]


@dataclass(frozen=True)
class FatalFlags:
    """The flags plus where they came from and, via the bridge, the batch they belong to."""

    values: Any
    """(bs,) array-like of booleans, validated later by ``opensearch_vl.rl.advantage.as_fatal_flags``."""
    source: Source
    data: Any = None
    """The verl ``DataProto`` when found through the caller frame (used to stash metrics), else None."""


def _batch_of(frame: FrameType, token_level_rewards: Any, response_mask: Any) -> Any:
    """``data`` of a verl compute_advantage frame that holds exactly these tensors, else None."""
    if frame.f_code.co_name != "compute_advantage":
        return None
    data = frame.f_locals.get("data")
    batch = getattr(data, "batch", None)
    if batch is None or not hasattr(data, "non_tensor_batch"):
        return None
    try:
        same = batch["token_level_rewards"] is token_level_rewards and batch["response_mask"] is response_mask
    except (KeyError, TypeError):
        return None
    return data if same else None


def _called_from_v1(start: FrameType | None) -> bool:
    frame, depth = start, 0
    while frame is not None and depth < MAX_FRAMES + 2:
        if "/trainer/ppo/v1/" in frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame, depth = frame.f_back, depth + 1
    return False


def _missing(where: str, keys: list[str], v1: bool) -> ConfigError:
    hint = (
        "verl's V1 trainer only carries uid/response_mask/rm_scores into advantage computation "
        "(verl/trainer/ppo/v1/trainer_base.py:1745), so run with trainer.use_v1=false (the legacy path, also "
        "rLLM's). "
        if v1
        else ""
    )
    return ConfigError(
        f"the fatal-aware advantage estimator needs non_tensor_batch['{FLAG_KEY}'] (one bool per row) "
        f"but {where} has only {keys}. {hint}Make the rollout producer set it (the opensearch_vl "
        "agent loop / workflow does), or use adv_estimator=grpo if you really want vanilla GRPO."
    )


def find_fatal_flags(token_level_rewards: Any, response_mask: Any, kwargs: Mapping[str, Any]) -> FatalFlags:
    """Locate ``is_fatal`` for this estimator call (routes 1-3 in the module docstring).

    Call it directly from the estimator body, so the estimator's caller is one frame up.

    Example:
        >>> find_fatal_flags(None, None, {"non_tensor_batch": {"is_fatal": [True]}}).source
        'forwarded'
    """
    if kwargs.get(FLAG_KEY) is not None:
        return FatalFlags(values=kwargs[FLAG_KEY], source="argument")
    forwarded = kwargs.get("non_tensor_batch")
    caller = sys._getframe(1)  # the estimator's frame
    if forwarded is not None:
        if FLAG_KEY not in forwarded:
            raise _missing("the forwarded non_tensor_batch", sorted(forwarded), _called_from_v1(caller))
        return FatalFlags(values=forwarded[FLAG_KEY], source="forwarded")
    frame, depth = caller.f_back, 0
    try:
        while frame is not None and depth < MAX_FRAMES:
            data = _batch_of(frame, token_level_rewards, response_mask)
            if data is not None:
                if FLAG_KEY not in data.non_tensor_batch:
                    raise _missing("the batch", sorted(data.non_tensor_batch), _called_from_v1(frame))
                return FatalFlags(values=data.non_tensor_batch[FLAG_KEY], source="caller_frame", data=data)
            frame, depth = frame.f_back, depth + 1
    finally:
        del frame, caller  # frames referencing frames: drop them now rather than at the next GC cycle
    raise ConfigError(
        f"the fatal-aware advantage estimator got no '{FLAG_KEY}': it was called neither with is_fatal= / "
        "non_tensor_batch= nor from verl's compute_advantage (verl/trainer/ppo/ray_trainer.py) with the "
        "batch it came from. Call it through compute_advantage, or pass is_fatal=np.array([...], dtype=bool)."
    )
