"""The RL reward of the recipe (paper Eq. 9): r = r_fmt · (α·r_acc + (1−α)·r_query), α = 0.8.

- ``r_fmt`` — the fraction of well-formed steps (``<think>`` then exactly one ``<tool_call>`` or
  ``<response>``/``<answer>``) among the steps *before the fatal step*; an error step scores 0. With no
  scored step it is 0. It gates the whole reward multiplicatively.
- ``r_acc`` — the answer judge's verdict on the final answer (0 when the episode gave none). When the judge
  is down, raises, or returns no verdict, the rule-based fallback (normalized exact match) decides and the
  event is counted; it never fails the batch.
- ``r_query`` — the process judge's 0–1 score of the tool use before the fatal step; 0 when no tool was
  called there (no judge call). A judge outage gives ``query_fallback_value`` (0 as in the released code),
  counted.

"Before the fatal step" is ``steps[:kept]`` where ``kept`` is the number of steps that stay in the loss
(:func:`opensearch_vl.rl.workflow_core.classify_episode`).

The judges are anything matching :class:`AnswerScorer` / :class:`ProcessScorer`: the evaluation harness's
judges, an adapter around them, or :class:`ExactMatchScorer` for offline runs.

Example:
    >>> reward = CompositeReward(RewardConfig())
    >>> breakdown = asyncio.run(reward.score(transcript, kept_steps=len(transcript.steps)))  # doctest: +SKIP
    >>> breakdown.total  # doctest: +SKIP
    0.8
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from opensearch_vl.eval.answer_match import rule_match
from opensearch_vl.tools_env.transcript import Score, Step, Transcript
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RewardConfig",
    "RewardBreakdown",
    "RewardCounters",
    "AnswerScorer",
    "ProcessScorer",
    "ExactMatchScorer",
    "CompositeReward",
    "format_reward",
    "eval_judges",
]

logger = logging.getLogger(__name__)


class RewardConfig(BaseModel):
    """Weights and fallbacks of the composite reward (user-facing; unknown keys are rejected)."""

    model_config = ConfigDict(extra="forbid")

    accuracy_weight: float = Field(0.8, ge=0.0, le=1.0)
    """α: weight of r_acc; r_query gets 1−α (paper: 0.8)."""
    format_gate: bool = True
    """Multiply by r_fmt (the paper's gate). False gives α·r_acc + (1−α)·r_query."""
    query_fallback_value: float = Field(0.0, ge=0.0, le=1.0)
    """r_query when the process judge is down or gives no score (released code: 0)."""
    judge_timeout_s: float = Field(120.0, gt=0)
    """Wall-time limit of one judge call; past it the fallback decides (counted)."""


@dataclass(frozen=True)
class RewardBreakdown:
    """The reward of one episode and its parts; ``*_fallback`` says the judge could not decide."""

    total: float
    r_fmt: float
    r_acc: float
    r_query: float
    scored_steps: int
    """Steps r_fmt was averaged over (the pre-fatal steps)."""
    tool_steps: int
    """Pre-fatal steps that called a tool (what r_query judged)."""
    acc_fallback: bool = False
    query_fallback: bool = False

    def as_metrics(self) -> dict[str, float]:
        """Flat float metrics (for rLLM episode metrics / verl extra fields)."""
        return {k: float(v) for k, v in asdict(self).items()}


@dataclass
class RewardCounters:
    """How often each judge could not decide (per :class:`CompositeReward` instance)."""

    episodes: int = 0
    acc_fallbacks: int = 0
    query_fallbacks: int = 0


class AnswerScorer(Protocol):
    """Scores the final answer of a transcript: ``Score(value in [0, 1])``; ``value=None`` = no verdict."""

    async def __call__(self, transcript: Transcript) -> Score: ...


class ProcessScorer(Protocol):
    """Scores the tool use of ``transcript.steps[:kept_steps]`` in [0, 1]; ``value=None`` = no verdict."""

    async def __call__(self, transcript: Transcript, kept_steps: int) -> Score: ...


class ExactMatchScorer:
    """Rule-based answer scorer (the evaluation harness's ``rule_match``): 1 iff the answer matches a
    reference.

    Example:
        >>> from opensearch_vl.tools_env.transcript import TaskInfo
        >>> t = Transcript(task=TaskInfo(id="q", question="?", answers=["Paris"]), final_answer="paris.")
        >>> asyncio.run(ExactMatchScorer()(t)).value
        1.0
    """

    async def __call__(self, transcript: Transcript) -> Score:
        return self.score(transcript.final_answer, transcript.task.answers)

    @staticmethod
    def score(prediction: str | None, answers: Sequence[str]) -> Score:
        """Score ``prediction`` against ``answers`` synchronously."""
        if prediction is None or not answers:
            return Score(
                value=0.0, explanation="no answer" if prediction is None else "no reference", fallback=True
            )
        hit = rule_match(prediction, list(answers))
        return Score(
            value=1.0 if hit else 0.0,
            explanation="rule-based match (normalized exact / alias / contains)",
            fallback=True,
        )


def _step_format_ok(step: Step) -> bool:
    return (not step.error) and step.action.well_formed


def format_reward(steps: Sequence[Step]) -> float:
    """r_fmt: the fraction of well-formed, non-error steps among ``steps`` (0 for no steps).

    Example:
        >>> format_reward([])
        0.0
    """
    if not steps:
        return 0.0
    return sum(_step_format_ok(s) for s in steps) / len(steps)


class CompositeReward:
    """Computes Eq. 9 for a transcript and records the parts on ``transcript.scores``.

    Args:
        config: weights and fallbacks.
        answer_judge: scorer of the final answer; ``None`` = rule-based only (offline).
        process_judge: scorer of the tool use; ``None`` = every r_query is ``query_fallback_value``
            (counted as a fallback when tools were called).

    Example:
        >>> reward = CompositeReward(RewardConfig(accuracy_weight=0.8))
        >>> asyncio.run(reward.score(t, kept_steps=0)).total  # doctest: +SKIP
        0.0
    """

    def __init__(
        self,
        config: RewardConfig | None = None,
        *,
        answer_judge: AnswerScorer | None = None,
        process_judge: ProcessScorer | None = None,
    ) -> None:
        self.config = config or RewardConfig()
        self.answer_judge = answer_judge
        self.process_judge = process_judge
        self.counters = RewardCounters()

    async def score(self, transcript: Transcript, *, kept_steps: int) -> RewardBreakdown:
        """Score ``transcript`` using only ``steps[:kept_steps]`` for the process terms; never raises."""
        cfg = self.config
        prefix = transcript.steps[:kept_steps]
        r_fmt = format_reward(prefix)
        acc, acc_fallback = await self._accuracy(transcript)
        tool_steps = sum(1 for s in prefix if s.action.kind == "tool_call")
        query, query_fallback = await self._query(transcript, kept_steps, tool_steps)
        mixed = cfg.accuracy_weight * acc + (1.0 - cfg.accuracy_weight) * query
        total = r_fmt * mixed if cfg.format_gate else mixed
        self.counters.episodes += 1
        self.counters.acc_fallbacks += acc_fallback
        self.counters.query_fallbacks += query_fallback
        breakdown = RewardBreakdown(
            total=float(total),
            r_fmt=float(r_fmt),
            r_acc=float(acc),
            r_query=float(query),
            scored_steps=len(prefix),
            tool_steps=tool_steps,
            acc_fallback=acc_fallback,
            query_fallback=query_fallback,
        )
        transcript.scores["r_fmt"] = Score(
            value=breakdown.r_fmt, explanation=f"{len(prefix)} pre-fatal steps"
        )
        transcript.scores["reward"] = Score(
            value=breakdown.total,
            explanation="r_fmt·(α·r_acc+(1−α)·r_query)",
            metadata={"accuracy_weight": cfg.accuracy_weight},
        )
        return breakdown

    async def _accuracy(self, transcript: Transcript) -> tuple[float, bool]:
        if transcript.final_answer is None:
            transcript.scores["r_acc"] = Score(value=0.0, explanation="no final answer")
            return 0.0, False
        if self.answer_judge is not None:
            try:
                verdict = await asyncio.wait_for(self.answer_judge(transcript), self.config.judge_timeout_s)
            except Exception as exc:  # a judge outage must never kill the batch: fall back, count, log
                logger.warning(
                    "answer judge failed on %s (%s: %s); using exact match",
                    transcript.task.id,
                    type(exc).__name__,
                    exc,
                )
                verdict = None
                reason = f"judge failed: {type(exc).__name__}: {exc}"
            else:
                reason = "judge gave no verdict"
            if verdict is not None and verdict.value is not None:
                transcript.scores["r_acc"] = verdict
                return float(verdict.value), bool(verdict.fallback)
        else:
            reason = "no answer judge configured"
        fallback = ExactMatchScorer.score(transcript.final_answer, transcript.task.answers)
        fallback.metadata["reason"] = reason
        transcript.scores["r_acc"] = fallback
        return float(fallback.value or 0.0), self.answer_judge is not None

    async def _query(self, transcript: Transcript, kept_steps: int, tool_steps: int) -> tuple[float, bool]:
        if tool_steps == 0:
            transcript.scores["r_query"] = Score(value=0.0, explanation="no tool call before the fatal step")
            return 0.0, False
        value = self.config.query_fallback_value
        if self.process_judge is None:
            transcript.scores["r_query"] = Score(
                value=value, explanation="no process judge configured", fallback=True
            )
            return value, False
        try:
            verdict = await asyncio.wait_for(
                self.process_judge(transcript, kept_steps), self.config.judge_timeout_s
            )
        except Exception as exc:  # outage: fallback value, counted
            logger.warning("process judge failed on %s (%s: %s)", transcript.task.id, type(exc).__name__, exc)
            verdict = Score(value=None, explanation=f"judge failed: {type(exc).__name__}: {exc}")
        if verdict.value is None:
            transcript.scores["r_query"] = Score(
                value=value,
                explanation=verdict.explanation or "no verdict",
                fallback=True,
                raw_output=verdict.raw_output,
            )
            return value, True
        transcript.scores["r_query"] = verdict
        return min(1.0, max(0.0, float(verdict.value))), bool(verdict.fallback)


class _EvalAnswerScorer:
    def __init__(self, judge) -> None:
        self.judge = judge

    async def __call__(self, transcript: Transcript) -> Score:
        return await self.judge.judge_transcript(transcript)


class _EvalProcessScorer:
    def __init__(self, judge) -> None:
        self.judge = judge

    async def __call__(self, transcript: Transcript, kept_steps: int) -> Score:
        # ProcessJudge summarizes the steps before transcript.fatal_step_index: the same prefix as kept_steps
        # (a no-answer fatal keeps every step and has no fatal_step_index on the transcript).
        return await self.judge.score(transcript)


def eval_judges(config=None) -> tuple[AnswerScorer, ProcessScorer | None]:
    """The evaluation harness's judges as reward scorers: ``(answer, process)``.

    Without an endpoint the answer judge is the rule matcher and there is no process judge (r_query then
    takes ``query_fallback_value`` whenever tools were called, not counted as an outage).

    Example:
        >>> answer, process = eval_judges()  # rule-based, offline
        >>> process is None
        True
    """
    from opensearch_vl.eval.judge import AnswerJudge, JudgeConfig, ProcessJudge

    config = config or JudgeConfig()
    answer = _EvalAnswerScorer(AnswerJudge(config))
    process = _EvalProcessScorer(ProcessJudge(config)) if config.endpoint is not None else None
    return answer, process
