"""Check LLaMA-Factory ShareGPT datasets before training: every sample, every reason, nothing dropped
silently.

LLaMA-Factory skips malformed samples with a one-line warning (role order), crashes hours in (an `<image>`
count that does not match `images`, an undecodable file), or silently trains on broken tool calls. This module
reads every row of every dataset listed in a `dataset_info.json` and reports, with dataset name, row index and
reason (`Issue.kind` in brackets):

- role order (`role_order`): LLaMA-Factory's alternation (human/observation, then gpt/function_call, even
  count,
  ending with the assistant); an observation must answer a turn that called a tool;
- `<image>` count differs from the `images` list (`image_count`); an image file missing (`image_missing`) or
  not decodable (`image_undecodable`);
- the `tools` column is not a JSON list of function schemas (`tools_json`);
- a tool call that does not parse (`tool_call_parse`), names a tool not in the row's `tools` (`unknown_tool`),
  or whose arguments violate that tool's JSON schema (`tool_call_schema`); the number of tool responses in
  the following observation differs from the number of calls (`tool_response_count`);
- the encoded sample, images counted with the processor's own formula, is longer than `cutoff_len`
  (`too_long`; needs a `length_fn`, which `opensearch_vl.plugins.llamafactory.sample_length` provides).

Example:
    >>> row = {"conversations": [{"from": "human", "value": "hi"}], "images": []}
    >>> [i.kind for i in check_row(row, DatasetSpec(name="d", path=Path("d.json")), Path("."), 0).issues]
    ['role_order']
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opensearch_vl.sft.observation_format import IMAGE_PLACEHOLDER, PARALLEL_RESPONSE_SEPARATOR
from opensearch_vl.sft.qwen_chat_format import parse_function_call_turn, parse_tool_calls

from opensearch_vl.errors import DataError

logger = logging.getLogger(__name__)

__all__ = ["DatasetSpec", "Issue", "RowResult", "check_row", "iter_rows", "load_dataset_info", "to_messages"]

LengthFn = Callable[[list[dict[str, str]], str, str, list[tuple[int, int]]], int]
"""(messages with LLaMA-Factory roles, system, tools JSON, image (width, height) in order) -> token count."""

_DEFAULT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "observation_tag": "observation",
    "function_tag": "function_call",
    "system_tag": "system",
}
_DEFAULT_COLUMNS = {"messages": "conversations", "images": "images", "system": "system", "tools": "tools"}


@dataclass(frozen=True)
class DatasetSpec:
    """One `dataset_info.json` entry (ShareGPT formatting), with its columns and tags resolved."""

    name: str
    path: Path
    columns: dict[str, str] = field(default_factory=lambda: dict(_DEFAULT_COLUMNS))
    tags: dict[str, str] = field(default_factory=lambda: dict(_DEFAULT_TAGS))
    entry: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Issue:
    """One problem with one sample."""

    dataset: str
    index: int
    kind: str
    reason: str

    def __str__(self) -> str:
        return f"{self.dataset}[{self.index}] {self.kind}: {self.reason}"


@dataclass(frozen=True)
class RowResult:
    """What checking one row found; `length` is None when not measured."""

    issues: list[Issue]
    image_sizes: list[tuple[int, int]]
    length: int | None = None


def load_dataset_info(info_path: str | Path, names: list[str] | None = None) -> list[DatasetSpec]:
    """Read `dataset_info.json` and return the ShareGPT entries (all, or those in `names`), paths resolved.

    Example:
        >>> specs = load_dataset_info("recipes/data/dataset_info.json", ["opensearch_vl_sample"])
    """
    info_path = Path(info_path)
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(
            f"cannot read dataset info {info_path}: {exc}. Fix: pass LLaMA-Factory's dataset_info.json."
        ) from exc
    unknown = sorted(set(names or []) - set(info))
    if unknown:
        raise DataError(f"datasets {unknown} are not in {info_path}; it lists {sorted(info)}.")
    specs = []
    for name, entry in info.items():
        if names and name not in names:
            continue
        if entry.get("formatting", "alpaca") != "sharegpt" or "file_name" not in entry:
            logger.warning("skipping %s: only local ShareGPT files are checked", name)
            continue
        specs.append(
            DatasetSpec(
                name=name,
                path=info_path.parent / entry["file_name"],
                columns={**_DEFAULT_COLUMNS, **entry.get("columns", {})},
                tags={**_DEFAULT_TAGS, **entry.get("tags", {})},
                entry=entry,
            )
        )
    return specs


def iter_rows(spec: DatasetSpec) -> Iterator[dict[str, Any]]:
    """Yield the rows of a `.json` (list) or `.jsonl` dataset file.

    Example:
        >>> spec = DatasetSpec("s", Path("recipes/data/sample/trajectories.json"))
        >>> next(iter_rows(spec))["system"][:3]
        'You'
    """
    if not spec.path.exists():
        raise DataError(
            f"dataset {spec.name}: file {spec.path} does not exist. Fix: download it or fix file_name."
        )
    if spec.path.suffix == ".jsonl":
        with spec.path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)
        return
    data = json.loads(spec.path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise DataError(
            f"dataset {spec.name}: {spec.path} must hold a JSON list of rows, got {type(data).__name__}."
        )
    yield from data


def to_messages(row: dict[str, Any], spec: DatasetSpec) -> tuple[str, list[dict[str, str]]]:
    """Return (system, messages) with LLaMA-Factory's role names (user/assistant/observation/function).

    Example:
        >>> row = {"conversations": [{"from": "human", "value": "q"}], "system": "s"}
        >>> to_messages(row, DatasetSpec("d", Path("x")))
        ('s', [{'role': 'user', 'content': 'q'}])
    """
    tags = spec.tags
    roles = {
        tags["user_tag"]: "user",
        tags["assistant_tag"]: "assistant",
        tags["observation_tag"]: "observation",
        tags["function_tag"]: "function",
        tags["system_tag"]: "system",
    }
    raw = row.get(spec.columns["messages"]) or []
    system = row.get(spec.columns["system"]) or ""
    messages = [
        {
            "role": roles.get(m.get(tags["role_tag"]), m.get(tags["role_tag"])),
            "content": m.get(tags["content_tag"], ""),
        }
        for m in raw
    ]
    if messages and messages[0]["role"] == "system":
        system = messages[0]["content"]
        messages = messages[1:]
    return system, messages


def _tool_schemas(tools_value: Any) -> tuple[dict[str, dict], str | None]:
    if tools_value in (None, ""):
        return {}, None
    if not isinstance(tools_value, str):
        return (
            {},
            "the tools column must be a JSON string (LLaMA-Factory json.loads it), got "
            f"{type(tools_value).__name__}",
        )
    try:
        tools = json.loads(tools_value)
    except json.JSONDecodeError as exc:
        return {}, f"tools is not valid JSON: {exc.msg} at char {exc.pos}"
    if not isinstance(tools, list):
        return {}, f"tools must be a JSON list of function schemas, got {type(tools).__name__}"
    schemas = {}
    for k, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return {}, f"tools[{k}] has no function name"
        schemas[function["name"]] = function.get("parameters") or {"type": "object"}
    return schemas, None


def _schema_errors(schema: dict, arguments: dict) -> list[str]:
    try:
        import jsonschema
    except ImportError as exc:
        from opensearch_vl.errors import PrerequisiteError

        raise PrerequisiteError(
            "tool-call schema checks need jsonschema: pip install 'opensearch-vl[sft]'"
        ) from exc

    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<arguments>'}: {e.message}"
        for e in validator_cls(schema).iter_errors(arguments)
    ]


def _image_sizes(paths: list[Any], media_dir: Path, add: Callable[[str, str], None]) -> list[tuple[int, int]]:
    from PIL import Image

    sizes = []
    for k, item in enumerate(paths):
        if not isinstance(item, str):
            add("image_undecodable", f"images[{k}] is a {type(item).__name__}, expected a file path")
            continue
        path = Path(item) if Path(item).is_absolute() else media_dir / item
        if not path.exists():
            add("image_missing", f"images[{k}] {item!r} not found (looked at {path})")
            continue
        try:
            with Image.open(path) as image:
                image.load()
                sizes.append(image.size)
        except Exception as exc:  # PIL raises many types for broken files
            add("image_undecodable", f"images[{k}] {item!r} cannot be decoded: {exc}")
    return sizes


def check_row(
    row: dict[str, Any],
    spec: DatasetSpec,
    media_dir: Path,
    index: int,
    length_fn: LengthFn | None = None,
    cutoff_len: int | None = None,
) -> RowResult:
    """Check one ShareGPT row; see the module docstring for the issue kinds.

    Example:
        >>> ok = {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
        >>> check_row(ok, DatasetSpec("d", Path("d.json")), Path("."), 0).issues
        []
    """
    issues: list[Issue] = []

    def add(kind: str, reason: str) -> None:
        issues.append(Issue(spec.name, index, kind, reason))

    system, messages = to_messages(row, spec)
    schemas, tools_error = _tool_schemas(row.get(spec.columns["tools"]))
    if tools_error:
        add("tools_json", tools_error)
    if not messages or len(messages) % 2:
        add(
            "role_order",
            f"{len(messages)} turns; LLaMA-Factory needs an even number, ending with the assistant",
        )
    pending_calls: int | None = None
    for k, message in enumerate(messages):
        role, content = message["role"], message["content"]
        expected = ("user", "observation") if k % 2 == 0 else ("assistant", "function")
        if role not in expected:
            add("role_order", f"turn {k} is {role!r}; expected one of {expected}")
        if not isinstance(content, str):
            add("role_order", f"turn {k} value is a {type(content).__name__}, not a string")
            continue
        if role == "observation":
            if k == 0 or not pending_calls:
                add("role_order", f"turn {k} is a tool response but the previous turn called no tool")
            elif content.count(PARALLEL_RESPONSE_SEPARATOR) + 1 != pending_calls:
                add(
                    "tool_response_count",
                    f"turn {k} holds {content.count(PARALLEL_RESPONSE_SEPARATOR) + 1} tool responses for "
                    f"{pending_calls} calls (join parallel responses with {PARALLEL_RESPONSE_SEPARATOR!r})",
                )
        if role in ("assistant", "function"):
            calls = parse_function_call_turn(content) if role == "function" else parse_tool_calls(content)
            for call in calls:
                if call.error:
                    add("tool_call_parse", f"turn {k}: {call.error}: {call.raw[:120]!r}")
                elif not tools_error and call.name not in schemas:
                    add(
                        "unknown_tool", f"turn {k} calls {call.name!r}; the row's tools are {sorted(schemas)}"
                    )
                elif not tools_error:
                    for error in _schema_errors(schemas[call.name], call.arguments):
                        add("tool_call_schema", f"turn {k} {call.name}: {error}")
            pending_calls = len(calls)
    image_paths = row.get(spec.columns["images"]) or []
    n_placeholders = sum(
        m["content"].count(IMAGE_PLACEHOLDER) for m in messages if isinstance(m["content"], str)
    )
    n_placeholders += system.count(IMAGE_PLACEHOLDER)
    if n_placeholders != len(image_paths):
        add("image_count", f"{n_placeholders} <image> placeholders but {len(image_paths)} images")
    sizes = _image_sizes(image_paths, media_dir, add)
    length = None
    if length_fn is not None and not issues:
        length = length_fn(messages, system, row.get(spec.columns["tools"]) or "", sizes)
        if cutoff_len is not None and length > cutoff_len:
            add("too_long", f"{length} tokens (images counted) > cutoff_len {cutoff_len}")
    return RowResult(issues=issues, image_sizes=sizes, length=length)
