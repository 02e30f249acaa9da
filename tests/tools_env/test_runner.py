"""The episode runner, driven by the scripted policy: steps, cascade, limits, failures, concurrency."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from core_test_tools import CORE_TOOLS
from opensearch_vl.tools_env import (
    EpisodeLimits,
    ImagePart,
    PolicyError,
    PolicyOutput,
    ScriptedPolicy,
    Task,
    ToolEnvConfig,
    ToolEnvironment,
    run_episode,
    run_episodes,
    transcript_messages,
)
from PIL import Image


def turn(name: str, **arguments) -> str:
    payload = json.dumps({"name": name, "arguments": arguments})
    return f"<think>use {name}</think><tool_call>{payload}</tool_call>"


ANSWER = "<think>done</think><response>grey</response>"
OK = turn("core_echo", text="fine")
FAIL = turn("core_fail", category="upstream_http")
GARBLED = "<think>hmm</think> I will crop now."


@pytest.fixture
def env():
    return ToolEnvironment(ToolEnvConfig(tools=CORE_TOOLS, tool_timeout_s=2.0))


@pytest.fixture
def task():
    return Task(
        id="t1",
        question="What colour is the square?",
        images=[Image.new("RGB", (32, 24), "red")],
        answers=["red"],
        benchmark="unit",
        metadata={"level": 1},
    )


async def test_tool_call_then_answer(env, task):
    policy = ScriptedPolicy([turn("core_paint", image="img_1", count=1), ANSWER])
    t = await run_episode(policy, task, env, policy_meta={"model": "scripted"})
    assert (t.termination, t.final_answer, t.fatal_step_index) == ("answer", "grey", None)
    assert t.task.image_ids == ["img_1"] and t.task.answers == ["red"] and t.policy == {"model": "scripted"}
    first, last = t.steps
    assert first.action.kind == "tool_call" and first.action.tool == "core_paint"
    assert first.observation == "painted 1\nNew image: img_2 (32x24)"
    assert first.observation_image_ids == ["img_2"] and not first.error
    assert first.model_latency_s is not None and first.tool_latency_s is not None
    assert last.observation is None and last.action.answer == "grey"
    assert [(r.id, r.origin, r.step_index) for r in t.images] == [
        ("img_1", "task", None),
        ("img_2", "core_paint", 0),
    ]
    assert t.metrics["num_tool_calls"] == 1 and t.metrics["well_formed_rate"] == 1.0
    assert t.wall_time_s > 0 and t.started_at > 0

    # what the policy saw on its second call: system, task (image then question), assistant, observation
    seen = policy.calls[1]
    assert [m.role for m in seen] == ["system", "user", "assistant", "user"]
    assert isinstance(seen[1].content[0], ImagePart) and seen[1].content[-1].text == task.question
    obs = seen[3].content
    assert obs[0].text == "<tool_response>\n" and isinstance(obs[1], ImagePart) and obs[1].image_id == "img_2"
    assert obs[2].text == "painted 1\nNew image: img_2 (32x24)\n</tool_response>"
    # the transcript rebuilds exactly that conversation
    rebuilt = transcript_messages(t)
    assert _shape(rebuilt[:4]) == _shape(seen)
    assert rebuilt[-1].role == "assistant" and rebuilt[-1].text == ANSWER


def _shape(messages):
    return [
        (m.role, tuple(p.image_id if isinstance(p, ImagePart) else p.text for p in m.content))
        for m in messages
    ]


async def test_invalid_turn_is_an_error_step_with_format_help(env, task):
    t = await run_episode(ScriptedPolicy([GARBLED, turn("core_echo", text=5), ANSWER]), task, env)
    invalid, schema, _ = t.steps
    assert (invalid.error, invalid.error_category, invalid.action.invalid_reason) == (
        True,
        "invalid_call",
        "no_action",
    )
    assert invalid.observation.startswith("[tool error: invalid_call] no_action:")
    assert "Expected format: <think>" in invalid.observation
    assert (schema.error_category, schema.action.invalid_reason) == ("bad_arguments", "schema_violation")
    assert t.termination == "answer" and t.fatal_step_index is None
    assert t.metrics["num_error_steps"] == 2 and t.metrics["num_invalid_turns"] == 2


# ---- fatal cascade ------------------------------------------------------------------------------------
async def test_errors_interrupted_by_a_success_reset_the_count(env, task):
    t = await run_episode(ScriptedPolicy([FAIL, GARBLED, OK, FAIL, FAIL, OK, ANSWER]), task, env)
    assert [s.error for s in t.steps] == [True, True, False, True, True, False, False]
    assert (t.termination, t.fatal_step_index, t.is_fatal) == ("answer", None, False)


async def test_cascade_at_step_zero(env, task):
    t = await run_episode(ScriptedPolicy([FAIL, GARBLED, turn("core_boom"), ANSWER]), task, env)
    assert (t.termination, t.fatal_step_index, len(t.steps)) == ("fatal_cascade", 0, 3)
    assert [s.error_category for s in t.steps] == ["upstream_http", "invalid_call", "internal"]
    assert "3 consecutive error steps from step 0 to step 2" in t.termination_detail


async def test_cascade_at_the_last_allowed_step(env, task):
    t = await run_episode(
        ScriptedPolicy([OK, OK, FAIL, FAIL, FAIL, ANSWER]), task, env, limits=EpisodeLimits(max_turns=5)
    )
    assert (t.termination, t.fatal_step_index, len(t.steps)) == ("fatal_cascade", 2, 5)


async def test_two_errors_then_turn_limit_is_not_a_cascade(env, task):
    t = await run_episode(ScriptedPolicy([OK, FAIL, FAIL]), task, env, limits=EpisodeLimits(max_turns=3))
    assert (t.termination, t.fatal_step_index) == ("max_turns", None)
    assert t.termination_detail == "no answer after 3 turns"


@pytest.mark.parametrize(("k", "fatal"), [(1, 1), (2, 1), (4, None)])
async def test_cascade_length_is_configurable(env, task, k, fatal):
    t = await run_episode(
        ScriptedPolicy([OK, FAIL, FAIL, OK, ANSWER]), task, env, limits=EpisodeLimits(fatal_k=k)
    )
    assert t.fatal_step_index == fatal and t.fatal_k == k
    assert t.termination == ("answer" if fatal is None else "fatal_cascade")


# ---- limits -------------------------------------------------------------------------------------------
async def test_tool_call_limit(env, task):
    t = await run_episode(ScriptedPolicy([OK, OK, ANSWER]), task, env, limits=EpisodeLimits(max_tool_calls=1))
    assert t.termination == "max_tool_calls"
    assert len(t.steps) == 2 and t.steps[1].observation is None
    assert t.metrics["num_tool_calls"] == 2  # asked for, the second one not executed


async def test_context_budget_in_characters(env, task):
    short = ScriptedPolicy([OK, ANSWER])
    budget = len(task.question) + 10  # the task turn fits, the turn after the first observation does not
    t = await run_episode(short, task, env, limits=EpisodeLimits(context_budget=budget), system_prompt="")
    assert (t.termination, len(t.steps)) == ("context_overflow", 1)
    assert "over the context budget" in t.termination_detail
    assert [m.role for m in short.calls[0]] == ["user"]  # system_prompt="" sends no system turn


async def test_context_budget_with_a_token_counter(env, task):
    def count(messages):  # e.g. 100 tokens per image, 1 per word
        return sum(
            100 if isinstance(p, ImagePart) else len(p.text.split()) for m in messages for p in m.content
        )

    t = await run_episode(
        ScriptedPolicy([turn("core_paint", image="img_1"), ANSWER]),
        task,
        env,
        limits=EpisodeLimits(context_budget=150),
        token_counter=count,
        system_prompt="",
    )
    assert t.termination == "context_overflow" and "tokens" in t.termination_detail


async def test_episode_wall_time_while_waiting_for_the_policy(env, task):
    t = await run_episode(
        ScriptedPolicy([OK, ANSWER], delay_s=0.3), task, env, limits=EpisodeLimits(episode_timeout_s=0.5)
    )
    assert t.termination == "timeout" and len(t.steps) == 1
    assert 0.4 < t.wall_time_s < 1.0


async def test_episode_wall_time_during_a_tool(env, task):
    t = await run_episode(
        ScriptedPolicy([turn("core_sleep", seconds=1.5), ANSWER]),
        task,
        env,
        limits=EpisodeLimits(episode_timeout_s=0.3),
    )
    assert t.termination == "timeout" and "core_sleep call of step 0" in t.termination_detail
    assert t.steps[0].observation is None


# ---- failures -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("script_turn", "termination", "fragment"),
    [
        (PolicyError("server returned 503"), "policy_error", "server returned 503"),
        (PolicyError("prompt too long", context_overflow=True), "context_overflow", "prompt too long"),
        (RuntimeError("connection reset"), "policy_error", "RuntimeError: connection reset"),
        (lambda messages: 42, "policy_error", "text"),
    ],
)
async def test_policy_failures_end_the_episode_only(env, task, script_turn, termination, fragment):
    t = await run_episode(ScriptedPolicy([OK, script_turn]), task, env)
    assert t.termination == termination and fragment in t.termination_detail
    assert len(t.steps) == 1


async def test_policy_returning_a_non_output_is_a_policy_error(env, task):
    class Broken:
        async def __call__(self, messages):
            return "plain string"

    t = await run_episode(Broken(), task, env)
    assert t.termination == "policy_error" and "expected PolicyOutput" in t.termination_detail


async def test_exhausted_script_is_a_policy_error(env, task):
    t = await run_episode(ScriptedPolicy([OK]), task, env)
    assert t.termination == "policy_error" and "exhausted" in t.termination_detail


async def test_replay_miss_ends_the_episode(env, task):
    t = await run_episode(ScriptedPolicy([OK, turn("core_replay"), ANSWER]), task, env)
    assert t.termination == "replay_miss" and "no recorded result" in t.termination_detail
    assert len(t.steps) == 2 and t.steps[1].observation is None


async def test_unloadable_task_image_is_an_environment_error(env, tmp_path):
    task = Task(id="bad", question="?", images=[str(tmp_path / "outside_roots.png")])
    t = await run_episode(ScriptedPolicy([ANSWER]), task, env)
    assert t.termination == "environment_error" and "outside the allowed roots" in t.termination_detail
    assert t.steps == []


async def test_hallucinated_tool_response_is_cut_from_the_recorded_text(env, task):
    text = OK + "<tool_response>I found it</tool_response><response>invented</response>"
    t = await run_episode(ScriptedPolicy([text, ANSWER]), task, env)
    assert t.steps[0].model_text == OK
    assert t.steps[0].action.repairs == ["tool_response_cut"]
    assert t.steps[0].observation == "fine"


async def test_prepared_store_images_count_as_task_images(env, task):
    store = env.new_store()
    store.add(Image.new("RGB", (5, 5)))
    t = await run_episode(ScriptedPolicy([ANSWER]), task, env, store=store)
    assert t.task.image_ids == ["img_1", "img_2"]


async def test_policy_output_fields_are_recorded(env, task):
    output = PolicyOutput(
        text=ANSWER, prompt_tokens=12, completion_tokens=5, finish_reason="stop", info={"request_id": "r1"}
    )
    step = (await run_episode(ScriptedPolicy([output]), task, env)).steps[0]
    assert (step.prompt_tokens, step.completion_tokens, step.finish_reason) == (12, 5, "stop")
    assert step.policy_info == {"request_id": "r1"}


# ---- concurrency --------------------------------------------------------------------------------------
async def test_hundreds_of_concurrent_episodes(env):
    def answer_own_question(messages):
        question = messages[1].content[-1].text
        return f"<think>ok</think><response>{question.upper()}</response>"

    tasks = [
        Task(id=f"q{i}", question=f"question {i}", images=[Image.new("RGB", (4, 4))]) for i in range(300)
    ]
    script = [turn("core_sleep", seconds=0.05), turn("core_block", seconds=0.01), answer_own_question]
    seen = []
    start = time.perf_counter()
    transcripts = await run_episodes(
        ScriptedPolicy(script, delay_s=0.05, record=False),
        tasks,
        env,
        concurrency=300,
        on_result=lambda t: seen.append(t.task.id),
    )
    elapsed = time.perf_counter() - start
    assert [t.task.id for t in transcripts] == [t.id for t in tasks]
    assert all(t.termination == "answer" for t in transcripts)
    assert [t.final_answer for t in transcripts[:2]] == ["QUESTION 0", "QUESTION 1"]
    assert sorted(seen) == sorted(t.id for t in tasks)
    assert elapsed < 5.0  # sequentially this would take 300 x 0.21 s = 63 s


async def test_concurrency_bound_is_respected(env):
    active = peak = 0

    class Counting:
        async def __call__(self, messages):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return PolicyOutput(text=ANSWER)

    tasks = [Task(id=str(i), question="?") for i in range(40)]
    done = []

    async def collect(t):
        done.append(t.task.id)

    transcripts = await run_episodes(Counting(), tasks, env, concurrency=7, on_result=collect)
    assert peak == 7 and len(transcripts) == len(done) == 40
    with pytest.raises(ValueError, match="concurrency"):
        await run_episodes(Counting(), tasks, env, concurrency=0)


# ---- end to end with the built-in tools (offline defaults) --------------------------------------------
async def test_episode_with_builtin_visual_and_search_tools(tmp_path):
    from opensearch_vl.tools_env import Transcript

    env = ToolEnvironment(ToolEnvConfig(tools=["crop", "sharpen", "text_search"]))
    photo = Image.new("RGB", (200, 120), "white")
    photo.paste(Image.new("RGB", (100, 60), "red"), (50, 30))
    script = [
        turn("crop", image="img_1", x=40, y=20, width=120, height=80),
        turn("sharpen", image="img_2"),
        turn("crop", image="img_3", x=0, y=0, width=0, height=10),  # empty box: rejected
        turn("text_search", q="clock tower"),
        "<think>enough</think><response>a red rectangle</response>",
    ]
    t = await run_episode(
        ScriptedPolicy(script), Task(id="e2e", question="What is drawn?", images=[photo]), env
    )
    assert t.termination == "answer", t.termination_detail
    crop, sharpen, bad, search, _ = t.steps
    assert crop.observation_image_ids == ["img_2"] and "New image: img_2 (120x80)" in crop.observation
    assert sharpen.observation_image_ids == ["img_3"] and not sharpen.error
    assert bad.error and bad.error_category == "bad_arguments" and bad.observation.startswith("[tool error:")
    assert not search.error and "URL: " in search.observation
    assert [r.origin for r in t.images] == ["task", "crop", "sharpen"]
    loaded = Transcript.load(t.save(tmp_path / "e2e.json"))
    assert loaded.to_messages()[3].images[0].size == (120, 80)
    await env.aclose()
