"""Our LLaMA-Factory chat templates for agentic, multimodal tool-use SFT, and the guard that refuses
over-length samples.

Registered names (see `TEMPLATE_NAMES`):

- `qwen3_vl_agentic_nothink`: Qwen3-VL **Instruct** checkpoints. LLaMA-Factory's `qwen3_vl_nothink` plus the
  empty-system fix: with tools and no system prompt, the upstream template renders
  `<|im_start|>system\\n\\n\\n# Tools…` because its tool prompt starts with `\\n\\n` and is appended to the
  (empty) system text (`llamafactory/data/template.py`, `Template._encode`); Qwen3-VL's own chat template
  renders `<|im_start|>system\\n# Tools…`. Our system formatter drops that leading `\\n\\n` when the system
  text is empty.
- `qwen3_vl_agentic`: Qwen3-VL **Thinking** checkpoints (upstream `qwen3_vl`, a `ReasoningTemplate`: an
  assistant turn without `<think>` gets an empty thought) plus the same fix.
- `qwen2_vl_agentic`: Qwen2-VL / Qwen2.5-VL (upstream `qwen2_vl`, which keeps the default system prompt
  "You are a helpful assistant." exactly as their chat template does) plus the same fix.

All of them render tool calls as `<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>` (one block per
call, parallel calls joined by `\\n`), tool results as a user turn `<tool_response>\\n…\\n</tool_response>`
(`opensearch_vl.sft.observation_format`), and expand each `<image>` in place, in any turn, in order.

The length guard: LLaMA-Factory truncates an over-long sample at `cutoff_len` (`data/processor/supervised.py`,
`infer_seqlen`). A cut through an image's `<|image_pad|>` run crashes the forward pass much later
("Image features and image tokens do not match"), and any cut loses the final answer. Our templates
therefore raise `SampleTooLongError` from `encode_multiturn` when the encoded sample (images expanded) is
longer than `cutoff_len`. `cutoff_len` reaches the template through a thin wrapper around upstream
`get_template_and_fix_tokenizer(tokenizer, data_args)` (called by every SFT workflow right after the tokenizer
is loaded, `train/sft/workflow.py`), installed on the upstream module before `llamafactory.data` re-exports
it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from opensearch_vl.errors import DataError, PrerequisiteError

logger = logging.getLogger(__name__)

__all__ = ["SampleTooLongError", "TEMPLATE_NAMES", "register", "registered_names"]

TEMPLATE_NAMES = ("qwen3_vl_agentic_nothink", "qwen3_vl_agentic", "qwen2_vl_agentic")
"""Template names this plugin registers in LLaMA-Factory's `TEMPLATES`."""

_TOOLS_BLOCK_START = "\n\n# Tools\n\n"
_REGISTERED: list[str] = []  # registry of names registered in this process


class SampleTooLongError(DataError):
    """A training sample is longer than `cutoff_len` (images counted); it is refused, never truncated."""


def registered_names() -> tuple[str, ...]:
    """Names this process has registered so far (empty until LLaMA-Factory's template module was imported).

    Example:
        >>> isinstance(registered_names(), tuple)
        True
    """
    return tuple(_REGISTERED)


_VISION_RUN = re.compile(r"<\|vision_start\|>.*?<\|vision_end\|>", re.DOTALL)


def _describe(messages: list[dict[str, str]]) -> str:
    first = next((m["content"] for m in messages if m.get("role") == "user"), "")
    first = " ".join(_VISION_RUN.sub("<image>", first).split())
    return repr(first[:80] + ("…" if len(first) > 80 else ""))


def _make_classes(template_module: ModuleType, formatter_module: ModuleType) -> dict[str, type]:
    Template = template_module.Template
    ReasoningTemplate = template_module.ReasoningTemplate

    @dataclass
    class AgenticSystemFormatter(formatter_module.StringFormatter):
        """System slot that renders tools without a system prompt as Qwen's chat template does."""

        def apply(self, **kwargs):
            content = kwargs.get("content", "")
            if content.startswith(_TOOLS_BLOCK_START):
                kwargs["content"] = content[2:]
            return super().apply(**kwargs)

    class LengthGuard:
        """Mixin: refuse samples longer than `cutoff_len` instead of letting upstream truncate them."""

        cutoff_len: int | None = None

        def encode_multiturn(
            self, tokenizer, messages, system=None, tools=None, discarding_history_cot=False
        ):
            pairs = super().encode_multiturn(tokenizer, messages, system, tools, discarding_history_cot)
            if self.cutoff_len is not None:
                total = sum(len(s) + len(t) for s, t in pairs) + (1 if self.efficient_eos else 0)
                if total > self.cutoff_len:
                    raise SampleTooLongError(
                        f"A training sample is {total} tokens long (images expanded) but cutoff_len is "
                        f"{self.cutoff_len}; first user message: {_describe(messages)}. Truncating it would "
                        "cut "
                        "through an image ('Image features and image tokens do not match') or drop the "
                        "answer, "
                        "so it is refused. Fix: run `opensearch-vl sft check <dataset_info.json> --model "
                        "<model> --template <name> --cutoff-len N --write-clean DIR` and train on the "
                        "cleaned "
                        "copy, or raise cutoff_len / lower image_max_pixels."
                    )
            return pairs

    class AgenticTemplate(LengthGuard, Template):
        pass

    class AgenticReasoningTemplate(LengthGuard, ReasoningTemplate):
        pass

    return {
        "system_formatter": AgenticSystemFormatter,
        "template": AgenticTemplate,
        "reasoning_template": AgenticReasoningTemplate,
        "guard": LengthGuard,
    }


def _wrap_template_lookup(template_module: ModuleType, guard: type) -> None:
    original = template_module.get_template_and_fix_tokenizer
    if getattr(original, "_opensearch_vl", False):
        return

    def get_template_and_fix_tokenizer(tokenizer, data_args):
        template = original(tokenizer, data_args)
        if isinstance(template, guard):
            template.cutoff_len = data_args.cutoff_len
        return template

    get_template_and_fix_tokenizer.__doc__ = original.__doc__
    get_template_and_fix_tokenizer.__wrapped__ = original
    get_template_and_fix_tokenizer._opensearch_vl = True
    template_module.get_template_and_fix_tokenizer = get_template_and_fix_tokenizer
    # `llamafactory.data` re-exports the function by name; when registration happens after that (the module
    # was imported before the hook was installed), patch the re-export too.
    import sys

    package = sys.modules.get("llamafactory.data")
    if package is not None and hasattr(package, "get_template_and_fix_tokenizer"):
        package.get_template_and_fix_tokenizer = get_template_and_fix_tokenizer


def _qwen_slots(formatter_module: ModuleType, system_formatter: type) -> dict[str, Any]:
    StringFormatter = formatter_module.StringFormatter
    FunctionFormatter = formatter_module.FunctionFormatter
    ToolFormatter = formatter_module.ToolFormatter
    return dict(
        format_user=StringFormatter(
            slots=["<|im_start|>user\n{{content}}<|im_end|>\n<|im_start|>assistant\n"]
        ),
        format_assistant=StringFormatter(slots=["{{content}}<|im_end|>\n"]),
        format_system=system_formatter(slots=["<|im_start|>system\n{{content}}<|im_end|>\n"]),
        format_function=FunctionFormatter(slots=["{{content}}<|im_end|>\n"], tool_format="qwen"),
        format_observation=StringFormatter(
            slots=[
                "<|im_start|>user\n<tool_response>\n{{content}}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
            ]
        ),
        format_tools=ToolFormatter(tool_format="qwen"),
        stop_words=["<|im_end|>"],
        replace_eos=True,
    )


def register(template_module: ModuleType | None = None) -> tuple[str, ...]:
    """Register our templates in LLaMA-Factory's `TEMPLATES` (idempotent) and install the length guard.

    Called automatically by the import hook; call it yourself only in a process without the `.pth` hook.

    Example:
        >>> from opensearch_vl.plugins.llamafactory.templates import register
        >>> "qwen3_vl_agentic_nothink" in register()  # doctest: +SKIP
        True
    """
    if template_module is None:
        try:
            import llamafactory.data.template as template_module  # noqa: F811
        except ImportError as exc:
            raise PrerequisiteError(
                "LLaMA-Factory is not importable, so the opensearch-vl templates cannot be registered. "
                "Fix: pip install 'opensearch-vl[sft]' (installs llamafactory==0.9.5)."
            ) from exc
    import llamafactory.data.formatter as formatter_module
    import llamafactory.data.mm_plugin as mm_plugin_module

    classes = _make_classes(template_module, formatter_module)
    _wrap_template_lookup(template_module, classes["guard"])
    get_mm_plugin = mm_plugin_module.get_mm_plugin
    tokens = dict(image_token="<|image_pad|>", video_token="<|video_pad|>")
    specs = {
        "qwen3_vl_agentic_nothink": dict(
            mm_plugin=get_mm_plugin(name="qwen3_vl", **tokens), template_class=classes["template"]
        ),
        "qwen3_vl_agentic": dict(
            mm_plugin=get_mm_plugin(name="qwen3_vl", **tokens), template_class=classes["reasoning_template"]
        ),
        "qwen2_vl_agentic": dict(
            mm_plugin=get_mm_plugin(name="qwen2_vl", **tokens),
            template_class=classes["template"],
            default_system="You are a helpful assistant.",
        ),
    }
    for name, extra in specs.items():
        if name in template_module.TEMPLATES:
            continue
        template_module.register_template(
            name=name, **_qwen_slots(formatter_module, classes["system_formatter"]), **extra
        )
        if name not in _REGISTERED:
            _REGISTERED.append(name)
    logger.debug("registered LLaMA-Factory templates %s", TEMPLATE_NAMES)
    return TEMPLATE_NAMES
