"""ToolEnvironment: schemas, validation, images, truncation, error categories, timeouts, replay misses."""

from __future__ import annotations

import asyncio
import json

import pytest
from core_test_tools import CORE_TOOLS
from opensearch_vl.sft import observation_format
from opensearch_vl.tools_env import observation
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.policy import ImagePart
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec
from PIL import Image

from opensearch_vl.errors import ConfigError, ReplayMissError


@pytest.fixture
def env():
    return ToolEnvironment(ToolEnvConfig(tools=CORE_TOOLS, tool_timeout_s=0.5, max_output_chars=200))


@pytest.fixture
def store(env):
    store = env.new_store()
    store.add(Image.new("RGB", (40, 30), "white"))
    return store


def test_schemas_in_openai_format_and_system_prompt(env):
    tools = env.openai_tools()
    assert [t["function"]["name"] for t in tools] == CORE_TOOLS
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in tools)
    prompt = env.system_prompt()
    assert "{tools}" not in prompt
    lines = prompt.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(line) for line in lines] == tools
    assert "<response>" in prompt and "<think>" in prompt
    assert env.system_prompt("Tools: {tools}").startswith('Tools: {"type": "function"')


async def test_success_with_defaults_and_info(env, store):
    outcome = await env.execute("core_echo", {"text": "hi"}, store)
    assert (outcome.text, outcome.error, outcome.category) == ("hi", False, None)
    assert outcome.arguments == {"text": "hi", "repeat": 1}
    assert outcome.info == {"repeat": 1}
    assert outcome.latency_s >= 0


async def test_produced_images_get_next_ids_and_are_announced(env, store):
    outcome = await env.execute("core_paint", {"image": "img_1", "count": 2}, store)
    assert outcome.image_ids == ("img_2", "img_3")
    assert outcome.text == "painted 2\nNew image: img_2 (40x30)\nNew image: img_3 (40x30)"
    assert store.record("img_3").origin == "core_paint"
    assert store.get("img_2").getpixel((0, 0)) == (128, 128, 128)


async def test_long_output_is_truncated_with_a_marker(env, store):
    outcome = await env.execute("core_echo", {"text": "abcde", "repeat": 60}, store)
    assert outcome.text == "abcde" * 40 + "\n[output truncated: 100 characters dropped]"
    assert outcome.info["truncated_chars"] == 100
    assert not outcome.error


@pytest.mark.parametrize(
    ("name", "arguments", "category", "fragment"),
    [
        ("nope", {}, "invalid_call", "unknown tool 'nope'"),
        ("core_echo", ["hi"], "invalid_call", "must be a JSON object"),
        ("core_echo", {"text": 3}, "bad_arguments", "'text' must be string"),
        ("core_echo", {"text": "a", "repeat": 0}, "bad_arguments", "'repeat' must be >= 1"),
        ("core_paint", {"image": "img_7"}, "not_found", "'img_7' not found"),
        ("core_fail", {"category": "rate_limited"}, "rate_limited", "failed on purpose"),
        ("core_fail", {"category": "sandbox", "why": "x" * 500}, "sandbox", "characters dropped"),
        ("core_boom", {}, "internal", "core_boom failed unexpectedly: RuntimeError: kaboom"),
        ("core_sleep", {"seconds": 5}, "timeout", "no result within 0.5 s"),
    ],
)
async def test_every_failure_is_an_error_observation_with_marker(
    env, store, name, arguments, category, fragment
):
    outcome = await env.execute(name, arguments, store)
    assert outcome.error is True
    assert outcome.category == category
    assert outcome.text.startswith(f"[tool error: {category}] ")
    assert observation.parse_error(outcome.text)[0] == category
    assert fragment in outcome.text
    assert outcome.image_ids == ()


async def test_blocking_tool_timeout_does_not_block_the_loop(env, store):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    outcome = await env.execute("core_block", {"seconds": 0.8}, store)
    task.cancel()
    assert outcome.category == "timeout"
    assert ticks >= 20  # the loop kept running while the tool blocked its worker thread


