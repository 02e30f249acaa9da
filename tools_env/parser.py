"""The turn protocol: parse one model turn into exactly one action.

A turn is ``<think>…</think>`` followed by exactly one of

- ``<tool_call>{"name": "crop", "arguments": {…}}</tool_call>`` (``"parameters"`` is accepted for
  ``"arguments"``; python code may follow the JSON as ``<code>…</code>``),
- ``<response>final answer</response>`` or ``<answer>final answer</answer>``.

:func:`parse_turn` returns an :class:`~opensearch_vl.tools_env.transcript.Action` of kind ``tool_call``,
``answer`` or ``invalid`` and never raises. Text from a ``<tool_response>`` the model wrote itself onward is
cut off first. Small mistakes models make are repaired and named in ``Action.repairs``:

============================  ==========================================================================
repair                        what was wrong
============================  ==========================================================================
``tool_response_cut``         the model hallucinated a ``<tool_response>``; the turn was cut there
``unclosed_think``            ``<think>`` never closed before the action tag
``missing_think_open``        ``</think>`` without ``<think>`` (chat templates that open it in the prompt)
``unclosed_tag``              the action tag was never closed (generation stopped at the stop sequence)
``code_fence``                the JSON was wrapped in a Markdown code fence
``extra_text``                text around the JSON object inside ``<tool_call>``
``trailing_comma``            a trailing comma in the JSON
``single_quotes``             single-quoted JSON strings
``json5_syntax``              other JSON5 syntax (unquoted keys, comments)
``python_literals``           Python ``True``/``False``/``None`` instead of JSON literals
``parameters_key``            ``"parameters"`` used instead of ``"arguments"``
``arguments_as_string``       arguments given as a JSON string (OpenAI wire style)
``null_arguments``            ``"arguments": null``
``openai_function_wrapper``   ``{"function": {"name": …, "arguments": …}}``
``code_block``                python code given as ``<code>…</code>`` after the JSON
``tool_name_normalized``      tool name in another case/style (``PythonInterpreter``)
``coerced_types``             a numeric string or whole float where the schema wants a number/integer
``nested_answer_tags``        ``<response><answer>…</answer></response>``: the inner answer is used
============================  ==========================================================================

Invalid turns carry one of :data:`INVALID_REASONS` in ``invalid_reason`` and a message in ``invalid_detail``.

``Action.well_formed`` is the per-step format indicator of the paper's format reward: the (cut) text matches
:data:`WELL_FORMED_PATTERN` (one think block, then one action block, nothing else) and the turn is valid.

Example:
    >>> a = parse_turn('<think>zoom</think><tool_call>{"name": "crop", "arguments": {"x": 1,}}</tool_call>')
    >>> a.kind, a.tool, a.arguments, a.repairs, a.well_formed
    ('tool_call', 'crop', {'x': 1}, ['trailing_comma'], True)
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import json5
from opensearch_vl.tools_env.tool import ToolSpec
from opensearch_vl.tools_env.transcript import Action
from opensearch_vl.tools_env.validation import validate_arguments

__all__ = ["parse_turn", "cut_at_tool_response", "InvalidReason", "INVALID_REASONS", "WELL_FORMED_PATTERN"]

InvalidReason = Literal[
    "no_action",  # neither <tool_call> nor <response>/<answer>
    "multiple_actions",  # more than one action block
    "empty_answer",  # <response></response> with nothing inside
    "invalid_json",  # the tool call is not parseable JSON, even after repairs
    "malformed_tool_call",  # JSON, but not an object with a string "name"
    "unknown_tool",  # the name is not one of the offered tools
    "arguments_not_object",  # "arguments" is not a JSON object
    "schema_violation",  # the arguments fail the tool's JSON schema
]
INVALID_REASONS: tuple[str, ...] = InvalidReason.__args__  # type: ignore[attr-defined]

WELL_FORMED_PATTERN = re.compile(
    r"^<think>.*?</think>\s*(<tool_call>.*?</tool_call>|<response>.*?</response>|<answer>.*?</answer>)\s*$",
    re.DOTALL,
)
"""The paper's per-step format regex (DOTALL), applied to the turn after cutting at ``<tool_response>``."""

