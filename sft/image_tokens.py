"""How many tokens an image costs in Qwen2-VL / Qwen2.5-VL / Qwen3-VL training through LLaMA-Factory.

Two resizes happen, in this order, and both are reproduced here:

1. LLaMA-Factory's `_preprocess_image` (`data/mm_plugin.py`): if `w*h > image_max_pixels`, scale both sides by
   `sqrt(image_max_pixels / (w*h))` and truncate to int; likewise up to `image_min_pixels`; then the Qwen
   plugin
   raises any side below 28 to 28 and clamps aspect ratios beyond 200.
2. The image processor's `smart_resize` (transformers `qwen2_vl/image_processing_qwen2_vl.py`): round both
  sides to
   multiples of `patch_size * merge_size` within the processor's own `[min_pixels, max_pixels]`.

The image then yields `(h/patch) * (w/patch) / merge**2` `<|image_pad|>` tokens, plus `<|vision_start|>` and
`<|vision_end|>`. Qwen3-VL: patch 16, merge 2 (32-pixel grid); Qwen2/2.5-VL: patch 14, merge 2 (28-pixel
grid).

Example:
    >>> image_pad_tokens(1024, 768, image_max_pixels=262144)
    252
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["QWEN3_VL_GEOMETRY", "QWEN2_VL_GEOMETRY", "VisionGeometry", "image_pad_tokens", "smart_resize"]


@dataclass(frozen=True)
class VisionGeometry:
    """A Qwen-VL image processor's resize parameters."""

    patch_size: int = 16
    merge_size: int = 2
    min_pixels: int = 65536
    max_pixels: int = 16777216


QWEN3_VL_GEOMETRY = VisionGeometry(patch_size=16, merge_size=2, min_pixels=65536, max_pixels=16777216)
"""Qwen3-VL's preprocessor config (`size.shortest_edge` 65,536 and `size.longest_edge` 16,777,216 pixels)."""
QWEN2_VL_GEOMETRY = VisionGeometry(patch_size=14, merge_size=2, min_pixels=3136, max_pixels=12845056)
"""Qwen2-VL / Qwen2.5-VL's preprocessor config."""


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen-VL's resize to a multiple of `factor` inside `[min_pixels, max_pixels]`; returns (height, width).

    Example:
        >>> smart_resize(100, 100, factor=32, min_pixels=65536, max_pixels=16777216)
        (256, 256)
    """
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"aspect ratio {max(height, width) / min(height, width):.0f} is above Qwen-VL's limit 200"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _llamafactory_preprocess(width: int, height: int, max_pixels: int, min_pixels: int) -> tuple[int, int]:
    if width * height > max_pixels:
        factor = math.sqrt(max_pixels / (width * height))
        width, height = int(width * factor), int(height * factor)
    if width * height < min_pixels:
        factor = math.sqrt(min_pixels / (width * height))
        width, height = int(width * factor), int(height * factor)
    if min(width, height) < 28:
        width, height = max(width, 28), max(height, 28)
    if width / height > 200:
        width, height = height * 180, height
    if height / width > 200:
        width, height = width, width * 180
    return width, height


def image_pad_tokens(
    width: int,
    height: int,
    image_max_pixels: int = 768 * 768,
    image_min_pixels: int = 32 * 32,
    geometry: VisionGeometry = QWEN3_VL_GEOMETRY,
) -> int:
    """Number of `<|image_pad|>` tokens for a `width` x `height` image (add 2 for the vision start/end
    tokens).

    `image_max_pixels` / `image_min_pixels` are LLaMA-Factory's YAML keys (defaults 768*768 and 32*32).

    Example:
        >>> image_pad_tokens(96, 96, geometry=VisionGeometry(min_pixels=4096))
        9
    """
    w, h = _llamafactory_preprocess(width, height, image_max_pixels, image_min_pixels)
    factor = geometry.patch_size * geometry.merge_size
    h_bar, w_bar = smart_resize(h, w, factor, geometry.min_pixels, geometry.max_pixels)
    return (h_bar // geometry.patch_size) * (w_bar // geometry.patch_size) // (geometry.merge_size**2)
