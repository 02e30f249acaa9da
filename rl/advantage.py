"""Fatal-aware group-relative advantages (the OpenSearch-VL "fatal-aware GRPO"), framework-free.

One *group* is the G rollouts that share a uid (one prompt, ``rollout.n`` samples). For rollout i:

    r_i      = Σ_t token_level_rewards[i, t]         outcome reward (the producer puts it on one token)
    μ_G, σ_G = mean and std of r over ALL G rollouts of the group, fatal ones included
    r̃_i      = (r_i − μ_G) / (σ_G + ε)               ("grpo"; r_i − μ_G when std normalisation is off)
    r̃_i      = G/(G−1) · (r_i − μ_G)                 ("rloo": r_i minus the mean of the OTHER rollouts)
    Â_i      = max(r̃_i, 0) if rollout i is fatal, else r̃_i      (mode "clamp", the paper's Eq. advantage)
    A[i, t]  = Â_i · response_mask[i, t]            (returns = advantages, as in verl's outcome estimators)

The fatal *token* mask (the fatal step and everything after it are 0 in ``response_mask``) is applied by the
rollout producer, never here: this module only multiplies by the mask it is given, so it never un-masks a
token. ``is_fatal`` is the producer's per-rollout flag; a rollout that ends without an answer is flagged
fatal (clamp only, nothing masked).

Options (``FatalAdvantageConfig``; defaults follow the paper):

- ``mode``: ``clamp`` (default) | ``no_clamp`` | ``hard_mask``: see the ablation table below.
- ``norm_by_std``: divide by σ_G + ε (default True; verl's ``algorithm.norm_adv_by_std_in_grpo``);
  ignored by rloo.
- ``std``: ``population`` (1/G, the paper, default) | ``unbiased`` (1/(G−1), verl's ``torch.std``).
- ``epsilon``: δ in the paper, default 1e-6 (verl's value; the paper gives none).
- ``singleton``: a group of one rollout gets ``zero`` advantage (default; what population std gives) or
  its ``raw`` reward (verl's grpo/rloo: mean 0, std 1).
- A group whose rewards are all equal gets advantage exactly 0 (no float noise divided by ε).

The paper's RL ablation (Table "RL recipe"), one estimator name per row; the fatal token mask is the
producer's setting, the clamp is this module's:

    | row                            | estimator (``algorithm.adv_estimator``) | producer fatal token mask |
    |--------------------------------|------------------------------------------|---------------------------|
    | Vanilla GRPO                   | fatal_grpo_no_clamp                      | off                       |
    | GRPO w/ hard masking           | fatal_grpo_hard_mask (Â_i = 0 if fatal)  | on (irrelevant: Â_i = 0)  |
    | GRPO w/ fatal masking only     | fatal_grpo_no_clamp                      | on                        |
    | Fatal masking + one-sided clamp| fatal_grpo (the default mode)            | on                        |

The ``fatal_rloo*`` names give the same rows with the leave-one-out baseline the released recipe trains with.
Hard-masked rows keep their reward in μ_G and σ_G and stay in the batch with Â_i = 0.

Example:
    >>> import numpy as np, torch
    >>> rewards = torch.zeros(4, 3); rewards[:, -1] = torch.tensor([1.0, 0.0, 0.0, 1.0])
    >>> out = fatal_group_advantage(rewards, torch.ones(4, 3), np.array(["q"] * 4),
    ...                             np.array([False, True, False, False]))
    >>> [round(a, 4) for a in out.advantages[:, 0].tolist()]   # the fatal row's -1.0 is clamped to 0
    [1.0, 0.0, -1.0, 1.0]
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from opensearch_vl.errors import DataError

__all__ = [
    "FatalMode",
    "Baseline",
    "FatalAdvantageConfig",
    "FatalAdvantageStats",
    "FatalAdvantage",
    "fatal_group_advantage",
    "group_ids",
    "as_fatal_flags",
]

logger = logging.getLogger(__name__)

FatalMode = Literal["clamp", "no_clamp", "hard_mask"]
Baseline = Literal["grpo", "rloo"]


class FatalAdvantageConfig(BaseModel):
    """How fatal-aware advantages are computed. Defaults are the paper's.

    Example:
        >>> FatalAdvantageConfig(std="unbiased", singleton="raw")   # verl's grpo conventions
        FatalAdvantageConfig(mode='clamp', norm_by_std=True, std='unbiased', epsilon=1e-06, singleton='raw')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: FatalMode = "clamp"
    """clamp: Â = max(r̃, 0) on fatal rows; no_clamp: Â = r̃; hard_mask: Â = 0 on fatal rows."""
    norm_by_std: bool = True
    """Divide by (σ_G + ε); False gives r − μ_G (Dr.GRPO). Only the grpo baseline uses it."""
    std: Literal["population", "unbiased"] = "population"
    """population: σ² = Σ(r−μ)²/G (paper); unbiased: /(G−1) (verl's torch.std)."""
    epsilon: float = Field(default=1e-6, gt=0.0)
    """δ added to σ_G before dividing."""
    singleton: Literal["zero", "raw"] = "zero"
    """Advantage of a one-rollout group: 0, or the raw reward (verl: r/(1+ε) with std norm, r without)."""


