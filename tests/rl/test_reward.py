"""Eq. 9 reward and fatal classification, hand-computed from the definitions."""

from __future__ import annotations

import asyncio

import pytest
from opensearch_vl.rl.reward import CompositeReward, RewardConfig, format_reward
from opensearch_vl.rl.workflow_core import RLLM_TERMINATION, FatalConfig, classify_episode, score_episode
from opensearch_vl.tools_env.transcript import Action, Score, Step, TaskInfo, Transcript

from opensearch_vl.errors import JudgeError


def step(i, kind="tool_call", well_formed=True, error=False):
    return Step(
        index=i,
        model_text="t",
        action=Action(kind=kind, well_formed=well_formed, tool="zoom" if kind == "tool_call" else None),
        error=error,
        error_category="timeout" if error else None,
    )


def transcript(steps, termination="answer", answer="blue", fatal=None):
    return Transcript(
        task=TaskInfo(id="q", question="?", answers=["blue"]),
        steps=steps,
        termination=termination,
        final_answer=answer,
        fatal_step_index=fatal,
    )


class Judge:
    """A judge at the AnswerScorer/ProcessScorer boundary: returns a fixed verdict or fails like an outage."""

    def __init__(self, value=None, fail=False):
        self.value, self.fail, self.calls = value, fail, 0

    async def __call__(self, t, kept=None):
        self.calls += 1
        if self.fail:
            raise JudgeError("judge endpoint down after 3 attempts")
        return Score(value=self.value)


def score(t, reward=None, config=None):
    return asyncio.run(score_episode(t, reward or CompositeReward(), config))


def test_equation_9_with_judges():
    t = transcript([step(0), step(1, well_formed=False), step(2, kind="answer")])
    reward = CompositeReward(
        RewardConfig(accuracy_weight=0.8), answer_judge=Judge(1.0), process_judge=Judge(0.5)
    )
    s = score(t, reward)
    assert s.reward.r_fmt == pytest.approx(2 / 3)
    assert s.reward.total == pytest.approx(2 / 3 * (0.8 * 1.0 + 0.2 * 0.5))
    assert not s.outcome.is_fatal and s.outcome.kept_steps == 3
    assert t.scores["reward"].value == pytest.approx(s.reward.total)


def test_fatal_prefix_only_and_error_steps_score_zero_format():
    steps = [step(0), step(1, error=True), step(2, error=True), step(3, error=True)]
    t = transcript(steps, termination="fatal_cascade", answer=None, fatal=1)
    process = Judge(0.9)
    s = score(t, CompositeReward(process_judge=process))
    assert s.outcome.is_fatal and s.outcome.kept_steps == 1 and s.outcome.fatal_reason == "consecutive_errors"
    assert s.reward.scored_steps == 1 and s.reward.r_fmt == 1.0 and s.reward.r_acc == 0.0
    assert s.reward.r_query == pytest.approx(0.9) and s.reward.total == pytest.approx(0.2 * 0.9)
    assert format_reward(steps) == 0.25


def test_fatal_at_step_zero_gives_zero_reward():
    steps = [step(i, error=True) for i in range(3)]
    s = score(transcript(steps, termination="fatal_cascade", answer=None, fatal=0))
    assert s.outcome.kept_steps == 0 and s.reward.total == 0.0 and s.reward.scored_steps == 0


def test_no_answer_is_fatal_for_the_clamp_only_and_configurable():
    t = transcript([step(0), step(1)], termination="max_turns", answer=None)
    s = score(t)
    assert s.outcome.is_fatal and s.outcome.kept_steps == 2 and s.outcome.fatal_reason == "no_answer"
    assert s.outcome.fatal_step_index == 2
    off = classify_episode(t, FatalConfig(no_answer_is_fatal=False))
    assert not off.is_fatal and off.fatal_step_index is None


def test_judge_outage_degrades_to_rule_match_and_is_counted():
    reward = CompositeReward(answer_judge=Judge(fail=True), process_judge=Judge(fail=True))
    s = score(transcript([step(0), step(1, kind="answer")]), reward)
    assert s.reward.r_acc == 1.0 and s.reward.acc_fallback  # "blue" == "blue" by the rule matcher
    assert s.reward.r_query == 0.0 and s.reward.query_fallback
    assert reward.counters.acc_fallbacks == 1 and reward.counters.query_fallbacks == 1


def test_unparseable_verdict_falls_back_and_no_tool_means_no_query_call():
    process = Judge(0.7)
    reward = CompositeReward(answer_judge=Judge(None), process_judge=process)
    s = score(transcript([step(0, kind="answer")], answer="green"), reward)
    assert s.reward.r_acc == 0.0 and s.reward.acc_fallback
    assert s.reward.r_query == 0.0 and process.calls == 0 and not s.reward.query_fallback


def test_weights_and_gate_are_configurable():
    t = transcript([step(0, well_formed=False), step(1, kind="answer", well_formed=False)])
    gated = score(t, CompositeReward(RewardConfig(accuracy_weight=1.0)))
    ungated = score(t, CompositeReward(RewardConfig(accuracy_weight=1.0, format_gate=False)))
    assert gated.reward.total == 0.0 and ungated.reward.total == 1.0


def test_every_termination_maps_to_an_rllm_reason():
    from opensearch_vl.tools_env.transcript import Termination

    assert set(RLLM_TERMINATION) == set(Termination.__args__)
