"""Golden tests: our registered templates render exactly Qwen3-VL's chat format, byte for byte.

Expected strings are written by hand from the documented Qwen3-VL chat template (system + `# Tools` block,
`<tool_call>` JSON blocks, tool results as a user turn in `<tool_response>` tags, images as
`<|vision_start|><|image_pad|>…<|vision_end|>`); nothing in them is produced by the code under test. Image pad
counts follow the tiny processor (smart_resize on a 32-pixel grid, floor 4,096 pixels): a 96x96 image is
96x96 -> 9 pads, a 48x48 crop becomes 64x64 -> 4 pads.
"""

from __future__ import annotations

import json

import pytest
from opensearch_vl.sft.qwen_chat_format import render_assistant_turn
from sft_fixtures import make_image

TOOLS = json.dumps(
    [
        {
            "name": "crop",
            "description": "Crop an image.",
            "parameters": {
                "type": "object",
                "properties": {"image": {"type": "string"}},
                "required": ["image"],
            },
        }
    ]
)
TOOLS_BLOCK = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "crop", "description": "Crop an image.", "parameters": '
    '{"type": "object", "properties": {"image": {"type": "string"}}, "required": ["image"]}}}\n</tools>\n\n'
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def vision(n: int) -> str:
    return "<|vision_start|>" + "<|image_pad|>" * n + "<|vision_end|>"


def encode(template_name, messages, system, tools, images, tok_proc):
    from llamafactory.data import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments

    tokenizer, processor = tok_proc
    template = get_template_and_fix_tokenizer(
        tokenizer, DataArguments(template=template_name, cutoff_len=8192)
    )
    messages = template.mm_plugin.process_messages(messages, images, [], [], processor)
    return tokenizer, template.encode_multiturn(tokenizer, messages, system, tools)


def rendered(template_name, messages, system, tools, images, tok_proc) -> str:
    tokenizer, pairs = encode(template_name, messages, system, tools, images, tok_proc)
    return tokenizer.decode([i for s, t in pairs for i in s + t], skip_special_tokens=False)


def test_system_tools_call_and_image_observation(lf_tokenizer_and_processor):
    messages = [
        {"role": "user", "content": "<image>What color is the square?"},
        {
            "role": "assistant",
            "content": "<think>\nCrop it.\n</think>\n\n<tool_call>\n"
            '{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call>',
        },
        {"role": "observation", "content": "<image>Image cropped successfully. New image ID: img_2"},
        {"role": "assistant", "content": "<response>red</response>"},
    ]
    expected = (
        "<|im_start|>system\nYou are an agent.\n\n" + TOOLS_BLOCK + "<|im_end|>\n"
        "<|im_start|>user\n" + vision(9) + "What color is the square?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nCrop it.\n</think>\n\n<tool_call>\n"
        '{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n"
        + vision(4)
        + "Image cropped successfully. New image ID: img_2\n"
        "</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<response>red</response><|im_end|>\n"
    )
    images = [make_image(96, 96), make_image(48, 48)]
    got = rendered(
        "qwen3_vl_agentic_nothink", messages, "You are an agent.", TOOLS, images, lf_tokenizer_and_processor
    )
    assert got == expected


def test_empty_system_with_tools_parallel_calls_two_images(lf_tokenizer_and_processor):
    calls = [
        {"name": "crop", "arguments": {"image": "img_1"}},
        {"name": "crop", "arguments": {"image": "img_1"}},
    ]
    messages = [
        {"role": "user", "content": "<image>Compare the corners."},
        {"role": "function", "content": json.dumps(calls)},
        {"role": "observation", "content": "<image>left\n</tool_response>\n<tool_response>\n<image>right"},
        {"role": "assistant", "content": "Both are red."},
    ]
    expected = (
        "<|im_start|>system\n" + TOOLS_BLOCK + "<|im_end|>\n"
        "<|im_start|>user\n" + vision(9) + "Compare the corners.<|im_end|>\n"
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n"
        + vision(4)
        + "left\n</tool_response>\n<tool_response>\n"
        + vision(4)
        + "right\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nBoth are red.<|im_end|>\n"
    )
    images = [make_image(96, 96), make_image(48, 48), make_image(48, 48)]
    got = rendered("qwen3_vl_agentic_nothink", messages, "", TOOLS, images, lf_tokenizer_and_processor)
    assert got == expected
    # upstream qwen3_vl_nothink differs exactly by the spurious blank lines after "system\n" (the bug we fix)
    upstream = rendered("qwen3_vl_nothink", messages, "", TOOLS, images, lf_tokenizer_and_processor)
    assert upstream == expected.replace("<|im_start|>system\n", "<|im_start|>system\n\n\n", 1)


