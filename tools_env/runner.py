"""The episode runner: drive a chat policy against the tools and record a transcript.

One episode: the policy sees the system prompt and the task turn (images, then question), answers with a
turn, the turn is parsed (:func:`~opensearch_vl.tools_env.parser.parse_turn`), a tool call is executed by the
:class:`~opensearch_vl.tools_env.environment.ToolEnvironment` and its observation appended, until one of the
terminations of :data:`~opensearch_vl.tools_env.transcript.Termination`:

==================  ==========================================================================================
``answer``          the model gave a final answer
``fatal_cascade``   K consecutive error steps (``limits.fatal_k``, default 3); the episode stops there and
                    ``fatal_step_index`` is the first step of the cascade
``max_turns``       ``limits.max_turns`` model turns without an answer
``max_tool_calls``  the model asked for one tool call more than ``limits.max_tool_calls`` (not executed)
``context_overflow``  the next prompt exceeds ``limits.context_budget``, or the policy said so
``policy_error``    the policy raised (:class:`~opensearch_vl.tools_env.policy.PolicyError` or anything else)
``timeout``         the episode's wall time (``limits.episode_timeout_s``) ran out
``replay_miss``     replay-only cache mode met a call that was never recorded
``environment_error``  the harness itself failed (a task image that cannot be loaded, a bug); recorded
==================  ==========================================================================================

**Error steps.** A step is an error step when its turn could not be parsed (category ``invalid_call``, or
``bad_arguments`` for a schema violation; the observation tells the model the expected format) or when the
tool call failed (the tool's category). A successful step resets the consecutive-error count.

:func:`run_episode` never raises (except on cancellation): every failure is a termination recorded on the
transcript. :func:`run_episodes` runs many episodes concurrently with bounded concurrency; tools doing CPU
work run in worker threads (:class:`~opensearch_vl.tools_env.tool.FunctionTool`), so the event loop only
schedules.

Example:
    >>> import asyncio
    >>> from opensearch_vl.tools_env import ScriptedPolicy, Task, ToolEnvironment
    >>> policy = ScriptedPolicy(["<think>easy</think><response>4</response>"])
    >>> t = asyncio.run(run_episode(policy, Task(id="q", question="2+2?"), ToolEnvironment(tools=[])))
    >>> t.termination, t.final_answer
    ('answer', '4')
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.observation import (
    assistant_message,
    invalid_turn_observation,
    message_chars,
    observation_message,
    system_message,
    task_message,
    truncate_text,
)
from opensearch_vl.tools_env.parser import cut_at_tool_response, parse_turn
from opensearch_vl.tools_env.policy import ChatMessage, ChatPolicy, ImagePart, PolicyError, PolicyOutput
from opensearch_vl.tools_env.task import Task
from opensearch_vl.tools_env.transcript import ImageRecord, Step, Termination, Transcript
from pydantic import BaseModel, ConfigDict, Field

from opensearch_vl.errors import ReplayMissError, ToolError

__all__ = ["EpisodeLimits", "TokenCounter", "run_episode", "run_episodes", "replay_episode"]

logger = logging.getLogger(__name__)

_TIMEOUTS = (asyncio.TimeoutError, TimeoutError)  # distinct classes before Python 3.11

TokenCounter = Callable[[Sequence[ChatMessage]], int]
"""Counts the prompt size of a message list in tokens (images included, as the model's processor would)."""


class EpisodeLimits(BaseModel):
    """Per-episode limits. Unknown keys are rejected.

    Example:
        >>> EpisodeLimits(max_turns=10, fatal_k=3).max_turns
        10
    """

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(50, ge=1)
    """Model turns per episode (the paper's 50 LLM calls)."""
    max_tool_calls: int | None = Field(None, ge=0)
    """Tool calls executed per episode; ``None`` = no limit beyond ``max_turns``."""
    episode_timeout_s: float | None = Field(None, gt=0)
    """Wall time of the whole episode (policy calls and tools); ``None`` = unlimited."""
    context_budget: int | None = Field(None, ge=1)
    """Largest prompt sent to the policy, in characters of text, or in tokens when a ``token_counter`` is
    given to :func:`run_episode`; ``None`` = unlimited."""
    fatal_k: int = Field(3, ge=1)
    """K: consecutive error steps that make a fatal cascade and end the episode."""


class _Ended(Exception):
    def __init__(self, termination: Termination, detail: str) -> None:
        super().__init__(detail)
        self.termination: Termination = termination
        self.detail = detail


async def run_episode(
    policy: ChatPolicy,
    task: Task,
    env: ToolEnvironment,
    *,
    limits: EpisodeLimits | None = None,
    store: ImageStore | None = None,
    system_prompt: str | None = None,
    token_counter: TokenCounter | None = None,
    policy_meta: dict[str, Any] | None = None,
) -> Transcript:
    """Run one episode of ``policy`` on ``task`` and return its transcript; raises only on cancellation.

    Args:
        policy: any :class:`~opensearch_vl.tools_env.policy.ChatPolicy`.
        task: the question and its images.
        env: the tool environment (shared by concurrent episodes).
        limits: turn, tool-call, time, context and cascade limits (defaults: :class:`EpisodeLimits`).
        store: an image store to use; images already in it count as task images before ``task.images``.
        system_prompt: the system prompt text; ``None`` uses ``env.system_prompt()``, ``""`` sends none.
        token_counter: measure ``limits.context_budget`` in tokens with this instead of characters.
        policy_meta: recorded as ``Transcript.policy`` (model name, sampling settings).

    Example:
        >>> call = '<think>a</think><tool_call>{"name": "crop", "arguments": {}}</tool_call>'
        >>> policy = ScriptedPolicy([call,
        ...                          "<think>ok</think><response>cat</response>"])  # doctest: +SKIP
        >>> asyncio.run(run_episode(policy, task, env)).steps[0].action.tool  # doctest: +SKIP
        'crop'
    """
    limits = limits or EpisodeLimits()
    prompt = env.system_prompt() if system_prompt is None else system_prompt
    started, clock = time.time(), time.monotonic()
    transcript = Transcript(
        task=task.info([]),
        system_prompt=prompt or None,
        tools=env.openai_tools(),
        fatal_k=limits.fatal_k,
        policy=dict(policy_meta or {}),
        started_at=started,
    )
    deadline = clock + limits.episode_timeout_s if limits.episode_timeout_s else None
    try:
        await _drive(policy, task, env, limits, store or env.new_store(), transcript, deadline, token_counter)
    except _Ended as end:
        transcript.termination, transcript.termination_detail = end.termination, end.detail
    except Exception as exc:  # a harness bug: record it on the transcript, never crash the batch
        logger.exception("episode %s: environment error", task.id)
        transcript.termination = "environment_error"
        transcript.termination_detail = f"{exc.__class__.__name__}: {exc}"
    transcript.wall_time_s = time.monotonic() - clock
    transcript.metrics.update(_metrics(transcript))
    return transcript


async def _drive(
    policy: ChatPolicy,
    task: Task,
    env: ToolEnvironment,
    limits: EpisodeLimits,
    store: ImageStore,
    transcript: Transcript,
    deadline: float | None,
    token_counter: TokenCounter | None,
) -> None:
    try:
        if task.images:
            await env.offload(lambda: [store.add(image, origin="task") for image in task.images])
    except ToolError as exc:
        raise _Ended(
            "environment_error", f"task {task.id!r}: cannot load task image {len(store) + 1}: {exc.message}"
        ) from exc
    task_ids = store.ids
    transcript.task.image_ids = list(task_ids)
    _record_images(transcript, store, task_ids, None)

    messages: list[ChatMessage] = []
    if transcript.system_prompt:
        messages.append(system_message(transcript.system_prompt))
    messages.append(task_message(task.question, [ImagePart(i, store.get(i)) for i in task_ids]))
    chars = sum(message_chars(m) for m in messages)
    specs = env.specs
    consecutive_errors = 0
    tool_calls = 0

    for index in range(limits.max_turns):
        if limits.context_budget is not None:
            used = token_counter(messages) if token_counter else chars
            if used > limits.context_budget:
                unit = "tokens" if token_counter else "characters"
                raise _Ended(
                    "context_overflow",
                    f"the prompt for turn {index} has {used} {unit}, over the "
                    f"context budget of {limits.context_budget}",
                )
        began = time.perf_counter()
        output = await _call_policy(policy, tuple(messages), deadline, index)
        model_latency = time.perf_counter() - began
        action = parse_turn(output.text, specs)
        model_text, _ = cut_at_tool_response(output.text)
        step = dict(
            index=index,
            model_text=model_text,
            action=action,
            model_latency_s=model_latency,
            prompt_tokens=output.prompt_tokens,
            completion_tokens=output.completion_tokens,
            finish_reason=output.finish_reason,
            policy_info=dict(output.info),
        )

        if action.kind == "answer":
            transcript.steps.append(Step(**step))
            transcript.final_answer = action.answer
            raise _Ended("answer", f"answered at step {index}")

        image_ids: tuple[str, ...] = ()
        if action.kind == "invalid":
            observation, _ = truncate_text(invalid_turn_observation(action), env.config.max_output_chars)
            category = "bad_arguments" if action.invalid_reason == "schema_violation" else "invalid_call"
            step.update(observation=observation, error=True, error_category=category)
        else:
            if limits.max_tool_calls is not None and tool_calls >= limits.max_tool_calls:
                transcript.steps.append(Step(**step))
                raise _Ended(
                    "max_tool_calls",
                    f"step {index} asked for tool call {tool_calls + 1}; the limit is "
                    f"{limits.max_tool_calls}",
                )
            tool_calls += 1
            try:
                outcome = await _until(env.execute(action.tool, action.arguments, store), deadline)
            except ReplayMissError as exc:
                transcript.steps.append(Step(**step))
                raise _Ended("replay_miss", f"step {index}: {exc.message}") from exc
            except _TIMEOUTS as exc:
                transcript.steps.append(Step(**step))
                raise _Ended(
                    "timeout",
                    f"the episode's {limits.episode_timeout_s:g} s ran out during the "
                    f"{action.tool} call of step {index}",
                ) from exc
            image_ids = outcome.image_ids
            step.update(
                observation=outcome.text,
                observation_image_ids=list(image_ids),
                error=outcome.error,
                error_category=outcome.category,
                tool_info=outcome.info,
                tool_latency_s=outcome.latency_s,
            )
            _record_images(transcript, store, image_ids, index)

        recorded = Step(**step)
        transcript.steps.append(recorded)
        consecutive_errors = consecutive_errors + 1 if recorded.error else 0
        if consecutive_errors >= limits.fatal_k:
            transcript.fatal_step_index = index - limits.fatal_k + 1
            raise _Ended(
                "fatal_cascade",
                f"{limits.fatal_k} consecutive error steps from step "
                f"{transcript.fatal_step_index} to step {index}",
            )
        messages.append(assistant_message(model_text))
        messages.append(
            observation_message(recorded.observation or "", [ImagePart(i, store.get(i)) for i in image_ids])
        )
        chars += message_chars(messages[-2]) + message_chars(messages[-1])

    raise _Ended("max_turns", f"no answer after {limits.max_turns} turns")


async def _call_policy(
    policy: ChatPolicy, messages: tuple[ChatMessage, ...], deadline: float | None, index: int
) -> PolicyOutput:
    try:
        output = await _until(policy(messages), deadline)
    except _TIMEOUTS as exc:
        if deadline is not None and time.monotonic() >= deadline:
            raise _Ended(
                "timeout", f"the episode's wall time ran out waiting for the policy at turn {index}"
            ) from exc
        raise _Ended(
            "policy_error", f"turn {index}: the policy timed out ({exc.__class__.__name__}: {exc})"
        ) from exc
    except PolicyError as exc:
        reason: Termination = "context_overflow" if exc.context_overflow else "policy_error"
        raise _Ended(reason, f"turn {index}: {exc}") from exc
    except Exception as exc:  # any policy failure ends this episode only
        raise _Ended("policy_error", f"turn {index}: {exc.__class__.__name__}: {exc}") from exc
    if not isinstance(getattr(output, "text", None), str):
        raise _Ended(
            "policy_error",
            f"turn {index}: the policy returned {type(output).__name__}, "
            "expected PolicyOutput with a str text",
        )
    return output


async def _until(awaitable: Awaitable[Any], deadline: float | None) -> Any:
    if deadline is None:
        return await awaitable
    return await asyncio.wait_for(awaitable, timeout=max(0.0, deadline - time.monotonic()))


def _record_images(
    transcript: Transcript, store: ImageStore, ids: Sequence[str], step_index: int | None
) -> None:
    for image_id in ids:
        stored = store.record(image_id)
        record = ImageRecord(
            id=image_id,
            sha256=stored.sha256,
            width=stored.image.width,
            height=stored.image.height,
            origin=stored.origin,
            step_index=step_index,
        )
        transcript.add_image(record, lambda stored=stored: stored.png)


def _metrics(transcript: Transcript) -> dict[str, float]:
    steps = transcript.steps
    return {
        "num_turns": float(len(steps)),
        "num_tool_calls": float(sum(1 for s in steps if s.action.kind == "tool_call")),
        "num_error_steps": float(sum(1 for s in steps if s.error)),
        "num_invalid_turns": float(sum(1 for s in steps if s.action.kind == "invalid")),
        "num_repaired_turns": float(sum(1 for s in steps if s.action.repairs)),
        "well_formed_rate": sum(1 for s in steps if s.action.well_formed) / len(steps) if steps else 0.0,
    }


async def run_episodes(
    policy: ChatPolicy,
    tasks: Iterable[Task],
    env: ToolEnvironment,
    *,
    limits: EpisodeLimits | None = None,
    concurrency: int = 64,
    on_result: Callable[[Transcript], Any] | None = None,
    system_prompt: str | None = None,
    token_counter: TokenCounter | None = None,
    policy_meta: dict[str, Any] | None = None,
) -> list[Transcript]:
    """Run one episode per task, at most ``concurrency`` at a time; transcripts come back in task order.

    Args:
        on_result: called (or awaited, if it returns an awaitable) with each transcript as soon as its episode
            ends, e.g. to append it to an eval log; its exceptions propagate.
        Other arguments: as :func:`run_episode`.

    Example:
        >>> transcripts = asyncio.run(run_episodes(policy, tasks, env, concurrency=256))  # doctest: +SKIP
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    prompt = env.system_prompt() if system_prompt is None else system_prompt
    pending = enumerate(tasks)
    results: dict[int, Transcript] = {}

    async def worker() -> None:
        for position, task in pending:  # a shared iterator: each task is taken by exactly one worker
            transcript = await run_episode(
                policy,
                task,
                env,
                limits=limits,
                system_prompt=prompt,
                token_counter=token_counter,
                policy_meta=policy_meta,
            )
            results[position] = transcript
            if on_result is not None:
                returned = on_result(transcript)
                if inspect.isawaitable(returned):
                    await returned

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return [results[i] for i in range(len(results))]


async def replay_episode(
    transcript: Transcript, env: ToolEnvironment, *, limits: EpisodeLimits | None = None
) -> Transcript:
    """Re-run a recorded episode: same task and images, the recorded model turns, the tools of ``env``.

    With ``env`` in replay-only cache mode this checks that an episode is reproducible: compare
    ``replayed.behaviour() == transcript.behaviour()``. Episodes that ended without an answer by a policy
    failure or timeout replay up to that point and then end with ``policy_error`` (the script runs out).

    Example:
        >>> replayed = asyncio.run(replay_episode(Transcript.load("run/q1.json"), env))  # doctest: +SKIP
        >>> replayed.behaviour() == recorded.behaviour()  # doctest: +SKIP
        True
    """
    from opensearch_vl.tools_env.scripted_policy import ScriptedPolicy

    limits = limits or EpisodeLimits(max_turns=max(len(transcript.steps), 1), fatal_k=transcript.fatal_k)
    return await run_episode(
        ScriptedPolicy.from_transcript(transcript, record=False),
        Task.from_transcript(transcript),
        env,
        limits=limits,
        system_prompt=transcript.system_prompt or "",
        policy_meta=transcript.policy,
    )
