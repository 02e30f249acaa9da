"""Policies: the OpenAI-compatible endpoint (real loopback server) and local transformers (tiny Qwen3-VL)."""

import asyncio
import threading
import time

import pytest
from chat_server import ChatServer, Reply
from opensearch_vl.eval.chat_client import EndpointConfig
from opensearch_vl.eval.policies import make_policy
from opensearch_vl.eval.policies.openai_compat import OpenAICompatPolicy, SamplingConfig
from opensearch_vl.tools_env import ScriptedPolicy, Task, ToolEnvironment, run_episode
from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, PolicyError, TextPart
from PIL import Image


def _messages():
    return [
        ChatMessage("system", (TextPart("sys"),)),
        ChatMessage("user", (ImagePart("img_1", Image.new("RGB", (8, 6), (255, 0, 0))), TextPart("What?"))),
    ]


async def test_images_are_data_uris_and_sampling_is_sent(chat_server):
    chat_server.replies = [Reply("<think>x</think><response>red</response>")]
    policy = OpenAICompatPolicy(
        EndpointConfig(base_url=chat_server.base_url, model="m8b"), SamplingConfig(top_k=20, max_tokens=64)
    )
    out = await policy(_messages())
    assert out.text.endswith("<response>red</response>") and out.completion_tokens == 5
    body = chat_server.requests[0]
    assert body["model"] == "m8b" and body["temperature"] == 0.7 and body["top_p"] == 0.95
    assert body["top_k"] == 20 and body["max_tokens"] == 64
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    parts = body["messages"][1]["content"]
    assert parts[0]["type"] == "image_url" and parts[0]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert parts[1] == {"type": "text", "text": "What?"}


async def test_errors_become_policy_errors(chat_server):
    chat_server.replies = [
        Reply(
            status=400, body='{"error": {"message": "This model\'s maximum context length is 32768 tokens"}}'
        )
    ]
    policy = OpenAICompatPolicy(EndpointConfig(base_url=chat_server.base_url, backoff_s=0.01))
    with pytest.raises(PolicyError) as info:
        await policy(_messages())
    assert info.value.context_overflow
    chat_server.replies = [Reply(status=502)]
    with pytest.raises(PolicyError, match="gave up after 3 attempts"):
        await OpenAICompatPolicy(
            EndpointConfig(base_url=chat_server.base_url, backoff_s=0.01, max_retries=2)
        )(_messages())


async def test_concurrency_limit_is_respected():
    in_flight, peak, lock = [0], [0], threading.Lock()

    def respond(body):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return Reply("<response>x</response>")

    with ChatServer(respond) as server:
        policy = OpenAICompatPolicy(EndpointConfig(base_url=server.base_url, max_concurrency=3))
        await asyncio.gather(*(policy(_messages()) for _ in range(12)))
    assert peak[0] == 3


def test_make_policy_rejects_unknown_model(tmp_path):
    from opensearch_vl.errors import ConfigError

    with pytest.raises(ConfigError, match="expected an http"):
        make_policy(str(tmp_path / "missing"))
    script = tmp_path / "s.jsonl"
    script.write_text('{"id": "a", "turns": ["<response>1</response>"]}\n')
    factory = make_policy(f"scripted:{script}")
    assert isinstance(factory.for_case("a"), ScriptedPolicy)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny") / "qwen3vl", seed=0)


@pytest.mark.slow
async def test_transformers_policy_runs_an_episode_on_cpu(tiny_model):
    from opensearch_vl.eval.policies.transformers_local import TransformersPolicy

    policy = TransformersPolicy(tiny_model, SamplingConfig(max_tokens=12, seed=0), device_map="cpu")
    task = Task(id="t", question="What colour is this?", images=[Image.new("RGB", (64, 48), (0, 200, 0))])
    transcript = await run_episode(policy, task, ToolEnvironment(tools=[]), policy_meta=policy.meta)
    assert transcript.steps, "the tiny model produced no turn"
    assert transcript.termination in ("fatal_cascade", "answer", "max_turns")
    assert transcript.steps[0].prompt_tokens > 20 and transcript.steps[0].completion_tokens <= 12
    assert transcript.policy["architecture"] == "Qwen3VLForConditionalGeneration"
    greedy = TransformersPolicy(tiny_model, SamplingConfig(temperature=0, max_tokens=8), device_map="cpu")
    msgs = [ChatMessage("user", (TextPart("hello"),))]
    assert (await greedy(msgs)).text == (await greedy(msgs)).text
    small = TransformersPolicy(
        tiny_model, SamplingConfig(max_tokens=8), device_map="cpu", max_context_tokens=10
    )
    with pytest.raises(PolicyError) as info:
        await small(msgs)
    assert info.value.context_overflow
