"""The RL agent, framework-free: settings, dataset row → task, one scored rollout.

Both adapters (``opensearch_vl.plugins.rllm.workflow`` and ``opensearch_vl.plugins.verl.agent_loop``) are thin
wrappers around :func:`rollout`: they supply a policy over their framework's generation server, then turn the
returned transcript + token trajectory into their framework's row.

Settings come from the user as one mapping (rLLM ``workflow_args={"agent": {...}}``, verl top-level
``+opensearch_vl=...`` or a YAML file named by ``OPENSEARCH_VL_RL_CONFIG``) and are validated here.

Example:
    >>> settings = RLAgentSettings.model_validate({"limits": {"max_turns": 50}})
    >>> settings.reward.accuracy_weight
    0.8
    >>> task_from_row({"id": 3, "question": "Who painted this?", "answer": "Monet"}).answers
    ['Monet']
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from opensearch_vl.eval.judge import JudgeConfig
from opensearch_vl.rl.reward import CompositeReward, RewardConfig, eval_judges
from opensearch_vl.rl.workflow_core import FatalConfig, ScoredEpisode, score_episode
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.policy import ChatPolicy
from opensearch_vl.tools_env.runner import EpisodeLimits, run_episode
from opensearch_vl.tools_env.task import Task
from opensearch_vl.tools_env.transcript import Transcript
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from opensearch_vl.errors import ConfigError, DataError

__all__ = [
    "ToolServiceSettings",
    "RLAgentSettings",
    "load_settings",
    "task_from_row",
    "build_reward",
    "rollout",
    "CONFIG_ENV",
]

CONFIG_ENV = "OPENSEARCH_VL_RL_CONFIG"
"""Environment variable naming a YAML file of :class:`RLAgentSettings` (used when no mapping is given)."""


class ToolServiceSettings(BaseModel):
    """Where tool calls run during RL rollouts."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["in_process", "ray"] = "in_process"
    """``in_process``: each rollout worker holds its own environment; ``ray``: one shared actor pool."""
    num_actors: int = Field(4, ge=1)
    """Ray mode: tool actors in the pool (each runs many calls concurrently)."""
    max_concurrent_calls: int = Field(2048, ge=1)
    """Ray mode: calls in flight across the pool (the released recipe's ``n_parallel_tools``)."""
    name: str = "opensearch_vl_tools"
    """Ray mode: name prefix of the detached actors, so every rollout worker finds the same pool."""


class RLAgentSettings(BaseModel):
    """Everything the RL agent needs beyond the model (user-facing; unknown keys are rejected)."""

    model_config = ConfigDict(extra="forbid")

    tools: ToolEnvConfig = Field(default_factory=ToolEnvConfig)
    """The tool environment (offline defaults)."""
    limits: EpisodeLimits = Field(default_factory=lambda: EpisodeLimits(max_turns=50))
    """Per-episode limits; the paper allows 50 model calls per rollout."""
    reward: RewardConfig = Field(default_factory=RewardConfig)
    """Weights of Eq. 9 and judge fallbacks."""
    fatal: FatalConfig = Field(default_factory=FatalConfig)
    """Whether a no-answer rollout counts as fatal (clamp only)."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """Answer/process judge endpoint; none = rule-based answers, r_query from the fallback value."""
    tool_service: ToolServiceSettings = Field(default_factory=ToolServiceSettings)
    """Where tool calls run."""
    system_prompt: str | None = None
    """System prompt text with ``{tools}``; ``None`` = the packaged prompt."""
    max_new_tokens: int = Field(4096, ge=1)
    """Completion budget of one model call (released recipe: 4096)."""
    max_prompt_tokens: int | None = Field(None, ge=1)
    """Longest prompt one model call may get (released recipe: 64000); ``None`` = prompt + response length."""


def load_settings(value: Any = None) -> RLAgentSettings:
    """Settings from a mapping / settings object, else from the YAML named by ``$OPENSEARCH_VL_RL_CONFIG``,
    else
    defaults. Every problem is reported at once, naming the key.

    Example:
        >>> load_settings({"max_new_tokens": 512}).max_new_tokens
        512
    """
    if isinstance(value, RLAgentSettings):
        return value
    source = "settings"
    if value is None and os.environ.get(CONFIG_ENV):
        path = Path(os.environ[CONFIG_ENV])
        source = str(path)
        try:
            value = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read {CONFIG_ENV}={path}: {exc}") from exc
    if value is not None and hasattr(value, "items") and not isinstance(value, dict):
        value = _plain(value)
    try:
        return RLAgentSettings.model_validate(value or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"RL agent {source}: {problems}") from exc


def _plain(value: Any) -> Any:
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if hasattr(value, "tolist") and not isinstance(value, (bytes, str)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def task_from_row(row: Mapping[str, Any], *, index: int | None = None) -> Task:
    """A dataset row (``rl prepare`` layout, or the released recipe's ``question``/``answer``/``images``) →
    Task.

    Accepts ``answer`` (str or list) or ``answers``; ``images`` (list) or ``image`` (one), each anything the
    image store accepts (path, bytes, ``{"bytes", "path"}`` dict). A ``"image_id: 1 \\n Question: …"`` prefix
    (the released registration script's layout) is removed.

    Example:
        >>> task_from_row({"question": "q?", "answers": ["a", "b"]}, index=7).id
        '7'
    """
    if "question" not in row or not str(row["question"]).strip():
        raise DataError(f"row {row.get('id', index)}: no 'question'; RL rows need question, answer, images")
    question = str(row["question"])
    if question.startswith("image_id:") and "Question:" in question:
        question = question.split("Question:", 1)[1].strip()
    answers = [str(a) for a in _as_list(row.get("answers", row.get("answer")))]
    images = _as_list(row.get("images", row.get("image")))
    task_id = row.get("id", index if index is not None else "")
    metadata = {
        k: v
        for k, v in row.items()
        if k not in ("question", "answer", "answers", "images", "image", "id") and _jsonable(v)
    }
    return Task(
        id=str(task_id),
        question=question,
        answers=answers,
        images=images,
        benchmark=str(row.get("data_source")) if row.get("data_source") else None,
        metadata=metadata,
    )


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def build_reward(settings: RLAgentSettings) -> CompositeReward:
    """The composite reward with the configured judges.

    Example:
        >>> build_reward(RLAgentSettings()).config.accuracy_weight
        0.8
    """
    answer, process = eval_judges(settings.judge)
    return CompositeReward(settings.reward, answer_judge=answer, process_judge=process)


async def rollout(
    policy: ChatPolicy, task: Task, env: Any, settings: RLAgentSettings, reward: CompositeReward
) -> tuple[Transcript, ScoredEpisode]:
    """Run one episode and score it; never raises for model or tool failures (they are terminations).

    Example:
        >>> transcript, scored = asyncio.run(rollout(policy, task, env, settings, reward))  # doctest: +SKIP
    """
    prompt = env.system_prompt(settings.system_prompt) if settings.system_prompt else None
    transcript = await run_episode(policy, task, env, limits=settings.limits, system_prompt=prompt)
    scored = await score_episode(transcript, reward, settings.fatal)
    return transcript, scored
