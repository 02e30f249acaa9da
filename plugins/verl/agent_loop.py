"""verl agent loop ``vision_deepresearch``: the OpenSearch-VL agent for plain verl, without rLLM.

Use it with::

    actor_rollout_ref.rollout.agent.agent_loop_config_path=recipes/rl/agent_loops.yaml
    actor_rollout_ref.rollout.agent.default_agent_loop=vision_deepresearch
    algorithm.adv_estimator=fatal_grpo trainer.use_v1=false

Each sample runs one episode of the real tool environment (:func:`opensearch_vl.rl.agent.rollout`) with the
verl server manager as a token-in/token-out policy (:class:`opensearch_vl.rl.token_policy.TokenPolicy`), then
returns an ``AgentLoopOutput`` (verl/experimental/agent_loop/agent_loop.py:88):

- ``prompt_ids`` / ``response_ids`` exactly as the server saw and produced them (image pads expanded);
- ``response_mask`` 1 only on model tokens of steps before the fatal step (observations, template tokens and
  the fatal step onwards are 0);
- ``multi_modal_data["images"]``: every image of the row (task image, then tool outputs), in order; verl's
  ``_compute_multi_modal_inputs`` (agent_loop.py:868) turns them into ``pixel_values``/``image_grid_thw`` for
  the actor and reference log-prob passes;
- ``reward_score``: Eq. 9 (verl puts it on the last response token as ``rm_scores``);
- ``extra_fields``: ``is_fatal`` (bool; becomes ``non_tensor_batch["is_fatal"]`` in ``_postprocess``,
  L1115, which the fatal estimators read), ``fatal_step_index`` (-1 when none), the reward parts and the
  termination.

Settings (:class:`opensearch_vl.rl.agent.RLAgentSettings`) come from the top-level ``opensearch_vl`` key
of the trainer config (``+opensearch_vl.limits.max_turns=50``) or the YAML named by
``$OPENSEARCH_VL_RL_CONFIG``.
Importing this module registers the loop (verl's ``@register``) and the fatal estimators.

Example:
    >>> from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    >>> import opensearch_vl.plugins.verl.agent_loop
    >>> _agent_loop_registry["vision_deepresearch"]["_target_"]
    'opensearch_vl.plugins.verl.agent_loop.VisionDeepResearchAgentLoop'
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import uuid4

import opensearch_vl.plugins.verl  # noqa: F401  (registers fatal_grpo / fatal_rloo in this process)
from opensearch_vl.rl.agent import build_reward, load_settings, rollout, task_from_row
from opensearch_vl.rl.token_policy import Generation, TokenPolicy
from opensearch_vl.rl.tokenize import ChatRenderer
from opensearch_vl.rl.tool_service import environment_for
from PIL import Image
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from opensearch_vl.errors import ConfigError

__all__ = ["VisionDeepResearchAgentLoop", "AGENT_NAME", "row_from_sample", "build_output", "fatal_advantages"]

AGENT_NAME = "vision_deepresearch"
logger = logging.getLogger(__name__)


def _images_of(raw_prompt: Any) -> list[Any]:
    images = []
    for message in list(raw_prompt or []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "image":
                    image = block.get("image")
                    if image is None and block.get("bytes") is not None:
                        image = {"bytes": block["bytes"]}
                    images.append(image if not isinstance(image, Image.Image) else image.convert("RGB"))
    return images


def row_from_sample(kwargs: dict[str, Any]) -> dict[str, Any]:
    """An RLHFDataset sample (``extra_info``, ``reward_model``, ``raw_prompt`` with image blocks) → task row.

    Example:
        >>> row_from_sample({"extra_info": {"id": "7", "question": "q?"},
        ...                  "reward_model": {"ground_truth": "a"}, "raw_prompt": []})["answers"]
        ['a']
    """
    extra = dict(kwargs.get("extra_info") or {})
    truth = (kwargs.get("reward_model") or {}).get("ground_truth")
    answers = extra.get("answers") or extra.get("answer") or truth
    return {
        "id": extra.get("id", extra.get("index", "")),
        "question": extra.get("question", ""),
        "answers": answers if isinstance(answers, list) else ([] if answers is None else [answers]),
        "images": _images_of(kwargs.get("raw_prompt")),
        "data_source": kwargs.get("data_source"),
    }


@register(AGENT_NAME)
class VisionDeepResearchAgentLoop(AgentLoopBase):
    """The agent as a verl agent loop (see the module docstring)."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = load_settings(self.config.get("opensearch_vl"))
        self.env = environment_for(self.settings)
        self.reward = build_reward(self.settings)
        self.renderer = ChatRenderer(
            self.processor,
            chat_template_kwargs=dict(self.apply_chat_template_kwargs or {}),
            mm_processor_kwargs=dict(self.mm_processor_kwargs or {}),
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        task = task_from_row(row_from_sample(kwargs), index=kwargs.get("index"))
        request_id = uuid4().hex
        params = {**sampling_params, "max_tokens": self.settings.max_new_tokens}
        timings = {"generate_sequences": 0.0}

        async def generate(prompt_ids: list[int], images: list[Image.Image]) -> Generation:
            import time

            began = time.perf_counter()
            out = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=prompt_ids,
                sampling_params=dict(params),
                image_data=images or None,
            )
            timings["generate_sequences"] += time.perf_counter() - began
            return Generation(
                list(out.token_ids), list(out.log_probs) if out.log_probs else None, out.stop_reason
            )

        budget = self.settings.max_prompt_tokens or (
            self.rollout_config.prompt_length + self.rollout_config.response_length
        )
        policy = TokenPolicy(self.renderer, generate, max_prompt_tokens=budget)
        transcript, scored = await rollout(policy, task, self.env, self.settings, self.reward)
        return build_output(
            policy,
            transcript,
            scored,
            self.rollout_config.prompt_length,
            self.rollout_config.response_length,
            self.tokenizer,
            timings,
            with_logprobs=bool(self.rollout_config.get("calculate_log_probs", False)),
        )


