"""The shared observation format and tool-call text, and the layering rule: `opensearch_vl.sft` stays
framework-free (no LLaMA-Factory, no torch on import)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from opensearch_vl.sft.observation_format import (
    merge_observations,
    render_observation_text,
    wrap_tool_response,
)
from opensearch_vl.sft.qwen_chat_format import parse_function_call_turn, parse_tool_calls, render_tool_call


def test_observation_images_come_before_the_text_inside_the_tags():
    value = render_observation_text("Image cropped. New image ID: img_3", 2)
    assert value == "<image><image>Image cropped. New image ID: img_3"
    assert (
        wrap_tool_response(value)
        == "<tool_response>\n<image><image>Image cropped. New image ID: img_3\n</tool_response>"
    )
    assert render_observation_text("no image", 0) == "no image"
    with pytest.raises(ValueError):
        render_observation_text("x", -1)


def test_parallel_results_merge_like_qwen_groups_tool_messages():
    merged = merge_observations(["<image>a", "b"])
    assert (
        wrap_tool_response(merged)
        == "<tool_response>\n<image>a\n</tool_response>\n<tool_response>\nb\n</tool_response>"
    )
    with pytest.raises(ValueError):
        merge_observations([])


def test_tool_call_round_trip_and_errors():
    text = (
        render_tool_call("text_search", {"q": "Palace Museum 故宫"})
        + "\n"
        + render_tool_call("crop", {"image": "img_1"})
    )
    calls = parse_tool_calls("<think>\nx\n</think>\n\n" + text)
    assert [(c.name, c.arguments) for c in calls] == [
        ("text_search", {"q": "Palace Museum 故宫"}),
        ("crop", {"image": "img_1"}),
    ]
    assert "故宫" in text  # ensure_ascii=False, as Qwen's tojson renders it
    assert parse_tool_calls("<tool_call>\n[1, 2]\n</tool_call>")[0].error.startswith(
        "the call is a JSON list"
    )
    assert parse_tool_calls("<tool_call>\n{}\n")[0].error == "unbalanced <tool_call> / </tool_call> tags"
    bare = parse_function_call_turn(json.dumps({"name": "crop", "arguments": {"image": "img_1"}}))
    assert bare[0].name == "crop" and bare[0].error is None
    assert parse_function_call_turn("crop it").pop().error.startswith("function_call value is not JSON")


def test_sft_package_imports_no_framework():
    code = (
        "import sys, opensearch_vl.sft.data_check, opensearch_vl.sft.sharegpt, "
        "opensearch_vl.sft.image_tokens, "
        "opensearch_vl.sft.tiny_model, opensearch_vl.cli.sft, opensearch_vl.plugins.llamafactory; "
        "print(sorted(m for m in ('torch', 'llamafactory', 'transformers', 'verl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
