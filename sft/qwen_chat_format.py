"""Qwen-VL tool-call text: render calls exactly as the Qwen3-VL chat template does, and parse them back.

An assistant turn that calls tools is its text (for example a `<think>…</think>` block) followed by one block
per
call, blocks joined by a newline, with a newline between the text and the first block::

    <think>
    Crop the sign first.
    </think>

    <tool_call>
    {"name": "crop", "arguments": {"image": "img_1", "x": 0, "y": 0, "width": 48, "height": 48}}
    </tool_call>

The JSON is `json.dumps(..., ensure_ascii=False)` with the default separators, which is what the chat
template's
`tojson` filter and LLaMA-Factory's Qwen tool formatter produce.

Example:
    >>> render_tool_call("crop", {"image": "img_1"})
    '<tool_call>\\n{"name": "crop", "arguments": {"image": "img_1"}}\\n</tool_call>'
    >>> [c.name for c in parse_tool_calls(render_assistant_turn("ok", [("a", {}), ("b", {"x": 1})]))]
    ['a', 'b']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedToolCall", "parse_tool_calls", "render_assistant_turn", "render_tool_call"]

_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class ParsedToolCall:
    """One `<tool_call>` block: the call, or why it does not parse (`error` set, `name`/`arguments` None)."""

    raw: str
    name: str | None = None
    arguments: dict[str, Any] | None = None
    error: str | None = None
    extra_keys: tuple[str, ...] = field(default=())


def render_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render one call as Qwen's `<tool_call>` block.

    Example:
        >>> render_tool_call("text_search", {"q": "東京"})
        '<tool_call>\\n{"name": "text_search", "arguments": {"q": "東京"}}\\n</tool_call>'
    """
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def render_assistant_turn(text: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Render an assistant turn: its text, then each call's block (newline-separated, as Qwen3-VL does).

    Example:
        >>> render_assistant_turn("", [("crop", {"image": "img_1"})]).startswith("<tool_call>")
        True
    """
    blocks = [render_tool_call(name, args) for name, args in calls]
    if not blocks:
        return text
    return (text + "\n" if text else "") + "\n".join(blocks)


def parse_tool_calls(text: str) -> list[ParsedToolCall]:
    """Parse every `<tool_call>` block in an assistant turn (also the JSON body of a `function_call` turn).

    A block parses when its body is a JSON object with a string `name` and an object `arguments`.

    Example:
        >>> parse_tool_calls('<tool_call>\\n{"name": "crop"}\\n</tool_call>')[0].error
        "the call has no 'arguments' object"
    """
    calls = []
    for match in _TOOL_CALL_RE.finditer(text):
        calls.append(_parse_one(match.group(1)))
    if text.count("<tool_call>") != text.count("</tool_call>"):
        calls.append(ParsedToolCall(raw=text, error="unbalanced <tool_call> / </tool_call> tags"))
    return calls


def parse_function_call_turn(value: str) -> list[ParsedToolCall]:
    """Parse a LLaMA-Factory `function_call` turn: `<tool_call>` blocks, or bare JSON (an object or a list).

    Example:
        >>> [c.name for c in parse_function_call_turn('[{"name": "a", "arguments": {}}]')]
        ['a']
    """
    if "<tool_call>" in value:
        return parse_tool_calls(value)
    body = re.sub(r"<think>.*?</think>", "", value, flags=re.DOTALL).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return [ParsedToolCall(raw=value, error=f"function_call value is not JSON: {exc.msg} at {exc.pos}")]
    items = data if isinstance(data, list) else [data]
    return [_check_shape(item, json.dumps(item, ensure_ascii=False)) for item in items]


def _parse_one(body: str) -> ParsedToolCall:
    try:
        data = json.loads(body.strip())
    except json.JSONDecodeError as exc:
        return ParsedToolCall(raw=body, error=f"not JSON: {exc.msg} at char {exc.pos}")
    return _check_shape(data, body)


def _check_shape(data: Any, raw: str) -> ParsedToolCall:
    if not isinstance(data, dict):
        return ParsedToolCall(raw=raw, error=f"the call is a JSON {type(data).__name__}, not an object")
    name, arguments = data.get("name"), data.get("arguments")
    if not isinstance(name, str) or not name:
        return ParsedToolCall(raw=raw, error="the call has no string 'name'")
    if not isinstance(arguments, dict):
        return ParsedToolCall(raw=raw, name=name, error="the call has no 'arguments' object")
    extra = tuple(sorted(set(data) - {"name", "arguments"}))
    return ParsedToolCall(raw=raw, name=name, arguments=arguments, extra_keys=extra)