@dataclass(frozen=True)
class FatalAdvantageStats:
    """Per-batch counts of what the fatal rule did (the paper's clamp statistics)."""

    rows: int
    fatal: int
    clamped: int
    """Fatal rows whose advantage the rule changed (clamp: r̃ < 0; hard_mask: r̃ ≠ 0; no_clamp: none)."""
    clamped_rtilde_sum: float
    """Σ r̃ over the clamped rows (so batches can be merged before taking the mean)."""

    def as_metrics(self, prefix: str = "fatal_adv/") -> dict[str, float]:
        """Flat metric dict, e.g. ``{"fatal_adv/fatal_frac": 0.25, ...}``; means are 0.0 when undefined.

        Example:
            >>> stats = FatalAdvantageStats(rows=4, fatal=1, clamped=1, clamped_rtilde_sum=-0.5)
            >>> stats.as_metrics()["fatal_adv/clamped_frac"]
            0.25
        """
        rows = max(self.rows, 1)
        return {
            f"{prefix}fatal_frac": self.fatal / rows,
            f"{prefix}clamped_frac": self.clamped / rows,
            f"{prefix}clamped_of_fatal_frac": self.clamped / self.fatal if self.fatal else 0.0,
            f"{prefix}clamped_rtilde_mean": self.clamped_rtilde_sum / self.clamped if self.clamped else 0.0,
        }


@dataclass(frozen=True)
class FatalAdvantage:
    """Result of ``fatal_group_advantage``: token advantages plus the per-row quantities behind them."""

    advantages: torch.Tensor
    """(bs, L), Â_i · response_mask, dtype of token_level_rewards."""
    returns: torch.Tensor
    """(bs, L), the same tensor as ``advantages`` (verl's outcome estimators return (adv, adv))."""
    rtilde: torch.Tensor
    """(bs,), r̃_i before the fatal rule."""
    row_advantage: torch.Tensor
    """(bs,), Â_i."""
    stats: FatalAdvantageStats


def group_ids(index: np.ndarray | list) -> tuple[torch.Tensor, int]:
    """Map uids to dense group ids 0..n_groups-1 (vectorised ``np.unique``).

    Example:
        >>> group_ids(np.array(["b", "a", "b"], dtype=object))
        (tensor([1, 0, 1]), 2)
    """
    arr = np.asarray(index)
    if arr.ndim != 1:
        raise DataError(f"index (uid) must be one id per row, got an array of shape {arr.shape}")
    try:
        uniques, inverse = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise DataError(
            f"uid values must be mutually comparable (all str), got types "
            f"{sorted({type(u).__name__ for u in arr.tolist()})}"
        ) from exc
    return torch.from_numpy(inverse.reshape(-1).astype(np.int64)), int(len(uniques))


def as_fatal_flags(is_fatal: np.ndarray | list | torch.Tensor, rows: int) -> torch.Tensor:
    """Validate the producer's per-row ``is_fatal`` flags and return a bool tensor of shape (rows,).

    Only booleans (or 0/1) are accepted: a string such as ``"False"`` or a ``None`` would otherwise be
    read as a truthy or falsy flag without anyone noticing.

    Example:
        >>> as_fatal_flags(np.array([True, False], dtype=object), 2)
        tensor([ True, False])
    """
    if isinstance(is_fatal, torch.Tensor):
        arr = is_fatal.detach().cpu().numpy()
    else:
        arr = np.asarray(is_fatal)
    if arr.shape != (rows,):
        raise DataError(
            f"is_fatal has shape {arr.shape}, expected ({rows},): one flag per rollout row; "
            "the rollout producer must set non_tensor_batch['is_fatal'] for every row"
        )
    if arr.dtype != np.bool_:
        values = set(arr.tolist())
        if not values <= {True, False}:  # 0/1 and np.bool_ hash equal to False/True; "False", None do not
            bad = sorted(repr(v) for v in values - {True, False})[:5]
            raise DataError(
                f"is_fatal must hold booleans, found {', '.join(bad)}; "
                "set non_tensor_batch['is_fatal'] = np.array([...], dtype=bool)"
            )
        arr = arr.astype(bool)
    return torch.from_numpy(np.ascontiguousarray(arr))


