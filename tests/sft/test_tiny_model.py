"""The tiny local Qwen3-VL renders chats in Qwen3-VL's layout (expected strings written by hand)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

TOOLS = [{"type": "function", "function": {"name": "crop"}}]


@pytest.fixture(scope="module")
def processor(tiny_model):
    return transformers.AutoProcessor.from_pretrained(tiny_model)


def test_roles_images_and_tool_responses(processor):
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be careful."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Where?"}]},
        {"role": "assistant", "content": "<think>crop</think><tool_call>{}</tool_call>"},
        {"role": "tool", "content": [{"type": "image"}, {"type": "text", "text": "New image: img_2"}]},
    ]
    expected = (
        "<|im_start|>system\nBe careful.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Where?<|im_end|>\n"
        "<|im_start|>assistant\n<think>crop</think><tool_call>{}</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n<|vision_start|><|image_pad|><|vision_end|>New image: img_2\n"
        "</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) == expected


def test_tools_block_with_empty_system(processor):
    messages = [{"role": "user", "content": "Hi"}]
    expected = (
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "crop"}}\n</tools>\n\n'
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nHi<|im_end|>\n"
    )
    assert processor.apply_chat_template(messages, tools=TOOLS, tokenize=False) == expected
