"""crop, sharpen, super_resolution, perspective_correct on real images, through the registered factories."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import available_tools, tool_factory
from PIL import Image, ImageDraw

from opensearch_vl.errors import ConfigError, PrerequisiteError, ToolError

EXPECTED_TOOLS = {
    "crop",
    "sharpen",
    "super_resolution",
    "perspective_correct",
    "layout_parsing",
    "text_search",
    "web_search",
    "image_search",
    "visit",
    "python_interpreter",
}


def make_tool(name, **config):
    return tool_factory(name)(ToolEnvConfig.model_validate(config), None)


def store_with(image: Image.Image) -> ImageStore:
    store = ImageStore()
    store.add(image)
    return store


def gradient(width=120, height=90) -> Image.Image:
    x = np.linspace(0, 255, width, dtype=np.uint8)
    rgb = np.stack([np.tile(x, (height, 1))] * 3, axis=-1)
    rgb[:, :, 1] = np.arange(height, dtype=np.uint8)[:, None]
    return Image.fromarray(rgb)


def test_all_ten_tools_registered_with_openai_schemas():
    assert EXPECTED_TOOLS <= set(available_tools())
    for name in EXPECTED_TOOLS:
        tool = make_tool(name, python={"mechanism": "rlimits"})
        schema = tool.spec.openai_schema()
        assert schema["type"] == "function" and schema["function"]["name"] == name
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
        assert tool.spec.description


async def test_crop_returns_exact_region():
    image = gradient()
    tool = make_tool("crop")
    result = await tool.run(
        {"image": "img_1", "x": 10, "y": 20, "width": 30, "height": 40}, store_with(image)
    )
    assert result.images[0].size == (30, 40)
    assert np.array_equal(np.asarray(result.images[0]), np.asarray(image)[20:60, 10:40])
    assert result.info == {"box": [10, 20, 30, 40], "clamped": False}


async def test_crop_clamps_to_image_and_says_so():
    tool = make_tool("crop")
    result = await tool.run(
        {"image": "img_1", "x": -10, "y": 80, "width": 50, "height": 50}, store_with(gradient())
    )
    assert result.images[0].size == (40, 10)
    assert "clamped" in result.text and result.info["clamped"] is True


@pytest.mark.parametrize(
    "box,needle",
    [
        ({"x": 0, "y": 0, "width": 0, "height": 10}, "positive"),
        ({"x": 0, "y": 0, "width": 10, "height": -3}, "positive"),
        ({"x": 500, "y": 0, "width": 10, "height": 10}, "outside"),
        ({"x": -50, "y": -50, "width": 20, "height": 20}, "outside"),
    ],
)
async def test_crop_rejects_empty_boxes(box, needle):
    with pytest.raises(ToolError) as info:
        await make_tool("crop").run({"image": "img_1", **box}, store_with(gradient()))
    assert info.value.category == "bad_arguments" and needle in info.value.message


async def test_unknown_image_reference_is_not_found():
    with pytest.raises(ToolError) as info:
        await make_tool("sharpen").run({"image": "img_7"}, store_with(gradient()))
    assert info.value.category == "not_found" and "img_1" in info.value.message


async def test_sharpen_is_unsharp_mask_and_deterministic():
    image = Image.fromarray(cv2.GaussianBlur(np.asarray(gradient(200, 150)), (0, 0), 2))
    tool = make_tool("sharpen")
    store = store_with(image)
    first = await tool.run({"image": "img_1", "amount": 1.5}, store)
    second = await tool.run({"image": "img_1", "amount": 1.5}, store)
    assert np.array_equal(np.asarray(first.images[0]), np.asarray(second.images[0]))
    rgb = np.asarray(image)
    expected = cv2.addWeighted(rgb, 2.5, cv2.GaussianBlur(rgb, (0, 0), 3), -1.5, 0)
    assert np.array_equal(np.asarray(first.images[0]), expected)
    assert "amount 1.5" in first.text


async def test_sharpen_increases_edge_energy():
    sheet = Image.new("RGB", (160, 120), "white")
    ImageDraw.Draw(sheet).rectangle([40, 30, 120, 90], fill="black")
    blurred = Image.fromarray(cv2.GaussianBlur(np.asarray(sheet), (0, 0), 2.5))
    result = await make_tool("sharpen").run({"image": "img_1"}, store_with(blurred))

    def edge_energy(img):
        return cv2.Laplacian(cv2.cvtColor(np.asarray(img), cv2.COLOR_RGB2GRAY), cv2.CV_64F).var()

    assert edge_energy(result.images[0]) > 2 * edge_energy(blurred)


@pytest.mark.parametrize("scale", [2, 3, 4])
async def test_super_resolution_classical_says_so(scale):
    result = await make_tool("super_resolution").run(
        {"image": "img_1", "scale": scale}, store_with(gradient(40, 30))
    )
    assert result.images[0].size == (40 * scale, 30 * scale)
    assert "classical Lanczos" in result.text and "no learned model configured" in result.text
    assert result.info["method"] == "classical"


async def test_super_resolution_refuses_oversized_output():
    tool = make_tool("super_resolution", super_resolution={"max_output_pixels": 10_000})
    with pytest.raises(ToolError, match="crop the region of interest first"):
        await tool.run({"image": "img_1", "scale": 4}, store_with(gradient(40, 30)))


def test_super_resolution_model_needs_contrib_or_existing_file(tmp_path):
    missing = str(tmp_path / "EDSR_x4.pb")
    with pytest.raises((PrerequisiteError, ConfigError)):
        make_tool("super_resolution", super_resolution={"model_path": missing})


@pytest.mark.skipif(not hasattr(cv2, "dnn_superres"), reason="needs opencv-contrib (the superres extra)")
def test_super_resolution_model_file_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        make_tool("super_resolution", super_resolution={"model_path": str(tmp_path / "none.pb")})


def photographed_page() -> tuple[Image.Image, tuple[int, int]]:
    """A white page with black lines, seen at an angle on a dark table."""
    page = Image.new("RGB", (300, 400), "white")
    draw = ImageDraw.Draw(page)
    for y in range(40, 360, 40):
        draw.rectangle([30, y, 270, y + 12], fill="black")
    src = np.float32([[0, 0], [299, 0], [299, 399], [0, 399]])
    dst = np.float32([[120, 60], [420, 100], [400, 520], [90, 470]])
    warped = cv2.warpPerspective(
        np.asarray(page), cv2.getPerspectiveTransform(src, dst), (520, 600), borderValue=(40, 40, 40)
    )
    return Image.fromarray(warped), (300, 400)


async def test_perspective_correct_recovers_the_page():
    photo, (w, h) = photographed_page()
    result = await make_tool("perspective_correct").run({"image": "img_1"}, store_with(photo))
    assert result.info["corrected"] is True
    out = result.images[0]
    assert abs(out.width / out.height - w / h) < 0.1
    gray = np.asarray(out.convert("L"), dtype=np.float64)
    assert gray[5:-5, 5:-5].mean() > 150  # mostly the white page, little of the dark table
    rows = (gray[:, out.width // 2] < 100).astype(int)
    assert np.count_nonzero(np.diff(rows) == 1) >= 7  # the eight printed lines run straight across


async def test_perspective_correct_without_quadrilateral_says_so_and_makes_no_image():
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (120, 160, 3), dtype=np.uint8))
    result = await make_tool("perspective_correct").run({"image": "img_1"}, store_with(noise))
    assert result.images == []
    assert result.info == {"corrected": False}
    assert "No document-like quadrilateral" in result.text and "unchanged" in result.text
