"""The turn protocol: every accepted form, every repair, every rejection reason, and a fuzz test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opensearch_vl.tools_env.parser import INVALID_REASONS, cut_at_tool_response, parse_turn
from opensearch_vl.tools_env.tool import ToolSpec
from opensearch_vl.tools_env.validation import apply_defaults, check_schema, validate_arguments

from opensearch_vl.errors import ConfigError

CROP = ToolSpec(
    "crop",
    "Crop a region.",
    {
        "type": "object",
        "properties": {
            "image": {"type": "string"},
            "x": {"type": "integer", "minimum": 0},
            "y": {"type": "integer", "minimum": 0},
            "width": {"type": "integer", "minimum": 1},
            "height": {"type": "integer", "minimum": 1},
        },
        "required": ["image", "x", "y", "width", "height"],
        "additionalProperties": False,
    },
)
SEARCH = ToolSpec(
    "text_search",
    "Search.",
    {
        "type": "object",
        "properties": {
            "q": {"type": "string", "minLength": 1},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            "hl": {"type": "string", "enum": ["en", "zh"]},
        },
        "required": ["q"],
    },
)
PYTHON = ToolSpec(
    "python_interpreter",
    "Run code.",
    {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
)
TOOLS = {spec.name: spec for spec in (CROP, SEARCH, PYTHON)}
GOOD_ARGS = '{"image": "img_1", "x": 0, "y": 0, "width": 10, "height": 10}'


def call(payload: str, think: str = "look closer") -> str:
    return f"<think>{think}</think>\n<tool_call>\n{payload}\n</tool_call>"


# ---- accepted forms ----------------------------------------------------------------------------------
def test_canonical_tool_call_is_well_formed_and_unrepaired():
    action = parse_turn(call(f'{{"name": "crop", "arguments": {GOOD_ARGS}}}'), TOOLS)
    assert action.kind == "tool_call"
    assert action.tool == "crop"
    assert action.arguments == {"image": "img_1", "x": 0, "y": 0, "width": 10, "height": 10}
    assert action.think == "look closer"
    assert action.repairs == []
    assert action.well_formed is True


def test_parameters_key_is_accepted_and_recorded():
    action = parse_turn(call('{"name": "text_search", "parameters": {"q": "eiffel tower"}}'), TOOLS)
    assert action.kind == "tool_call"
    assert action.arguments == {"q": "eiffel tower"}
    assert action.repairs == ["parameters_key"]


@pytest.mark.parametrize("tag", ["response", "answer"])
def test_final_answer_tags(tag):
    action = parse_turn(f"<think>I know it</think>  <{tag}> Paris </{tag}>\n", TOOLS)
    assert (action.kind, action.answer, action.well_formed) == ("answer", "Paris", True)


def test_nested_answer_inside_response_uses_inner_text():
    action = parse_turn("<think>x</think><response><answer>42</answer></response>")
    assert action.answer == "42"
    assert "nested_answer_tags" in action.repairs


def test_python_code_block_after_json_becomes_the_code_argument():
    text = call('{"name": "PythonInterpreter", "arguments": {}}<code>\nprint(6 * 7)\n</code>')
    action = parse_turn(text, TOOLS)
    assert action.kind == "tool_call"
    assert action.tool == "python_interpreter"
    assert action.arguments == {"code": "print(6 * 7)"}
    assert {"code_block", "tool_name_normalized"} <= set(action.repairs)


# ---- repairs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "repair"),
    [
        ('```json\n{"name": "text_search", "arguments": {"q": "a"}}\n```', "code_fence"),
        ('{"name": "text_search", "arguments": {"q": "a",},}', "trailing_comma"),
        ("{'name': 'text_search', 'arguments': {'q': 'a'}}", "single_quotes"),
        ('{name: "text_search", arguments: {q: "a"}} ', "json5_syntax"),
        ('Calling now: {"name": "text_search", "arguments": {"q": "a"}} thanks', "extra_text"),
        ('{"name": "text_search", "arguments": "{\\"q\\": \\"a\\"}"}', "arguments_as_string"),
        ('{"function": {"name": "text_search", "arguments": {"q": "a"}}}', "openai_function_wrapper"),
        ("{'name': 'text_search', 'arguments': {'q': 'a', 'hl': None or 'en'}}", None),
    ],
)
def test_common_json_mistakes_are_repaired(payload, repair):
    action = parse_turn(call(payload), TOOLS)
    if repair is None:  # not even Python: rejected, with the JSON error named
        assert action.invalid_reason == "invalid_json"
        return
    assert action.kind == "tool_call", action.invalid_detail
    assert action.arguments["q"] == "a"
    assert repair in action.repairs


def test_python_literals_are_repaired():
    action = parse_turn(
        call(
            "{'name': 'crop', 'arguments': {'image': 'img_1', 'x': 0, 'y': 0, 'width': 5, "
            "'height': 5, 'extra': True}}"
        )
    )
    assert action.kind == "tool_call"
    assert action.arguments["extra"] is True
    assert "python_literals" in action.repairs


def test_apostrophe_inside_double_quoted_string_is_not_a_repair():
    action = parse_turn(call('{"name": "text_search", "arguments": {"q": "what\'s this"}}'), TOOLS)
    assert action.repairs == []
    assert action.arguments == {"q": "what's this"}


def test_numeric_strings_are_coerced_for_integer_fields():
    payload = (
        '{"name": "crop", "arguments": {"image": "img_1", "x": "12", "y": 3.0, "width": 10, "height": 10}}'
    )
    action = parse_turn(call(payload), TOOLS)
    assert action.arguments["x"] == 12 and action.arguments["y"] == 3
    assert isinstance(action.arguments["y"], int)
    assert "coerced_types" in action.repairs


def test_unclosed_tool_call_at_stop_sequence_is_repaired_but_not_well_formed():
    action = parse_turn('<think>go</think><tool_call>{"name": "text_search", "arguments": {"q": "a"}}', TOOLS)
    assert action.kind == "tool_call"
    assert "unclosed_tag" in action.repairs
    assert action.well_formed is False


def test_unclosed_think_before_action_is_repaired():
    action = parse_turn("<think>hmm <response>blue</response>")
    assert (action.kind, action.answer, action.think) == ("answer", "blue", "hmm")
    assert "unclosed_think" in action.repairs


def test_think_opened_by_the_chat_template():
    action = parse_turn("reasoning here</think><response>blue</response>")
    assert action.think == "reasoning here"
    assert action.repairs == ["missing_think_open"]
    assert action.well_formed is False


def test_turn_is_cut_at_a_hallucinated_tool_response():
    text = (
        call('{"name": "text_search", "arguments": {"q": "a"}}') + "<tool_response>fake</tool_response>"
        "<think>more</think><response>made up</response>"
    )
    assert cut_at_tool_response(text)[1] is True
    action = parse_turn(text, TOOLS)
    assert action.kind == "tool_call"
    assert action.repairs == ["tool_response_cut"]
    assert action.well_formed is True  # the paper's regex runs on the cut text, as the reference rollout does


def test_action_tags_inside_think_do_not_count():
    text = (
        "<think>I could write <response>x</response> but first</think><tool_call>"
        '{"name": "text_search", "arguments": {"q": "a"}}</tool_call>'
    )
    action = parse_turn(text, TOOLS)
    assert action.kind == "tool_call"


# ---- rejections ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<think>I believe it is Paris.</think> Paris.", "no_action"),
        ("", "no_action"),
        (
            call('{"name": "text_search", "arguments": {"q": "a"}}') + "<response>b</response>",
            "multiple_actions",
        ),
        (
            "<think>x</think>"
            + '<tool_call>{"name": "text_search", "arguments": {"q": "a"}}</tool_call>' * 2,
            "multiple_actions",
        ),
        ("<think>x</think><response>  </response>", "empty_answer"),
        (call("{name: crop, args: ["), "invalid_json"),
        (call('["crop", {}]'), "malformed_tool_call"),
        (call('{"arguments": {}}'), "malformed_tool_call"),
        (call('{"name": "teleport", "arguments": {}}'), "unknown_tool"),
        (call('{"name": "text_search", "arguments": ["a"]}'), "arguments_not_object"),
        (call('{"name": "text_search", "arguments": "not json"}'), "arguments_not_object"),
        (call('{"name": "crop", "arguments": {"image": "img_1"}}'), "schema_violation"),
        (
            call(
                '{"name": "crop", "arguments": {"image": "img_1", "x": 0, "y": 0, "width": 0, "height": 1}}'
            ),
            "schema_violation",
        ),
        (call('{"name": "text_search", "arguments": {"q": "a", "hl": "fr"}}'), "schema_violation"),
    ],
)
def test_rejections_name_their_reason(text, reason):
    action = parse_turn(text, TOOLS)
    assert action.kind == "invalid"
    assert action.invalid_reason == reason
    assert action.invalid_detail
    assert action.well_formed is False


def test_unknown_tool_lists_available_tools():
    action = parse_turn(call('{"name": "teleport", "arguments": {}}'), TOOLS)
    assert "crop" in action.invalid_detail and "text_search" in action.invalid_detail
    assert action.tool == "teleport"


def test_schema_violation_names_every_problem():
    action = parse_turn(call('{"name": "crop", "arguments": {"image": 3, "x": -1, "zoom": 2}}'), TOOLS)
    detail = action.invalid_detail
    for fragment in [
        "'image' must be string",
        "'x' must be >= 0",
        "missing required property 'width'",
        "unexpected property 'zoom'",
    ]:
        assert fragment in detail


def test_without_tools_any_name_is_accepted_unvalidated():
    action = parse_turn(call('{"name": "anything", "arguments": {"k": [1, 2]}}'))
    assert (action.kind, action.tool, action.arguments) == ("tool_call", "anything", {"k": [1, 2]})


# ---- validation module --------------------------------------------------------------------------------
def test_validator_subset():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "mode": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^auto$"}]},
            "flag": {"type": "boolean"},
        },
    }
    assert validate_arguments(schema, {"n": 0.5, "tags": ["a"], "mode": "auto", "flag": False}).ok
    errors = validate_arguments(schema, {"n": 1, "tags": [], "mode": "manual", "flag": 1}).errors
    assert len(errors) == 4
    assert validate_arguments(schema, {"tags": ["a", 2]}).errors == ("'tags[1]' must be string, got integer",)
    assert validate_arguments({"type": "integer"}, True).errors == ("arguments must be integer, got boolean",)


def test_check_schema_refuses_unsupported_keywords():
    check_schema(CROP.parameters)
    with pytest.raises(ConfigError, match="oneOf"):
        check_schema({"type": "object", "properties": {"a": {"oneOf": []}}})
    with pytest.raises(ConfigError, match="unknown type"):
        check_schema({"type": "object", "properties": {"a": {"type": "str"}}})


def test_apply_defaults_fills_missing_top_level_values_only():
    assert apply_defaults(SEARCH.parameters, {"q": "a"}) == {"q": "a", "top_k": 5}
    assert apply_defaults(SEARCH.parameters, {"q": "a", "top_k": 2}) == {"q": "a", "top_k": 2}


# ---- fuzz ---------------------------------------------------------------------------------------------
_FRAGMENTS = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<response>",
        "</response>",
        "<answer>",
        "</answer>",
        "<tool_response>",
        "<code>",
        "</code>",
        "```json\n",
        "```",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "'",
        '"',
        '"name"',
        '"arguments"',
        '"parameters"',
        '"crop"',
        '"text_search"',
        '"q"',
        "None",
        "True",
        "1e999",
        "\n",
        '{"name": "crop", "arguments": {"image": "img_1", "x": 1, "y": 1, "width": 2, "height": 2}}',
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=30).map("".join))
def test_fuzz_parser_never_raises_and_returns_one_outcome(text):
    for tools in (TOOLS, None):
        action = parse_turn(text, tools)
        assert action.kind in ("tool_call", "answer", "invalid")
        if action.kind == "invalid":
            assert action.invalid_reason in INVALID_REASONS
        elif action.kind == "tool_call":
            assert isinstance(action.tool, str) and isinstance(action.arguments, dict)
        else:
            assert action.answer
        assert not (action.well_formed and action.kind == "invalid")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_fuzz_parser_on_arbitrary_unicode(text):
    assert parse_turn(text, TOOLS).kind in ("tool_call", "answer", "invalid")


def test_huge_malformed_call_is_rejected_without_slow_repairs():
    code = "x = 1\n" * 5000
    text = call("{'name': 'python_interpreter', 'arguments': {'code': '" + code.replace("\n", "\\n") + "'}}")
    action = parse_turn(text, TOOLS)
    assert action.invalid_reason == "invalid_json" and "too long" in action.invalid_detail
