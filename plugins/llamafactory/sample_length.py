"""Exact token length of a ShareGPT sample as LLaMA-Factory will encode it, without loading any image pixels.

Used by `opensearch-vl sft check`. The text goes through the real registered template
(`get_template_and_fix_tokenizer` + `encode_multiturn`, so system/tool blocks and tool-call re-rendering are
the training ones), and every `<image>` is replaced by `<|vision_start|>` + n x `<|image_pad|>` +
`<|vision_end|>` with n from `opensearch_vl.sft.image_tokens` (LLaMA-Factory's resize, then the processor's
`smart_resize` with the processor config found next to the model).

Example:
    >>> counter = TemplateLengthCounter("runs/tiny-qwen3vl", "qwen3_vl_agentic_nothink")  # doctest: +SKIP
    >>> chat = [{"role": "user", "content": "<image>hi"}, {"role": "assistant", "content": "yo"}]
    >>> counter(chat, "", "", [(96, 96)])  # doctest: +SKIP
    30
"""

from __future__ import annotations

import json
from pathlib import Path

from opensearch_vl.sft.image_tokens import (
    QWEN2_VL_GEOMETRY,
    QWEN3_VL_GEOMETRY,
    VisionGeometry,
    image_pad_tokens,
)
from opensearch_vl.sft.observation_format import IMAGE_PLACEHOLDER

from opensearch_vl.errors import PrerequisiteError

__all__ = ["TemplateLengthCounter", "read_vision_geometry"]


def read_vision_geometry(model_dir: str | Path, default: VisionGeometry) -> VisionGeometry:
    """Read patch/merge/min/max pixels from a local checkpoint's processor config, else return `default`.

    Example:
        >>> read_vision_geometry("/nonexistent", QWEN3_VL_GEOMETRY) == QWEN3_VL_GEOMETRY
        True
    """
    model_dir = Path(model_dir)
    for name, key in (("preprocessor_config.json", None), ("processor_config.json", "image_processor")):
        path = model_dir / name
        if not path.exists():
            continue
        config = json.loads(path.read_text(encoding="utf-8"))
        config = config.get(key, {}) if key else config
        if not config:
            continue
        size = config.get("size") or {}
        return VisionGeometry(
            patch_size=config.get("patch_size", default.patch_size),
            merge_size=config.get("merge_size", default.merge_size),
            min_pixels=size.get("shortest_edge", config.get("min_pixels", default.min_pixels)),
            max_pixels=size.get("longest_edge", config.get("max_pixels", default.max_pixels)),
        )
    return default


class TemplateLengthCounter:
    """Callable `(messages, system, tools, image_sizes) -> int`, the `length_fn` of `data_check.check_row`."""

    def __init__(
        self,
        model_name_or_path: str,
        template: str,
        image_max_pixels: int = 768 * 768,
        image_min_pixels: int = 32 * 32,
    ) -> None:
        try:
            from llamafactory.data import get_template_and_fix_tokenizer
            from llamafactory.hparams import DataArguments
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise PrerequisiteError(
                "the length check needs LLaMA-Factory: pip install 'opensearch-vl[sft]'"
            ) from exc
        self._tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
        self._template = get_template_and_fix_tokenizer(self._tokenizer, DataArguments(template=template))
        default = QWEN2_VL_GEOMETRY if template.startswith("qwen2") else QWEN3_VL_GEOMETRY
        self.geometry = read_vision_geometry(model_name_or_path, default)
        self.image_max_pixels = image_max_pixels
        self.image_min_pixels = image_min_pixels
        plugin = self._template.mm_plugin
        self._start, self._pad, self._end = (
            plugin.vision_bos_token,
            plugin.image_token,
            plugin.vision_eos_token,
        )

    def image_tokens(self, width: int, height: int) -> int:
        """`<|image_pad|>` count for one image of this size."""
        return image_pad_tokens(width, height, self.image_max_pixels, self.image_min_pixels, self.geometry)

    def __call__(
        self, messages: list[dict[str, str]], system: str, tools: str, image_sizes: list[tuple[int, int]]
    ) -> int:
        sizes = iter(image_sizes)
        expanded = []
        for message in messages:
            parts = message["content"].split(IMAGE_PLACEHOLDER)
            text = parts[0]
            for part in parts[1:]:
                text += self._start + self._pad * self.image_tokens(*next(sizes)) + self._end + part
            expanded.append({"role": message["role"], "content": text})
        guard, self._template.cutoff_len = getattr(self._template, "cutoff_len", None), None
        try:
            pairs = self._template.encode_multiturn(self._tokenizer, expanded, system or None, tools or None)
        finally:
            if guard is not None:
                self._template.cutoff_len = guard
        return sum(len(s) + len(t) for s, t in pairs) + (1 if self._template.efficient_eos else 0)
