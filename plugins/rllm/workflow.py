"""rLLM workflow ``VisionDeepResearchWorkflow``: the OpenSearch-VL agent for ``AgentWorkflowEngine``.

Train with rLLM's verl path (``rllm.trainer.agent_trainer.AgentTrainer``, which hands
``algorithm.adv_estimator`` to verl's registry)::

    AgentTrainer(workflow_class=VisionDeepResearchWorkflow, workflow_args={"agent": {...}}, config=cfg, ...)

What one ``run`` does (tested against rLLM main @ 9beb6e0f):

- runs the real episode runner with the rollout engine as the policy: token-in/token-out through
  ``rollout_engine.get_token_output_from_token_input`` when the engine supports it (``VerlEngine``), else
  message-based through ``get_model_response`` (:class:`RLLMChatPolicy`, rLLM messages with PIL images);
- one rLLM ``Step`` per model turn, **only the steps before the fatal step** (for a causal model this equals
  the paper's token mask; rLLM merges the cumulative steps into one row whose mask is 1 on each step's
  completion ids);
- ``steps[0].model_output.multi_modal_inputs`` covers every image of the row (task image and tool outputs,
  in order) — rLLM's transform keeps only the first step's inputs for a merged row
  (rllm/trainer/verl/transform.py ``_new_segment``);
- ``trajectory.uid = "<task id>_<name>"``, shared by the n rollouts of a task: rLLM main groups GRPO by
  ``step_ids = trajectory.uid`` (agent_workflow_trainer.py:393), which otherwise is a fresh uuid per rollout;
- ``is_fatal``, ``fatal_step_index`` and the reward parts in ``episode.info`` and ``episode.metrics``;
  termination mapped to rLLM's ``TerminationReason``
  (:data:`opensearch_vl.rl.workflow_core.RLLM_TERMINATION`).

``is_fatal`` into the batch: rLLM main builds ``non_tensor_batch`` with a fixed key set
(transform.py ``_batch_tensors_and_build_data_proto``: episode metrics go in as one dict per row under
``metrics``) and has no hook for extra keys. :func:`install_row_flags` (called by the workflow's constructor,
once per process, idempotent) wraps ``AgentWorkflowEngine.transform_results_for_verl`` to add
``non_tensor_batch["is_fatal"]`` (and ``fatal_step_index``) per row from the episodes, matched by
``episode_ids``. It touches nothing else and is skipped if rLLM ever emits ``is_fatal`` itself.

A rollout whose fatal step is 0 has no pre-fatal step; it keeps its first step (reward 0) so it stays in the
group statistics as the paper requires. Its clamped advantage ``max(r̃, 0)`` is 0 (0 is the group minimum),
so it adds no gradient under ``fatal_grpo``/``fatal_rloo``; under an un-clamped ablation it would — use the
verl agent loop, which masks per token, for those.

Importing this module registers the verl estimators (``import opensearch_vl.plugins.verl``); rLLM's TaskRunner
imports it when it unpickles ``workflow_class``.

Example:
    >>> from rllm.engine.agent_workflow_engine import AgentWorkflowEngine
    >>> engine = AgentWorkflowEngine(VisionDeepResearchWorkflow, {"agent": {}}, engine)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
import opensearch_vl.plugins.verl  # noqa: F401  (registers fatal_grpo / fatal_rloo in this process)
from opensearch_vl.rl.agent import RLAgentSettings, build_reward, load_settings, rollout, task_from_row
from opensearch_vl.rl.token_policy import Generation, TokenPolicy
from opensearch_vl.rl.tokenize import ChatRenderer, multi_modal_inputs
from opensearch_vl.rl.tool_service import environment_for
from opensearch_vl.rl.workflow_core import RLLM_TERMINATION
from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, PolicyError, PolicyOutput
from rllm.engine.rollout.rollout_engine import ModelOutput
from rllm.types import Episode, Step, Trajectory
from rllm.workflows.workflow import TerminationReason, Workflow

__all__ = ["VisionDeepResearchWorkflow", "RLLMChatPolicy", "install_row_flags", "TRAJECTORY_NAME"]

logger = logging.getLogger(__name__)
TRAJECTORY_NAME = "vision_deepresearch"


class RLLMChatPolicy:
    """ChatPolicy over ``rollout_engine.get_model_response`` (engines without token-in/token-out).

    Messages become rLLM's format: ``{"role", "content": text, "images": [PIL, ...]}``; the engine's chat
    parser renders them. Keeps each turn's ``ModelOutput`` in :attr:`outputs`.

    Example:
        >>> policy = RLLMChatPolicy(OpenAIEngine(model="gpt-4o"))  # doctest: +SKIP
    """

    def __init__(self, engine: Any, **sampling: Any) -> None:
        self.engine = engine
        self.sampling = sampling
        self.outputs: list[ModelOutput] = []

    @staticmethod
    def to_rllm_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
        """Our messages → rLLM chat dicts (images as PIL under ``images``)."""
        out = []
        for m in messages:
            entry: dict[str, Any] = {"role": m.role, "content": m.text}
            images = [p.image for p in m.content if isinstance(p, ImagePart)]
            if images:
                entry["images"] = images
            out.append(entry)
        return out

    async def __call__(self, messages: Any) -> PolicyOutput:
        from rllm.workflows.workflow import TerminationEvent

        try:
            output = await self.engine.get_model_response(
                self.to_rllm_messages(list(messages)), **self.sampling
            )
        except TerminationEvent as exc:
            raise PolicyError(
                f"rLLM engine ended the rollout: {exc.reason}",
                context_overflow=exc.reason == TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED,
            ) from exc
        self.outputs.append(output)
        return PolicyOutput(
            text=output.text or output.content or "",
            prompt_tokens=output.prompt_length or None,
            completion_tokens=output.completion_length or None,
            finish_reason=output.finish_reason,
        )


def _token_generate(engine: Any, max_tokens: int):
    from rllm.workflows.workflow import TerminationEvent

    async def generate(prompt_ids: list[int], images: list[Any]) -> Generation:
        try:
            out = await engine.get_token_output_from_token_input(
                token_input=prompt_ids, image_data=images or None, max_tokens=max_tokens
            )
        except TerminationEvent as exc:
            raise PolicyError(
                f"rLLM engine ended the rollout: {exc.reason}",
                context_overflow=exc.reason == TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED,
            ) from exc
        logprobs = getattr(out, "log_probs", None) or getattr(out, "logprobs", None)
        return Generation(
            list(out.token_ids),
            list(logprobs) if logprobs else None,
            getattr(out, "stop_reason", None) or getattr(out, "finish_reason", None),
        )

    return generate


class VisionDeepResearchWorkflow(Workflow):
    """The agent as an rLLM ``Workflow`` (see the module docstring).

    Args:
        rollout_engine, executor: given by ``AgentWorkflowEngine``.
        agent: :class:`~opensearch_vl.rl.agent.RLAgentSettings` or its mapping
            (``workflow_args={"agent": …}``); ``None`` reads ``$OPENSEARCH_VL_RL_CONFIG`` or uses defaults.
        environment: a ready tool environment (tests, custom tools); ``None`` builds the configured one,
            shared by all workflow instances of the process.
        max_response_length: cap of the merged row (defaults to the engine's ``max_response_length``);
            steps that would cross it are left out so no image is cut from its tokens.
    """

    def __init__(
        self,
        rollout_engine: Any,
        executor: Any,
        agent: Any = None,
        environment: Any = None,
        max_response_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(rollout_engine, executor, **kwargs)
        self.settings: RLAgentSettings = load_settings(agent)
        self.environment = environment if environment is not None else environment_for(self.settings)
        self.reward = build_reward(self.settings)
        self.max_response_length = max_response_length or getattr(rollout_engine, "max_response_length", None)
        install_row_flags()

    def is_multithread_safe(self) -> bool:
        return True

    async def run(self, task: dict, uid: str, **kwargs: Any) -> Episode:
        self.reset(task, uid)
        agent_task = task_from_row(task, index=uid.split(":")[0])
        engine = self.rollout_engine
        token_mode = bool(getattr(engine, "supports_token_in_token_out", False)) and getattr(
            engine, "processor", None
        )
        if token_mode:
            renderer = ChatRenderer(engine.processor)
            policy: Any = TokenPolicy(
                renderer,
                _token_generate(engine, self.settings.max_new_tokens),
                max_prompt_tokens=self.settings.max_prompt_tokens,
            )
        else:
            policy = RLLMChatPolicy(engine)
        transcript, scored = await rollout(policy, agent_task, self.environment, self.settings, self.reward)
        if token_mode:
            steps = self._token_steps(policy, scored.outcome.kept_steps, transcript)
        else:
            steps = self._message_steps(policy, scored.outcome.kept_steps, transcript)
        return self._episode(uid, task, transcript, scored, steps)

    # ---- conversion --------------------------------------------------------------------------------
    def _token_steps(self, policy: TokenPolicy, kept: int, transcript: Any) -> list[Step]:
        trajectory = policy.trajectory
        if trajectory.num_completions == 0:
            return []
        # a step-0 fatal keeps its first step as the group's zero-advantage row
        keep = min(max(kept, 1), trajectory.num_completions)
        prompts = trajectory.step_prompts(keep)
        row = trajectory.assemble(keep, max_response_length=self.max_response_length, upto_steps=keep)
        if row.truncated:
            # leave out steps the response cap cuts into, so rLLM never cuts an image away from its tokens
            whole = sum(1 for (s, e), p in zip(row.step_spans, prompts) if e - s == len(p[1]))
            keep = max(1, whole)
            prompts = prompts[:keep]
            row = trajectory.assemble(keep, upto_steps=keep)
        mm = multi_modal_inputs(self.rollout_engine.processor, row.images) or None
        steps = []
        for i, (prompt_ids, completion_ids, logprobs, _) in enumerate(prompts):
            step = transcript.steps[i]
            output = ModelOutput(
                text=step.model_text,
                content=step.model_text,
                prompt_ids=prompt_ids,
                completion_ids=completion_ids,
                logprobs=logprobs or [],
                multi_modal_inputs=mm if i == 0 else None,
                prompt_length=len(prompt_ids),
                completion_length=len(completion_ids),
                finish_reason=step.finish_reason,
            )
            steps.append(
                Step(
                    model_response=step.model_text,
                    model_output=output,
                    chat_completions=[{"role": "assistant", "content": step.model_text}],
                    prompt_ids=prompt_ids,
                    response_ids=completion_ids,
                    logprobs=logprobs or [],
                    observation=step.observation,
                    done=i == len(prompts) - 1,
                )
            )
        return steps

    def _message_steps(self, policy: RLLMChatPolicy, kept: int, transcript: Any) -> list[Step]:
        keep = min(max(kept, 1), len(policy.outputs))
        return [
            Step(
                model_response=transcript.steps[i].model_text,
                model_output=policy.outputs[i],
                chat_completions=[{"role": "assistant", "content": transcript.steps[i].model_text}],
                observation=transcript.steps[i].observation,
                done=i == keep - 1,
            )
            for i in range(keep)
        ]

    def _episode(self, uid: str, task: dict, transcript: Any, scored: Any, steps: list[Step]) -> Episode:
        task_id = uid.split(":")[0]
        reward = float(scored.reward.total)
        if steps:
            steps[-1].reward = reward
        trajectory = Trajectory(
            uid=f"{task_id}_{TRAJECTORY_NAME}", name=TRAJECTORY_NAME, task=task, steps=steps, reward=reward
        )
        info = scored.info()
        episode = Episode(
            id=uid,
            task=task,
            trajectories=[trajectory],
            termination_reason=TerminationReason[RLLM_TERMINATION[scored.outcome.termination]],
            is_correct=scored.reward.r_acc > 0,
            metrics=scored.metrics(),
        )
        episode.info.update(info)
        episode.info["transcript"] = transcript.model_dump(mode="json", exclude={"images"})
        return episode


_WRAPPED = "__opensearch_vl_row_flags__"


def install_row_flags() -> bool:
    """Make rLLM's ``AgentWorkflowEngine`` rows carry ``non_tensor_batch["is_fatal"]`` (see the module
    docstring).

    Returns True when the wrapper is in place (now or before). Idempotent; per process.

    Example:
        >>> install_row_flags()
        True
    """
    from rllm.engine.agent_workflow_engine import AgentWorkflowEngine

    original = AgentWorkflowEngine.transform_results_for_verl
    if getattr(original, _WRAPPED, False):
        return True

    @functools.wraps(original)
    def transform_results_for_verl(self, episodes, task_ids):
        batch = original(self, episodes, task_ids)
        add_row_flags(batch, episodes)
        return batch

    setattr(transform_results_for_verl, _WRAPPED, True)
    AgentWorkflowEngine.transform_results_for_verl = transform_results_for_verl
    return True


def add_row_flags(batch: Any, episodes: list[Any]) -> None:
    """Add ``is_fatal`` / ``fatal_step_index`` per row of an rLLM batch, from the episodes' info by episode
    id."""
    nt = batch.non_tensor_batch
    if "is_fatal" in nt or "episode_ids" not in nt:
        return
    by_id = {e.id: e.info for e in episodes if e is not None}
    if not any("is_fatal" in info for info in by_id.values()):
        return  # not our workflow's episodes
    ids = nt["episode_ids"]
    nt["is_fatal"] = np.array([bool(by_id.get(i, {}).get("is_fatal", False)) for i in ids], dtype=bool)
    nt["fatal_step_index"] = np.array(
        [
            -1 if by_id.get(i, {}).get("fatal_step_index") is None else int(by_id[i]["fatal_step_index"])
            for i in ids
        ],
        dtype=np.int64,
    )
