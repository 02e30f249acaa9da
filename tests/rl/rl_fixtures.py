"""Test helpers shared by tests/rl and tests/plugins: the tiny local Qwen3-VL, a scripted token backend, a
small
real tool environment (an image-producing tool and a tool whose backend is down), a task image.

Imported as a plain module (``tests/rl`` is put on ``sys.path`` by the tests that need it)."""

from __future__ import annotations

import pytest
from opensearch_vl.rl.token_policy import Generation
from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec
from PIL import Image

from opensearch_vl.errors import ToolError


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny-qwen3vl"), seed=0)


@pytest.fixture(scope="session")
def processor(tiny_model_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_model_dir)


class ScriptedTokens:
    """A token backend (the GenerateFn boundary) that replays scripted turns as the model's token ids.

    Records every (prompt_ids, images) it was sent, like a generation server would see them.
    """

    def __init__(self, tokenizer, turns, *, eos=True):
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.calls = []
        self.eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>") if eos else None

    async def __call__(self, prompt_ids, images):
        self.calls.append((list(prompt_ids), list(images)))
        text = self.turns[len(self.calls) - 1]
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        if self.eos_id is not None:
            ids.append(self.eos_id)
        return Generation(token_ids=ids, logprobs=[-0.5] * len(ids), finish_reason="stop")


@pytest.fixture
def scripted_tokens():
    return ScriptedTokens


def _zoom(arguments, store):
    image = store.get(arguments["image"])
    w, h = image.size
    return ToolResult(
        text=f"zoomed into {arguments['image']}",
        images=[image.crop((w // 4, h // 4, 3 * w // 4, 3 * h // 4))],
    )


def _broken(arguments, store):
    raise ToolError("upstream_http", "search backend: HTTP 502")


ZOOM = ToolSpec(
    "zoom",
    "Zoom into the centre of an image.",
    {"type": "object", "properties": {"image": {"type": "string"}}, "required": ["image"]},
    produces_images=True,
)
BROKEN = ToolSpec(
    "search",
    "A search tool whose backend is down.",
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def make_env():
    """A small real environment: an image-producing tool and a tool that always fails."""
    return ToolEnvironment(tools=[FunctionTool(ZOOM, _zoom), FunctionTool(BROKEN, _broken)])


@pytest.fixture
def env():
    return make_env()


@pytest.fixture
def task_image():
    image = Image.new("RGB", (96, 64), (200, 30, 30))
    for x in range(40, 60):
        for y in range(10, 30):
            image.putpixel((x, y), (20, 20, 220))
    return image