async def test_replay_miss_is_re_raised_as_an_infrastructure_signal(env, store):
    with pytest.raises(ReplayMissError, match="no recorded result"):
        await env.execute("core_replay", {}, store)


async def test_tool_returning_the_wrong_type_is_internal():
    spec = ToolSpec("odd", "Returns a string.", {"type": "object", "properties": {}})
    env = ToolEnvironment(tools=[FunctionTool(spec, lambda args, store: "just text")])
    outcome = await env.execute("odd", {}, env.new_store())
    assert outcome.category == "internal" and "expected ToolResult" in outcome.text


async def test_image_refused_by_the_store_is_an_error_observation(store):
    spec = ToolSpec("huge", "Returns a huge image.", {"type": "object", "properties": {}})
    env = ToolEnvironment(
        ToolEnvConfig(max_image_pixels=100),
        tools=[FunctionTool(spec, lambda a, s: ToolResult("x", [Image.new("RGB", (20, 20))]))],
    )
    outcome = await env.execute("huge", {}, env.new_store())
    assert outcome.category == "bad_arguments" and "exceeds" in outcome.text


def test_configuration_errors():
    spec = ToolSpec("dup", "x", {"type": "object", "properties": {}})
    tool = FunctionTool(spec, lambda a, s: ToolResult("x"))
    with pytest.raises(ConfigError, match="configured twice"):
        ToolEnvironment(tools=[tool, tool])
    with pytest.raises(ConfigError, match="unknown tool 'no_such_tool'"):
        ToolEnvironment(ToolEnvConfig(tools=["no_such_tool"]))
    bad = ToolSpec(
        "bad", "x", {"type": "object", "properties": {"a": {"type": "string", "format": "uri", "oneOf": []}}}
    )
    with pytest.raises(ConfigError, match="oneOf"):
        ToolEnvironment(tools=[FunctionTool(bad, lambda a, s: ToolResult("x"))])


def test_store_uses_configured_roots_and_pixel_limit(tmp_path):
    image_path = tmp_path / "a.png"
    Image.new("RGB", (8, 8)).save(image_path)
    env = ToolEnvironment(ToolEnvConfig(tools=[], image_roots=[str(tmp_path)], max_image_pixels=1000))
    store = env.new_store()
    assert store.add(str(image_path)) == "img_1"
    assert store.max_pixels == 1000


def test_observation_constants_agree_with_the_sft_format():
    assert observation.TOOL_RESPONSE_OPEN == observation_format.TOOL_RESPONSE_OPEN
    assert observation.TOOL_RESPONSE_CLOSE == observation_format.TOOL_RESPONSE_CLOSE
    image = Image.new("RGB", (2, 2))
    message = observation.observation_message(
        "two crops", [ImagePart("img_2", image), ImagePart("img_3", image)]
    )
    rendered = "".join(
        observation_format.IMAGE_PLACEHOLDER if isinstance(p, ImagePart) else p.text for p in message.content
    )
    expected = observation_format.wrap_tool_response(
        observation_format.render_observation_text("two crops", 2)
    )
    assert (message.role, rendered) == ("user", expected)


async def test_sync_tools_run_in_the_environment_pools():
    import threading

    def where(args, store):
        return ToolResult(text=threading.current_thread().name)

    spec_io = ToolSpec("io", "Blocking I/O.", {"type": "object", "properties": {}})
    spec_cpu = ToolSpec("cpu", "CPU work.", {"type": "object", "properties": {}})
    env = ToolEnvironment(
        tools=[FunctionTool(spec_io, where), FunctionTool(spec_cpu, where, cpu_bound=True)],
        tool_threads=3,
        cpu_threads=1,
    )
    store = env.new_store()
    assert (await env.execute("io", {}, store)).text.startswith("tool-io")
    assert (await env.execute("cpu", {}, store)).text.startswith("tool-cpu")
    await env.aclose()
    with pytest.raises(ConfigError, match="pool sizes"):
        ToolEnvironment(tools=[], tool_threads=0)