def build_output(
    policy: TokenPolicy,
    transcript: Any,
    scored: Any,
    prompt_length: int,
    response_length: int,
    tokenizer: Any,
    timings: dict[str, float] | None = None,
    *,
    with_logprobs: bool = False,
) -> AgentLoopOutput:
    """The ``AgentLoopOutput`` of a finished rollout (used by the loop; public for tests and custom loops).

    ``with_logprobs`` (``rollout.calculate_log_probs``): every row of a batch must carry rollout log-probs or
    none (verl concatenates them), so rows without them get zeros.
    """
    outcome = scored.outcome
    trajectory = policy.trajectory
    if trajectory.num_completions == 0:
        # the model was never called (task image unreadable, prompt over budget): a row with no trainable
        # token
        prompt_ids = (
            trajectory.segments[0].token_ids
            if trajectory.segments
            else tokenizer.encode(transcript.task.question, add_special_tokens=False)
        )
        images = trajectory.segments[0].images if trajectory.segments else []
        response_ids, mask, logprobs = [tokenizer.eos_token_id or 0], [0], None
    else:
        row = trajectory.assemble(outcome.kept_steps, max_response_length=response_length)
        prompt_ids, response_ids, mask, logprobs, images = (
            row.prompt_ids,
            row.response_ids,
            row.response_mask,
            row.response_logprobs,
            row.images,
        )
    if len(prompt_ids) > prompt_length:
        raise ConfigError(
            f"task {transcript.task.id}: the first prompt (system prompt + tools + task image + "
            f"question) has {len(prompt_ids)} tokens, over rollout.prompt_length={prompt_length}; raise "
            "data.max_prompt_length or lower data.mm_processor_kwargs.max_pixels"
        )
    if with_logprobs and logprobs is None:
        logprobs = [0.0] * len(response_ids)
    elif not with_logprobs:
        logprobs = None
    extra = {
        "is_fatal": bool(outcome.is_fatal),
        "fatal_step_index": -1 if outcome.fatal_step_index is None else int(outcome.fatal_step_index),
        "kept_steps": int(outcome.kept_steps),
        "termination": outcome.termination,
        "reward_parts": scored.reward.as_metrics(),
        "turn_scores": [],
        "tool_rewards": [],
    }
    return AgentLoopOutput(
        prompt_ids=list(prompt_ids),
        response_ids=list(response_ids),
        response_mask=list(mask),
        response_logprobs=list(logprobs) if logprobs is not None else None,
        multi_modal_data={"images": list(images)} if images else {},
        reward_score=float(scored.reward.total),
        num_turns=2 * len(transcript.steps) + 1,
        metrics=AgentLoopMetrics(generate_sequences=(timings or {}).get("generate_sequences", 0.0)),
        extra_fields=extra,
    )


def fatal_advantages(rows: Any, scored: Any, groups: Any, *, estimator: str = "fatal_grpo") -> list[float]:
    """Advantages of rollout rows through verl's own ``compute_advantage`` (legacy path) with ``estimator``.

    ``rows`` are :class:`~opensearch_vl.rl.tokenize.TokenRow` (response ids and mask), ``scored`` their
    :class:`~opensearch_vl.rl.workflow_core.ScoredEpisode`, ``groups`` the GRPO group id of each. Returns the
    scalar advantage of each row (0.0 for rows without a trainable token).

    Example:
        >>> fatal_advantages(rows, scored, ["q1", "q1"])  # doctest: +SKIP
        [0.707, 0.0]
    """
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl.protocol import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    width = max(1, max(len(r.response_ids) for r in rows))
    mask = torch.zeros(len(rows), width, dtype=torch.int64)
    rewards = torch.zeros(len(rows), width, dtype=torch.float32)
    for i, (row, s) in enumerate(zip(rows, scored)):
        mask[i, : len(row.response_mask)] = torch.tensor(row.response_mask, dtype=torch.int64)
        rewards[i, max(0, len(row.response_ids) - 1)] = float(s.reward.total)
    data = DataProto.from_dict(
        tensors={"response_mask": mask, "token_level_rewards": rewards},
        non_tensors={
            "uid": np.array(list(groups), dtype=object),
            "is_fatal": np.array([bool(s.outcome.is_fatal) for s in scored], dtype=bool),
        },
    )
    algo = OmegaConf.create({"adv_estimator": estimator, "norm_adv_by_std_in_grpo": True})
    advantages = compute_advantage(data, adv_estimator=estimator, config=algo).batch["advantages"]
    out = []
    for i in range(len(rows)):
        trainable = mask[i].bool()
        out.append(float(advantages[i][trainable][0]) if trainable.any() else 0.0)
    return out
