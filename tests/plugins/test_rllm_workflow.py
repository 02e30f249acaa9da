# ruff: noqa: F811  (pytest fixtures imported from rl_fixtures are re-bound as test arguments)
"""The rLLM workflow against real rLLM (installed from GitHub source), on CPU with the tiny local Qwen3-VL.

Drives rLLM's own ``AgentWorkflowEngine`` (n rollouts per task, its pool and retry logic) and its own
``transform_results_for_verl`` into the verl ``DataProto`` rLLM's trainer consumes, then verl's own
``compute_advantage`` with ``fatal_grpo`` and ``uid = step_ids`` as rLLM's trainer sets it. The generation
server is the one boundary we drive: a ``RolloutEngine`` subclass replaying scripted completions.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip(
    "rllm",
    reason="rLLM is not installed: pip install --no-deps -e <rllm-org/rllm checkout> "
    "(not on PyPI; tested at commit 9beb6e0f)",
)
pytest.importorskip("verl", reason="verl is not installed (pip install 'opensearch-vl[rl]')")

from omegaconf import OmegaConf  # noqa: E402
from opensearch_vl.plugins.rllm.workflow import RLLMChatPolicy, VisionDeepResearchWorkflow  # noqa: E402
from opensearch_vl.rl.tokenize import image_token_count  # noqa: E402
from opensearch_vl.tools_env.observation import observation_message, task_message  # noqa: E402
from opensearch_vl.tools_env.policy import ImagePart  # noqa: E402
from rllm.engine.agent_workflow_engine import AgentWorkflowEngine  # noqa: E402
from rllm.engine.rollout.rollout_engine import RolloutEngine  # noqa: E402
from rllm.workflows.workflow import TerminationReason  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402
from verl.utils.tokenizer import hf_processor, hf_tokenizer  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "rl"))
from rl_fixtures import env, task_image, tiny_model_dir  # noqa: E402,F401

ZOOM = '<think>zoom</think><tool_call>{"name": "zoom", "arguments": {"image": "img_%d"}}</tool_call>'
SEARCH = '<think>search</think><tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
ANSWER = "<think>done</think><response>blue</response>"
WRONG = "<think>done</think><response>red</response>"
# task A: answered after two zooms / fatal cascade from step 1; task B: fatal at step 0 / wrong answer
SCRIPTS = {
    "A:0": [ZOOM % 1, ZOOM % 2, ANSWER],
    "A:1": [ZOOM % 1, SEARCH, SEARCH, SEARCH],
    "B:0": [SEARCH, SEARCH, SEARCH],
    "B:1": [WRONG],
}


class ScriptedEngine(RolloutEngine):
    """A token-in/token-out rollout engine replaying a script per rollout; records the images it was sent."""

    def __init__(self, tokenizer, processor):
        super().__init__()
        self.tokenizer, self.processor = tokenizer, processor
        self.max_response_length = 4096
        self.turns = weakref.WeakKeyDictionary()
        self.used = set()
        self.images_seen = []

    @property
    def supports_token_in_token_out(self):
        return True

    async def get_token_output_from_token_input(self, token_input, **kwargs):
        rollout = asyncio.current_task()  # rLLM runs each rollout in its own asyncio task
        if rollout not in self.turns:  # a new rollout of this task: take the task's next unused script
            key = "A" if "square" in self.tokenizer.decode(token_input) else "B"
            name = next(k for k in sorted(SCRIPTS) if k.startswith(key) and k not in self.used)
            self.used.add(name)
            self.turns[rollout] = (name, [0])
        name, counter = self.turns[rollout]
        turn = counter[0]
        counter[0] += 1
        self.images_seen.append(len(kwargs.get("image_data") or []))
        ids = self.tokenizer.encode(SCRIPTS[name][turn], add_special_tokens=False) + [
            self.tokenizer.eos_token_id
        ]
        return TokenOutput(token_ids=ids, log_probs=[-0.2] * len(ids), stop_reason="stop")


@pytest.fixture(scope="module")
def tok_proc(tiny_model_dir):
    return hf_tokenizer(str(tiny_model_dir)), hf_processor(str(tiny_model_dir))


def run_engine(tok_proc, env, image):
    tokenizer, processor = tok_proc
    rollout_engine = ScriptedEngine(tokenizer, processor)
    config = OmegaConf.create({"data": {"max_prompt_length": 2048, "max_response_length": 4096}})
    agent = {
        "tools": {"tools": []},
        "limits": {"max_turns": 6},
        "system_prompt": "You are a visual agent. Tools:\n{tools}",
    }
    engine = AgentWorkflowEngine(
        VisionDeepResearchWorkflow,
        {"agent": agent, "environment": env},
        rollout_engine,
        config=config,
        n_parallel_tasks=1,
        retry_limit=1,
    )
    tasks = [
        {"id": "A", "question": "What colour is the square?", "answer": "blue", "images": [image]}
    ] * 2 + [{"id": "B", "question": "Name the painter.", "answer": "blue", "images": [image]}] * 2
    task_ids = ["A", "A", "B", "B"]
    episodes = asyncio.run(engine.execute_tasks(tasks, task_ids))
    return engine, episodes, task_ids


@pytest.mark.slow
def test_episodes_rows_and_advantages_through_rllm_and_verl(tok_proc, env, task_image):
    tokenizer, processor = tok_proc
    engine, episodes, task_ids = run_engine(tok_proc, env, task_image)
    assert sorted(e.id for e in episodes) == ["A:0", "A:1", "B:0", "B:1"]
    assert all(e.termination_reason == TerminationReason.ENV_DONE for e in episodes)
    # which scripted rollout got which uid is up to rLLM's scheduling: identify episodes by what happened
    summary = {
        e.id: (
            e.info["is_fatal"],
            e.info["fatal_step_index"],
            len(e.trajectories[0].steps),
            round(e.trajectories[0].reward, 6),
            e.metrics["is_fatal"],
        )
        for e in episodes
    }
    outcomes = {}
    for eid, value in summary.items():
        outcomes.setdefault(eid[0], set()).add(value)
    assert outcomes["A"] == {(False, None, 3, 0.8, 0.0), (True, 1, 1, 0.0, 1.0)}
    assert outcomes["B"] == {(True, 0, 1, 0.0, 1.0), (False, None, 1, 0.0, 0.0)}
    answered = next(eid for eid, v in summary.items() if v[2] == 3)

    batch = engine.transform_results_for_verl(episodes, np.array(task_ids))
    nt = batch.non_tensor_batch
    order = list(nt["episode_ids"])
    flags = dict(zip(order, nt["is_fatal"].tolist()))
    assert flags == {eid: v[0] for eid, v in summary.items()}
    # one merged row per rollout; the n rollouts of a task share the GRPO group id rLLM uses (step_ids)
    groups = dict(zip(order, nt["step_ids"]))
    assert groups["A:0"] == groups["A:1"] != groups["B:0"] == groups["B:1"]

    # every image of each row reaches multi_modal_inputs, with pads expanded as the processor does
    pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for i, eid in enumerate(order):
        mm = nt["multi_modal_inputs"][i]
        assert mm["image_grid_thw"].shape[0] == (3 if eid == answered else 1)
        assert int((batch.batch["input_ids"][i] == pad).sum()) == image_token_count(
            processor, mm["image_grid_thw"]
        )
        assert mm["pixel_values"].shape[0] == int(mm["image_grid_thw"].prod(-1).sum())
    assert batch.batch["position_ids"].shape[1] == 4

    # masks: the answered rollout trains 3 completions, separated by observation (mask 0) spans
    row = order.index(answered)
    mask = batch.batch["response_mask"][row].tolist()
    runs = [k for k in range(1, len(mask)) if mask[k] == 1 and mask[k - 1] == 0]
    assert len(runs) == 2 and mask[0] == 1

    # verl's compute_advantage, as rLLM's trainer calls it: uid = step_ids, scores = traj_rewards
    batch.non_tensor_batch["uid"] = nt["step_ids"]
    batch.batch["token_level_rewards"] = batch.batch["traj_rewards"]
    algo = OmegaConf.create({"adv_estimator": "fatal_grpo", "norm_adv_by_std_in_grpo": True})
    adv = compute_advantage(batch, adv_estimator="fatal_grpo", config=algo).batch["advantages"]
    for i, eid in enumerate(order):
        if flags[eid]:
            assert (adv[i] >= 0).all()
    assert (adv[row][batch.batch["response_mask"][row].bool()] > 0).all()
    # the server saw every image so far at each turn of the answered rollout
    assert max(engine.rollout_engine.images_seen) == 3


def test_chat_policy_converts_messages_to_rllm_format(task_image):
    first = task_message("What?", [ImagePart("img_1", task_image)])
    obs = observation_message("zoomed", [ImagePart("img_2", task_image)])
    out = RLLMChatPolicy.to_rllm_messages([first, obs])
    assert out[0] == {"role": "user", "content": "What?", "images": [task_image]}
    assert out[1]["content"] == "<tool_response>\nzoomed\n</tool_response>" and len(out[1]["images"]) == 1
