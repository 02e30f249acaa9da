"""layout_parsing: local RapidOCR on a real image, and the remote PP-StructureV3 API on the fixture server."""

from __future__ import annotations

import pytest
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory
from PIL import Image, ImageDraw, ImageFont

from opensearch_vl.errors import ConfigError, ToolError


def text_image() -> Image.Image:
    image = Image.new("RGB", (420, 130), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=42)
    draw.text((12, 10), "HELLO 42", fill="black", font=font)
    draw.text((12, 70), "OPEN DAILY", fill="black", font=font)
    return image


def store_with(image):
    store = ImageStore()
    store.add(image)
    return store


async def test_local_ocr_reads_lines_in_order():
    pytest.importorskip("rapidocr_onnxruntime", reason="the ocr extra is not installed")
    tool = tool_factory("layout_parsing")(ToolEnvConfig(), None)
    result = await tool.run({"image": "img_1"}, store_with(text_image()))
    assert result.info == {"backend": "rapidocr", "blocks": 2}
    lines = result.text.split("ALL RECOGNIZED TEXT:\n", 1)[1].splitlines()
    assert lines[0].replace(" ", "") == "HELLO42"
    assert lines[1].replace(" ", "") == "OPENDAILY"
    assert "[Text Block 1]" in result.text and "2 text blocks detected" in result.text


def remote_config(http_server, fast_http, **layout):
    return ToolEnvConfig.model_validate(
        {
            "http": fast_http,
            "layout": {"backend": "remote", "api_url": f"{http_server.base_url}/layout-parsing", **layout},
        }
    )


async def test_remote_layout_parsing_speaks_pp_structure(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("LAYOUT_PARSING_TOKEN", "tok")
    tool = tool_factory("layout_parsing")(remote_config(http_server, fast_http), None)
    store = store_with(text_image())
    result = await tool.run({"image": "img_1", "use_chart_recognition": True}, store)
    sent = http_server.last("/layout-parsing")
    import json

    body = json.loads(sent.body)
    assert body["fileType"] == 1 and body["useChartRecognition"] is True and body["useDocUnwarping"] is False
    assert sent.headers["Authorization"] == "token tok"
    # blocks come back in block_order, the image block (no text) is dropped
    text_part = result.text.split("ALL RECOGNIZED TEXT:\n", 1)[1]
    assert text_part.splitlines()[:3] == [
        "Quarterly report",
        "Second paragraph.",
        f"bytes={len(store.record('img_1').png)}",
    ]
    assert result.info == {"backend": "pp_structure_v3", "blocks": 3}


async def test_remote_layout_parsing_reads_url_from_environment(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("LAYOUT_PARSING_API_URL", f"{http_server.base_url}/layout-parsing")
    monkeypatch.setenv("LAYOUT_PARSING_TOKEN", "wrong")
    config = ToolEnvConfig.model_validate({"http": fast_http, "layout": {"backend": "remote"}})
    tool = tool_factory("layout_parsing")(config, None)
    with pytest.raises(ToolError) as info:
        await tool.run({}, store_with(text_image()))
    assert info.value.category == "upstream_http" and "403" in info.value.message
    assert "LAYOUT_PARSING_TOKEN" in info.value.message


def test_remote_layout_without_endpoint_is_a_config_error():
    with pytest.raises(ConfigError, match="LAYOUT_PARSING_API_URL"):
        tool_factory("layout_parsing")(ToolEnvConfig.model_validate({"layout": {"backend": "remote"}}), None)
