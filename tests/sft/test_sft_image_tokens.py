"""The image-token formula used by `sft check` equals what LLaMA-Factory + the image processor produce."""

from __future__ import annotations

import pytest
from opensearch_vl.sft.image_tokens import (
    QWEN2_VL_GEOMETRY,
    QWEN3_VL_GEOMETRY,
    image_pad_tokens,
    smart_resize,
)
from sft_fixtures import make_image

SIZES = [
    (96, 96),
    (48, 48),
    (1024, 768),
    (768, 1024),
    (2000, 300),
    (300, 2000),
    (31, 700),
    (513, 511),
    (4000, 3000),
    (20, 20),
]


@pytest.mark.parametrize("geometry", [QWEN3_VL_GEOMETRY, QWEN2_VL_GEOMETRY], ids=["qwen3-vl", "qwen2.5-vl"])
@pytest.mark.parametrize("image_max_pixels", [262144, 65536])
def test_formula_matches_llamafactory_and_the_image_processor(geometry, image_max_pixels):
    from llamafactory.data.mm_plugin import get_mm_plugin
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    processor = Qwen2VLImageProcessor(
        patch_size=geometry.patch_size,
        merge_size=geometry.merge_size,
        temporal_patch_size=2,
        size={"shortest_edge": geometry.min_pixels, "longest_edge": geometry.max_pixels},
    )
    plugin = get_mm_plugin(name="qwen3_vl", image_token="<|image_pad|>", video_token="<|video_pad|>")
    for width, height in SIZES:
        images = plugin._regularize_images(
            [make_image(width, height)], image_max_pixels=image_max_pixels, image_min_pixels=32 * 32
        )["images"]
        grid = processor(images, return_tensors="pt")["image_grid_thw"][0]
        expected = int(grid.prod()) // geometry.merge_size**2
        assert image_pad_tokens(width, height, image_max_pixels, 32 * 32, geometry) == expected, (
            width,
            height,
        )


def test_smart_resize_rejects_extreme_aspect_ratios():
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 5000, 32, 65536, 16777216)