def _group_reduce(values: torch.Tensor, gid: torch.Tensor, n_groups: int, reduce: str) -> torch.Tensor:
    init = {"sum": 0.0, "amax": -torch.inf, "amin": torch.inf}[reduce]
    out = torch.full((n_groups,), init, dtype=values.dtype)
    if reduce == "sum":
        return out.index_add_(0, gid, values)
    return out.scatter_reduce_(0, gid, values, reduce=reduce, include_self=True)


def _relative_rewards(
    scores: torch.Tensor, gid: torch.Tensor, n_groups: int, baseline: Baseline, config: FatalAdvantageConfig
) -> torch.Tensor:
    """r̃ per row, float64; group statistics by index_add/scatter over group ids (no per-row loop)."""
    s = scores.to(torch.float64)
    counts = torch.bincount(gid, minlength=n_groups).to(torch.float64)
    mean = _group_reduce(s, gid, n_groups, "sum") / counts
    dev = s - mean[gid]
    n = counts[gid]
    if baseline == "grpo":
        if config.norm_by_std:
            sq = _group_reduce(dev * dev, gid, n_groups, "sum")
            denom = counts if config.std == "population" else (counts - 1.0).clamp(min=1.0)
            std = torch.sqrt(sq / denom)
            rtilde = dev / (std[gid] + config.epsilon)
            raw = s / (1.0 + config.epsilon)  # verl's singleton: mean 0, std 1 (core_algos.py:315-317)
        else:
            rtilde, raw = dev, s
    else:  # rloo: r_i − mean of the others = n/(n−1)·(r_i − μ)
        rtilde = dev * n / (n - 1.0).clamp(min=1.0)
        raw = s  # verl's rloo leaves a singleton's score unchanged (core_algos.py:628-633)
    all_equal = (_group_reduce(s, gid, n_groups, "amax") == _group_reduce(s, gid, n_groups, "amin"))[gid]
    rtilde = torch.where(all_equal, torch.zeros_like(rtilde), rtilde)  # also covers singletons -> 0
    if config.singleton == "raw":
        rtilde = torch.where(n == 1.0, raw, rtilde)
    return rtilde


def fatal_group_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | list,
    is_fatal: np.ndarray | list | torch.Tensor,
    config: FatalAdvantageConfig | None = None,
    baseline: Baseline = "grpo",
) -> FatalAdvantage:
    """Fatal-aware outcome advantages for a batch of rollouts (see the module docstring for the math).

    Args:
        token_level_rewards: (bs, L) rewards; a row's outcome reward is its sum over ALL tokens (as verl
            does), so a reward placed on a token the fatal mask zeroed still counts.
        response_mask: (bs, L) 1 on trained tokens, 0 elsewhere (observations, post-fatal steps, padding).
        index: (bs,) uid per row; rows with the same uid form one group.
        is_fatal: (bs,) booleans from the rollout producer.
        config: options; the paper's defaults when None.
        baseline: ``grpo`` (group mean and std) or ``rloo`` (leave-one-out mean).

    Example:
        >>> r = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
        >>> out = fatal_group_advantage(r, torch.ones(2, 2), ["a", "a"], [False, True])
        >>> [round(a, 4) for a in out.row_advantage.tolist()], out.stats.clamped
        ([1.0, 0.0], 1)
    """
    config = config or FatalAdvantageConfig()
    if token_level_rewards.ndim != 2 or response_mask.shape != token_level_rewards.shape:
        raise DataError(
            f"token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
            f"{tuple(response_mask.shape)} must both be (batch, response_length)"
        )
    rows = token_level_rewards.shape[0]
    if len(index) != rows:
        raise DataError(f"index (uid) has {len(index)} entries for {rows} rows; one uid per row is needed")
    fatal = as_fatal_flags(is_fatal, rows).to(token_level_rewards.device)
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1)
        gid, n_groups = group_ids(index)
        rtilde = _relative_rewards(scores.cpu(), gid, n_groups, baseline, config).to(scores.device)
        if config.mode == "clamp":
            changed = fatal & (rtilde < 0)
        elif config.mode == "hard_mask":
            changed = fatal & (rtilde != 0)
        else:
            changed = torch.zeros_like(fatal)
        row_adv = torch.where(changed, torch.zeros_like(rtilde), rtilde).to(scores.dtype)
        advantages = row_adv.unsqueeze(-1) * response_mask
    stats = FatalAdvantageStats(
        rows=rows,
        fatal=int(fatal.sum()),
        clamped=int(changed.sum()),
        clamped_rtilde_sum=float(rtilde[changed].sum()),
    )
    return FatalAdvantage(
        advantages=advantages,
        returns=advantages,
        rtilde=rtilde.to(scores.dtype),
        row_advantage=row_adv,
        stats=stats,
    )