_TOOL_RESPONSE = "<tool_response>"
_OPEN_ACTION = re.compile(r"<(tool_call|response|answer)>")
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*[}\]]")
_CODE = re.compile(r"<code>(.*?)(?:</code>|$)", re.DOTALL)
_NESTED_ANSWER = re.compile(r"^<(answer|response)>(.*)</\1>$", re.DOTALL)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class _Invalid(Exception):
    def __init__(self, reason: InvalidReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class _Block:
    tag: str
    content: str
    closed: bool


def cut_at_tool_response(text: str) -> tuple[str, bool]:
    """Cut ``text`` before the first ``<tool_response>``; returns the text and whether anything was cut.

    Example:
        >>> cut_at_tool_response("<tool_call>{}</tool_call><tool_response>fake")
        ('<tool_call>{}</tool_call>', True)
    """
    index = text.find(_TOOL_RESPONSE)
    if index < 0:
        return text, False
    return text[:index], True


def parse_turn(text: str, tools: Mapping[str, ToolSpec] | Iterable[ToolSpec] | None = None) -> Action:
    """Parse one model turn into a tool call, a final answer or an invalid action. Never raises.

    Args:
        text: the model's raw output for the turn.
        tools: the offered tools (a name -> spec mapping or specs). With tools, unknown names are rejected and
            arguments validated against the spec; ``None`` accepts any name without validation.

    Example:
        >>> parse_turn("<think>done</think><response>Paris</response>").answer
        'Paris'
        >>> parse_turn("I think it is Paris.").invalid_reason
        'no_action'
    """
    specs = _spec_map(tools)
    repairs: list[str] = []
    text, cut = cut_at_tool_response(text)
    if cut:
        repairs.append("tool_response_cut")
    think, body = _split_think(text, repairs)
    blocks = _find_blocks(body, repairs)
    shape_ok = bool(WELL_FORMED_PATTERN.match(text)) and len(blocks) == 1 and text.count("<think>") == 1

    def invalid(reason: InvalidReason, detail: str, **fields: Any) -> Action:
        return Action(
            kind="invalid",
            think=think,
            invalid_reason=reason,
            invalid_detail=detail,
            repairs=repairs,
            well_formed=False,
            **fields,
        )

    if not blocks:
        return invalid("no_action", "the turn has neither a <tool_call> nor a <response>")
    if len(blocks) > 1:
        tags = ", ".join(f"<{b.tag}>" for b in blocks)
        return invalid("multiple_actions", f"the turn has {len(blocks)} actions ({tags}); give exactly one")
    block = blocks[0]
    if block.tag in ("response", "answer"):
        answer = block.content.strip()
        nested = _NESTED_ANSWER.match(answer)
        if nested:
            answer = nested.group(2).strip()
            repairs.append("nested_answer_tags")
        if not answer:
            return invalid("empty_answer", f"the <{block.tag}> block is empty")
        return Action(kind="answer", think=think, answer=answer, repairs=repairs, well_formed=shape_ok)

    name: str | None = None
    arguments: dict[str, Any] | None = None
    try:
        name, arguments = _parse_call(block.content, repairs)
        if specs is not None:
            name = _resolve_name(name, specs, repairs)
            result = validate_arguments(specs[name].parameters, arguments)
            if result.coerced:
                repairs.append("coerced_types")
            arguments = result.value
            if not result.ok:
                raise _Invalid("schema_violation", f"{name}: " + "; ".join(result.errors))
    except _Invalid as exc:
        return invalid(exc.reason, exc.detail, tool=name, arguments=arguments)
    return Action(
        kind="tool_call", think=think, tool=name, arguments=arguments, repairs=repairs, well_formed=shape_ok
    )


def _spec_map(tools: Mapping[str, ToolSpec] | Iterable[ToolSpec] | None) -> Mapping[str, ToolSpec] | None:
    if tools is None or isinstance(tools, Mapping):
        return tools
    return {spec.name: spec for spec in tools}


def _split_think(text: str, repairs: list[str]) -> tuple[str | None, str]:
    """Separate the first think block from the rest; other think blocks are dropped from the body."""
    start = text.find("<think>")
    end = text.find("</think>")
    if start < 0 and end >= 0:
        repairs.append("missing_think_open")
        return text[:end].strip(), text[end + len("</think>") :]
    if start < 0:
        return None, text
    end = text.find("</think>", start)
    if end >= 0:
        think = text[start + len("<think>") : end]
        body = text[:start] + text[end + len("</think>") :]
    else:
        action = _OPEN_ACTION.search(text, start)
        stop = action.start() if action else len(text)
        if action:
            repairs.append("unclosed_think")
        think = text[start + len("<think>") : stop]
        body = text[:start] + text[stop:]
    body = re.sub(r"<think>.*?(</think>|$)", "", body, flags=re.DOTALL)
    return think.strip(), body


def _find_blocks(body: str, repairs: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    position = 0
    while True:
        match = _OPEN_ACTION.search(body, position)
        if match is None:
            return blocks
        tag = match.group(1)
        close = body.find(f"</{tag}>", match.end())
        if close < 0:
            repairs.append("unclosed_tag")
            blocks.append(_Block(tag, body[match.end() :], closed=False))
            return blocks
        blocks.append(_Block(tag, body[match.end() : close], closed=True))
        position = close + len(tag) + 3


def _parse_call(content: str, repairs: list[str]) -> tuple[str, dict[str, Any]]:
    code = None
    code_match = _CODE.search(content)
    if code_match:
        code = code_match.group(1).strip("\n")
        content = content[: code_match.start()] + content[code_match.end() :]
        repairs.append("code_block")
    payload = _load_json(content, repairs)
    if isinstance(payload, dict) and isinstance(payload.get("function"), dict) and "name" not in payload:
        payload = payload["function"]
        repairs.append("openai_function_wrapper")
    if not isinstance(payload, dict):
        raise _Invalid("malformed_tool_call", f"the tool call must be a JSON object, got {_kind(payload)}")
    name = payload.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Invalid("malformed_tool_call", 'the tool call needs a string "name"')
    name = name.strip()
    if "arguments" in payload:
        arguments = payload["arguments"]
    elif "parameters" in payload:
        arguments = payload["parameters"]
        repairs.append("parameters_key")
    else:
        arguments = {}
    if arguments is None:
        arguments = {}
        repairs.append("null_arguments")
    if isinstance(arguments, str):
        try:
            arguments = _load_json(arguments, [])
        except _Invalid:
            raise _Invalid("arguments_not_object", f"{name}: arguments must be a JSON object, got a string")
        repairs.append("arguments_as_string")
    if not isinstance(arguments, dict):
        raise _Invalid(
            "arguments_not_object", f"{name}: arguments must be a JSON object, got {_kind(arguments)}"
        )
    if code is not None and "code" not in arguments:
        arguments = {**arguments, "code": code}
    return name, arguments


def _load_json(raw: str, repairs: list[str]) -> Any:
    text = raw.strip()
    fence = _FENCE.search(text)
    if fence:
        text = fence.group(1).strip()
        repairs.append("code_fence")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        first_error = str(exc)
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start and (start, end) != (0, len(text) - 1):
        inner = text[start : end + 1]
        try:
            value = json.loads(inner)
        except (ValueError, RecursionError):
            pass
        else:
            repairs.append("extra_text")
            return value
        text_candidates = [(inner, True), (text, False)]
    else:
        text_candidates = [(text, False)]
    if len(text) > _MAX_REPAIR_CHARS:  # the JSON5 parser is pure Python: ~2 ms per kB would stall the loop
        raise _Invalid(
            "invalid_json",
            f"the tool call is not valid JSON ({first_error}); it is too long "
            f"({len(text)} characters) to attempt repairs",
        )
    for candidate, trimmed in text_candidates:
        try:
            value = json5.loads(candidate)
        except Exception:  # json5 raises several types on odd input; all mean "not JSON5 either"
            value = _NOT_PARSED
        if value is _NOT_PARSED:
            try:
                value = ast.literal_eval(candidate)
            except Exception:  # literal_eval raises ValueError, SyntaxError, RecursionError, MemoryError…
                continue
            repairs.append("python_literals")
        else:
            found = False
            if _TRAILING_COMMA.search(candidate):
                repairs.append("trailing_comma")
                found = True
            if "'" in candidate and not _is_plain_json_with_apostrophes(candidate):
                repairs.append("single_quotes")
                found = True
            if not found:
                repairs.append("json5_syntax")
        if trimmed:
            repairs.append("extra_text")
        return value
    raise _Invalid("invalid_json", f"the tool call is not valid JSON ({first_error})")


_NOT_PARSED = object()
_MAX_REPAIR_CHARS = 20_000


def _is_plain_json_with_apostrophes(text: str) -> bool:
    # an apostrophe inside a double-quoted string ("it's") is not a single-quote repair
    return not re.search(r"(^|[{\[,:]\s*)'", text)


def _resolve_name(name: str, specs: Mapping[str, ToolSpec], repairs: list[str]) -> str:
    if name in specs:
        return name
    normalized = _CAMEL.sub("_", name).lower().replace("-", "_").replace(" ", "_")
    for candidate in specs:
        if candidate.lower() == normalized or candidate.lower() == name.lower():
            repairs.append("tool_name_normalized")
            return candidate
    raise _Invalid("unknown_tool", f"unknown tool {name!r}; available: {', '.join(sorted(specs))}")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )
