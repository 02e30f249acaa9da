# ruff: noqa: F811  (pytest fixtures imported from rl_fixtures are re-bound as test arguments)
"""The verl agent loop ``vision_deepresearch`` with real verl 0.9.1 classes on CPU and the tiny local
Qwen3-VL.

The generation server is the one boundary we drive (verl's ``LLMServerClient.generate`` contract: prompt ids +
images in, ``TokenOutput`` out); the loop is instantiated through verl's own registry with hydra, and its
output
goes through verl's own ``AgentLoopWorker`` post-processing into the ``DataProto`` the trainer consumes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

pytest.importorskip("verl", reason="verl is not installed (pip install 'opensearch-vl[rl]')")

import hydra  # noqa: E402
import opensearch_vl.plugins.verl.agent_loop as agent_loop  # noqa: E402
from opensearch_vl.rl.tokenize import image_token_count  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopWorker,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.utils.tokenizer import hf_processor, hf_tokenizer  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "rl"))
from rl_fixtures import env, task_image, tiny_model_dir  # noqa: E402,F401

ZOOM = '<think>zoom</think><tool_call>{"name": "zoom", "arguments": {"image": "img_%d"}}</tool_call>'
SEARCH = '<think>search</think><tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
ANSWER = "<think>done</think><response>blue</response>"
SCRIPTS = [
    [ZOOM % 1, ZOOM % 2, ANSWER],
    [ZOOM % 1, SEARCH, SEARCH, SEARCH],
    [ANSWER],
    [SEARCH, SEARCH, SEARCH],
]


class ScriptedServer:
    """Stands in for verl's LLMServerClient: replays a script per request id, records what it was sent."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer = tokenizer
        self.scripts = list(scripts)
        self.by_request = {}
        self.seen_images = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        if request_id not in self.by_request:
            self.by_request[request_id] = self.scripts.pop(0)
        script = self.by_request[request_id]
        turn = len(self.seen_images.setdefault(request_id, []))
        self.seen_images[request_id].append(len(image_data or []))
        ids = self.tokenizer.encode(script[turn], add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=[-0.1] * len(ids), stop_reason="completed")


@pytest.fixture(scope="module")
def verl_setup(tiny_model_dir):
    tokenizer = hf_tokenizer(str(tiny_model_dir))
    processor = hf_processor(str(tiny_model_dir))
    assert processor is not None and hasattr(processor, "get_rope_index")
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {"prompt_length": 2048, "response_length": 3072, "calculate_log_probs": True}
            },
            "data": {},
            "opensearch_vl": {
                "tools": {"tools": []},
                "limits": {"max_turns": 6},
                "system_prompt": "You are a visual agent. Tools:\n{tools}",
            },
        }
    )
    return tokenizer, processor, config


def make_loop(verl_setup, server, env):
    tokenizer, processor, config = verl_setup
    loop = hydra.utils.instantiate(
        config=_agent_loop_registry[agent_loop.AGENT_NAME],
        trainer_config=DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=processor,
        hf_model_type="qwen3_vl",
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([]),
    )
    loop.env = env  # the test environment's tools (zoom + a broken search); settings select none by name
    return loop


def sample(i, image):
    return {
        "raw_prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": image},
                    {"type": "text", "text": "What colour is the square?"},
                ],
            }
        ],
        "extra_info": {"id": f"q{i // 2}", "question": "What colour is the square?", "answers": ["blue"]},
        "reward_model": {"ground_truth": "blue"},
        "index": i // 2,
    }


def worker_for(verl_setup):
    """verl's own AgentLoopWorker post-processing, without starting Ray actors or servers."""
    tokenizer, processor, config = verl_setup
    worker = AgentLoopWorker.__new__(AgentLoopWorker)
    worker.config = config
    worker.tokenizer, worker.processor = tokenizer, processor
    worker.rollout_config = OmegaConf.create({"prompt_length": 2048, "response_length": 3072})
    worker.reward_loop_worker_handles = None
    worker.distillation_enabled = False
    worker.mm_processor_kwargs = {}
    return worker


def test_loop_is_registered_under_its_name():
    assert _agent_loop_registry["vision_deepresearch"]["_target_"].endswith("VisionDeepResearchAgentLoop")


@pytest.mark.slow
def test_rows_through_verl_postprocessing_carry_masks_images_rewards_and_is_fatal(
    verl_setup, env, task_image
):
    tokenizer, processor, _ = verl_setup
    server = ScriptedServer(tokenizer, SCRIPTS)
    loop = make_loop(verl_setup, server, env)
    worker = worker_for(verl_setup)

    async def go():
        outs = []
        for i in range(len(SCRIPTS)):
            kwargs = sample(i, task_image.copy())
            out = await loop.run({"temperature": 0.7}, **kwargs)
            outs.append(
                (out, await worker._agent_loop_postprocess(out, False, raw_prompt=kwargs["raw_prompt"]))
            )
        return outs

    outs = asyncio.run(go())
    raw = [o for o, _ in outs]
    batch = worker._postprocess([p for _, p in outs])

    # is_fatal reaches non_tensor_batch (what fatal_grpo reads); fatal step -1 = none
    assert batch.non_tensor_batch["is_fatal"].tolist() == [False, True, False, True]
    assert batch.non_tensor_batch["fatal_step_index"].tolist() == [-1, 1, -1, 0]
    # rewards on the last response token: answered + well-formed = 0.8 (no process judge → r_query 0)
    scores = batch.batch["rm_scores"].sum(-1).tolist()
    assert scores[0] == pytest.approx(0.8) and scores[2] == pytest.approx(0.8)
    assert scores[1] == 0.0 and scores[3] == 0.0

    # masks: fatal at step 1 → only step 0's tokens train; fatal at step 0 → nothing trains
    spans = [sum(r.response_mask) for r in raw]
    assert spans[3] == 0 and 0 < spans[1] < len(raw[1].response_ids)
    assert batch.batch["response_mask"][3].sum() == 0
    assert torch.equal(
        batch.batch["response_mask"][1, : len(raw[1].response_mask)], torch.tensor(raw[1].response_mask)
    )

    # images: every image reaches the multimodal inputs the actor/ref forward passes use
    pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for i, mm in enumerate(batch.non_tensor_batch["multi_modal_inputs"]):
        n_images = len(raw[i].multi_modal_data.get("images", []))
        assert mm["image_grid_thw"].shape[0] == n_images
        assert int((batch.batch["input_ids"][i] == pad).sum()) == image_token_count(
            processor, mm["image_grid_thw"]
        )
        assert mm["pixel_values"].shape[0] == int(mm["image_grid_thw"].prod(-1).sum())
    assert [len(r.multi_modal_data["images"]) for r in raw] == [3, 2, 1, 1]
    assert batch.batch["position_ids"].shape[1] == 4  # Qwen3-VL mRoPE (text + 3 vision axes)

    # and verl's own compute_advantage runs fatal_grpo on this batch: fatal rows never get a negative
    # advantage
    batch.non_tensor_batch["uid"] = np.array(["q0", "q0", "q1", "q1"], dtype=object)
    batch.batch["token_level_rewards"] = batch.batch["rm_scores"]
    algo = OmegaConf.create({"adv_estimator": "fatal_grpo", "norm_adv_by_std_in_grpo": True})
    out = compute_advantage(batch, adv_estimator="fatal_grpo", config=algo)
    adv = out.batch["advantages"]
    assert (adv[1] >= 0).all() and (adv[3] >= 0).all()
    assert (adv[0][batch.batch["response_mask"][0].bool()] > 0).all()
