"""Framework-free core of the RL agent: which steps train, whether a rollout is fatal, how it ended.

Both adapters (the rLLM workflow and the verl agent loop) call :func:`classify_episode` on the finished
transcript and :func:`score_episode` to get everything a training row needs.

Fatal semantics (paper §"Fatal-aware GRPO"; the released code's choices are noted):

- A **cascade** (K consecutive error steps, found by the episode runner) makes its first step the fatal step
  ``f``: steps ``< f`` train, steps ``>= f`` leave the loss, and the rollout's advantage is clamped at 0 from
  below (``is_fatal``).
- **No answer without a cascade** (turn limit, context overflow, timeout, …): the project's decision,
  matching the released code, is *fatal for the clamp only* — nothing is masked (``kept = len(steps)``).
  ``FatalConfig.no_answer_is_fatal=False`` makes such rollouts ordinary.
- An answered rollout without a cascade is not fatal; every step trains.

Example:
    >>> from opensearch_vl.tools_env.transcript import TaskInfo
    >>> t = Transcript(task=TaskInfo(id="q", question="?"), termination="answer")
    >>> classify_episode(t, FatalConfig()).is_fatal
    False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from opensearch_vl.rl.reward import CompositeReward, RewardBreakdown
from opensearch_vl.tools_env.transcript import Transcript
from pydantic import BaseModel, ConfigDict

__all__ = [
    "FatalConfig",
    "EpisodeOutcome",
    "ScoredEpisode",
    "classify_episode",
    "score_episode",
    "RLLM_TERMINATION",
]

FatalReason = Literal["consecutive_errors", "no_answer"]


class FatalConfig(BaseModel):
    """When a rollout counts as fatal (user-facing; unknown keys are rejected)."""

    model_config = ConfigDict(extra="forbid")

    no_answer_is_fatal: bool = True
    """A rollout that ends without an answer (and without a cascade) gets the clamp, nothing masked."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the trainer needs to know about a finished episode."""

    kept_steps: int
    """Steps that stay in the loss: ``steps[:kept_steps]`` (the fatal step and later ones leave it)."""
    is_fatal: bool
    """The advantage is clamped at 0 from below."""
    fatal_step_index: int | None
    """Cascade start for cascades, ``len(steps)`` for no-answer fatals, ``None`` when not fatal."""
    fatal_reason: FatalReason | None
    termination: str
    """The transcript's termination (``answer``, ``fatal_cascade``, ``max_turns`` …)."""
    num_steps: int


@dataclass(frozen=True)
class ScoredEpisode:
    """An episode's outcome and reward, ready to become a training row."""

    outcome: EpisodeOutcome
    reward: RewardBreakdown

    def info(self) -> dict[str, float | int | bool | str | None]:
        """Flat info for rLLM episode info / verl extra fields (JSON-friendly)."""
        o = self.outcome
        return {
            "is_fatal": o.is_fatal,
            "fatal_step_index": o.fatal_step_index,
            "fatal_reason": o.fatal_reason,
            "kept_steps": o.kept_steps,
            "num_steps": o.num_steps,
            "termination": o.termination,
            **{f"reward/{k}": v for k, v in self.reward.as_metrics().items()},
        }

    def metrics(self) -> dict[str, float]:
        """Numeric metrics only (what rLLM averages per batch)."""
        o = self.outcome
        return {
            "is_fatal": float(o.is_fatal),
            "fatal_step_index": float(-1 if o.fatal_step_index is None else o.fatal_step_index),
            "kept_steps": float(o.kept_steps),
            "num_steps": float(o.num_steps),
            "answered": float(o.termination == "answer"),
            **{f"reward/{k}": v for k, v in self.reward.as_metrics().items()},
        }


def classify_episode(transcript: Transcript, config: FatalConfig | None = None) -> EpisodeOutcome:
    """Decide kept steps and the fatal flag of a finished transcript (see the module docstring).

    Example:
        >>> classify_episode(t).kept_steps  # doctest: +SKIP
        3
    """
    config = config or FatalConfig()
    n = len(transcript.steps)
    termination = transcript.termination or "environment_error"
    if transcript.fatal_step_index is not None:
        f = max(0, min(transcript.fatal_step_index, n))
        return EpisodeOutcome(f, True, f, "consecutive_errors", termination, n)
    if termination != "answer" and config.no_answer_is_fatal:
        return EpisodeOutcome(n, True, n, "no_answer", termination, n)
    return EpisodeOutcome(n, False, None, None, termination, n)


async def score_episode(
    transcript: Transcript, reward: CompositeReward, config: FatalConfig | None = None
) -> ScoredEpisode:
    """Classify and score a transcript; records ``is_fatal`` and the reward parts on it.

    Example:
        >>> scored = asyncio.run(score_episode(t, CompositeReward()))  # doctest: +SKIP
    """
    outcome = classify_episode(transcript, config)
    breakdown = await reward.score(transcript, kept_steps=outcome.kept_steps)
    transcript.metrics.update({"is_fatal": float(outcome.is_fatal), "kept_steps": float(outcome.kept_steps)})
    return ScoredEpisode(outcome, breakdown)


RLLM_TERMINATION: dict[str, str] = {
    "answer": "ENV_DONE",
    "fatal_cascade": "ENV_DONE",
    "max_turns": "MAX_TURNS_EXCEEDED",
    "max_tool_calls": "MAX_TURNS_EXCEEDED",
    "context_overflow": "MAX_PROMPT_LENGTH_EXCEEDED",
    "policy_error": "ERROR",
    "timeout": "TIMEOUT",
    "replay_miss": "ERROR",
    "environment_error": "ERROR",
}
"""Our termination → the name of rLLM's ``TerminationReason`` member.

A cascade is a normal end of the environment (``ENV_DONE``): the rollout is data and must stay in the group
statistics. Only infrastructure failures map to ``ERROR``, which rLLM retries."""