def test_multi_turn_dialogue_without_tools(lf_tokenizer_and_processor):
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "<image>And this?"},
        {"role": "assistant", "content": "A red square."},
    ]
    expected = (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\n"
        + vision(9)
        + "And this?<|im_end|>\n<|im_start|>assistant\nA red square.<|im_end|>\n"
    )
    got = rendered(
        "qwen3_vl_agentic_nothink", messages, "", None, [make_image(96, 96)], lf_tokenizer_and_processor
    )
    assert got == expected


def test_thinking_variant_adds_empty_thought_only_where_missing(lf_tokenizer_and_processor):
    messages = [
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": '<tool_call>\n{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call>',
        },
        {"role": "observation", "content": "done"},
        {"role": "assistant", "content": "<think>\nI see it.\n</think>\n\nA"},
    ]
    expected = (
        "<|im_start|>system\n"
        + TOOLS_BLOCK
        + "<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
        '<think>\n\n</think>\n\n<tool_call>\n{"name": "crop", "arguments": {"image": '
        '"img_1"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\ndone\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        "<think>\nI see it.\n</think>\n\nA<|im_end|>\n"
    )
    assert rendered("qwen3_vl_agentic", messages, "", TOOLS, [], lf_tokenizer_and_processor) == expected


def test_qwen2_vl_variant_keeps_its_default_system(lf_tokenizer_and_processor):
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
    expected = (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
    )
    assert rendered("qwen2_vl_agentic", messages, "", None, [], lf_tokenizer_and_processor) == expected


def test_framework_free_renderer_matches_the_template_rendering():
    text = render_assistant_turn(
        "<think>\nCrop it.\n</think>\n", [("crop", {"image": "img_1"}), ("crop", {"image": "img_2"})]
    )
    assert text == (
        '<think>\nCrop it.\n</think>\n\n<tool_call>\n{"name": "crop", "arguments": {"image": '
        '"img_1"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "crop", "arguments": {"image": "img_2"}}\n</tool_call>'
    )


def test_loss_covers_assistant_turns_only(lf_tokenizer_and_processor):
    from llamafactory.data import get_template_and_fix_tokenizer
    from llamafactory.data.processor import SupervisedDatasetProcessor
    from llamafactory.extras.constants import IGNORE_INDEX
    from llamafactory.hparams import DataArguments

    tokenizer, processor = lf_tokenizer_and_processor
    data_args = DataArguments(template="qwen3_vl_agentic_nothink", cutoff_len=4096)
    template = get_template_and_fix_tokenizer(tokenizer, data_args)
    call = '<tool_call>\n{"name": "crop", "arguments": {"image": "img_1"}}\n</tool_call>'
    prompt = [
        {"role": "user", "content": "<image>Q"},
        {"role": "assistant", "content": call},
        {"role": "observation", "content": "<image>OBSERVED"},
    ]
    response = [{"role": "assistant", "content": "ANSWER"}]
    encoder = SupervisedDatasetProcessor(
        template=template, tokenizer=tokenizer, processor=processor, data_args=data_args
    )
    input_ids, labels = encoder._encode_data_example(
        prompt, response, "", TOOLS, [make_image(96, 96), make_image(48, 48)], [], []
    )
    trained = tokenizer.decode([t for t in labels if t != IGNORE_INDEX], skip_special_tokens=False)
    assert trained == call + "<|im_end|>\nANSWER<|im_end|>\n"
    pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert input_ids.count(pad) == 13
    assert all(label == IGNORE_INDEX for tok, label in zip(input_ids, labels) if tok == pad)


@pytest.mark.parametrize("name", ["qwen3_vl_agentic_nothink", "qwen3_vl_agentic", "qwen2_vl_agentic"])
def test_registered_templates_match_the_declared_names(name):
    from llamafactory.data.template import TEMPLATES
    from opensearch_vl.plugins.llamafactory import TEMPLATE_NAMES
    from opensearch_vl.plugins.llamafactory.templates import TEMPLATE_NAMES as IMPLEMENTED

    assert TEMPLATE_NAMES == IMPLEMENTED
    assert name in TEMPLATES
